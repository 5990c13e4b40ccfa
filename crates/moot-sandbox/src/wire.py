# moot's grader: the values that cross between a program's process and its tests' process.
#
# A value crosses as the text of a Python literal (ascii(), so one line of ASCII) that the
# other side reads with ast.literal_eval, which builds plain values and runs nothing. Scalars
# that literals keep exactly cross as themselves (None, bool, str, bytes, small ints, finite
# floats); everything else is a tagged tuple, so that bool stays apart from int and a tuple
# from a list:
#   ("i", hex)   an int of 64 bits or more (hex has no digit limit, decimal has 4,300)
#   ("f", text)  inf, -inf or nan
#   ("c", re, im)  a complex number
#   ("l", [...]) list   ("t", [...]) tuple   ("s", [...]) set   ("z", [...]) frozenset
#   ("d", [(k, v), ...]) dict, keys of any type that crosses   ("b", bytes) bytearray
# Objects, callables, generators and anything else do not cross: encode raises Unencodable,
# and the grader calls that test "unsupported" rather than guessing.
import math as _math
import os as _os
import sys as _sys

_SMALL_INT = 1 << 63
_MAX_DEPTH = 200
_SPECIAL_FLOATS = ("inf", "-inf", "nan")


class Unencodable(Exception):
    """A value that cannot cross as a literal."""


class Malformed(Exception):
    """Text that is not a value this encoding writes."""


def _kind(value):
    t = type(value)
    name = getattr(t, "__qualname__", "?")
    module = getattr(t, "__module__", "")
    if module and module != "builtins":
        name = "%s.%s" % (module, name)
    return name


def _plain(value):
    """The plain builtin value that a subclass or a numpy scalar/array stands for, or None."""
    for base in (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset,
                 bytearray):
        if isinstance(value, base):
            if base is str:
                return str.__getitem__(value, slice(None))
            if base is dict:
                return dict(dict.items(value))
            return base(value)
    module = getattr(type(value), "__module__", "") or ""
    if module.split(".")[0] == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    return None


def encode(value, lenient=False, depth=0):
    """The literal tree of `value`. `lenient` also takes subclasses of the builtin types (a
    namedtuple, an OrderedDict, an IntEnum) and numpy values as the plain values they hold."""
    if depth > _MAX_DEPTH:
        raise Unencodable("a value nested more than %d levels deep" % _MAX_DEPTH)
    t = type(value)
    if value is None or t is bool or t is str or t is bytes:
        return value
    if t is int:
        return value if -_SMALL_INT <= value < _SMALL_INT else ("i", format(value, "x"))
    if t is float:
        return value if _math.isfinite(value) else ("f", repr(value))
    d = depth + 1
    if t is complex:
        return ("c", encode(value.real, False, d), encode(value.imag, False, d))
    if t is list:
        return ("l", [encode(v, lenient, d) for v in value])
    if t is tuple:
        return ("t", [encode(v, lenient, d) for v in value])
    if t is dict:
        return ("d", [(encode(k, lenient, d), encode(v, lenient, d)) for k, v in value.items()])
    if t is set:
        return ("s", [encode(v, lenient, d) for v in value])
    if t is frozenset:
        return ("z", [encode(v, lenient, d) for v in value])
    if t is bytearray:
        return ("b", bytes(value))
    if lenient:
        plain = _plain(value)
        if plain is not None and type(plain) is not t:
            return encode(plain, lenient, d)
    raise Unencodable("a %s, which does not cross as a plain value" % _kind(value))


def text(value, lenient=False):
    """`value` as one line of literal text."""
    return ascii(encode(value, lenient))


def _items(node):
    if type(node) is not tuple or len(node) != 2 or type(node[1]) is not list:
        raise Malformed("a container without its items")
    return node[1]


def decode(node, depth=0):
    """The value a literal tree stands for. Strict: anything this encoding does not write is
    Malformed, so what comes back is always made of plain builtin values."""
    if depth > _MAX_DEPTH + 1:
        raise Malformed("nested too deep")
    t = type(node)
    if node is None or t is bool or t is str or t is bytes or t is int:
        return node
    if t is float:
        return node
    if t is not tuple or not node or type(node[0]) is not str:
        raise Malformed("a %s where a value was expected" % t.__name__)
    tag = node[0]
    d = depth + 1
    if tag == "i" and len(node) == 2 and type(node[1]) is str:
        try:
            return int(node[1], 16)
        except ValueError:
            raise Malformed("a bad integer") from None
    if tag == "f" and len(node) == 2 and node[1] in _SPECIAL_FLOATS:
        return float(node[1])
    if tag == "c" and len(node) == 3:
        re, im = decode(node[1], d), decode(node[2], d)
        if type(re) is not float or type(im) is not float:
            raise Malformed("a bad complex number")
        return complex(re, im)
    if tag == "b" and len(node) == 2 and type(node[1]) is bytes:
        return bytearray(node[1])
    if tag == "l":
        return [decode(v, d) for v in _items(node)]
    if tag == "t":
        return tuple(decode(v, d) for v in _items(node))
    try:
        if tag == "s":
            return {decode(v, d) for v in _items(node)}
        if tag == "z":
            return frozenset(decode(v, d) for v in _items(node))
        if tag == "d":
            out = {}
            for pair in _items(node):
                if type(pair) is not tuple or len(pair) != 2:
                    raise Malformed("a dict entry that is not a pair")
                out[decode(pair[0], d)] = decode(pair[1], d)
            return out
    except TypeError:
        raise Malformed("an unhashable key") from None
    raise Malformed("an unknown tag %r" % (tag,))


def read(line):
    """The literal tree in one line of text (bytes)."""
    import ast

    try:
        return ast.literal_eval(line.decode("ascii"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError,
            UnicodeDecodeError):
        raise Malformed("not a literal") from None


def _one_line(text, limit=2000):
    """`text` on one line, cut at `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _take_channel():
    """The channel to moot (this process's original stdin and stdout, as a reader and a
    descriptor), with stdin then reading nothing and stdout going to stderr, so that nothing
    this process prints can be taken for a message."""
    reader = _os.fdopen(_os.dup(0), "rb")
    writer = _os.dup(1)
    null = _os.open(_os.devnull, _os.O_RDWR)
    _os.dup2(null, 0)
    _os.dup2(2, 1)
    _sys.stdin = open(_os.devnull)
    return reader, writer


def _write_all(fd, data):
    while data:
        data = data[_os.write(fd, data):]
