
# moot's grader, the program's side (runs inside its own bubblewrap sandbox, after wire.py).
#
# This process belongs to the program: nothing here is trusted, and nothing here decides a
# verdict. It compiles and runs the program as the module "solution" (so an
# `if __name__ == "__main__":` block does not run), says which names it defined, then answers
# calls from the tests' process: one request a line in, one reply a line out, values as
# literals (wire.py). The program may replace any of this; all it can then send are values,
# which the tests judge.
#
# stdin: a line with the program's length in bytes, the program, then requests
#   ("call", name, args, kwargs) as literal trees.
# stdout (the channel; the program's own prints go to stderr):
#   syntax-error MESSAGE | import-error MESSAGE | ready NAMES | reply REPLY
# NAMES: [(name, "call" | "module" | "value" | "other", extra)]
# REPLY: ("ok", value, [(argument, new value)]) | ("raise", type, builtin, args, message)
#        | ("exit", type, message) | ("unsupported", why)
import builtins as _builtins
import os as _os
import sys as _sys
import types as _types

_MAX_VALUE_NAME = 1 << 16


def _describe(e):
    try:
        message = str(e)
    except BaseException:
        message = "?"
    name = type(e).__name__
    return _one_line("%s: %s" % (name, message) if message else name)


def _serve():
    requests, channel = _take_channel()

    def send(kind, payload):
        _write_all(channel, (kind + " " + payload + "\n").encode("ascii", "backslashreplace"))

    size = int(requests.readline())
    source = requests.read(size).decode("utf-8", "replace")
    try:
        code = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        where = " (line %d)" % line if line else ""
        message = getattr(e, "msg", None) or str(e)
        send("syntax-error", _one_line("%s: %s%s" % (type(e).__name__, message, where)))
        _os._exit(3)

    import linecache
    import traceback

    linecache.cache["solution.py"] = (len(source), None, source.splitlines(True), "solution.py")
    scope = {"__name__": "solution", "__file__": "solution.py", "__builtins__": _builtins}
    try:
        exec(code, scope)
    except SystemExit as e:
        # exit() or exit(0) at import: it ends as a program that stopped early, not as one
        # that failed.
        _sys.stdout.flush()
        _sys.stderr.flush()
        if e.code in (None, 0, False):
            _os._exit(0)
        send("import-error", _describe(e))
        _os._exit(1)
    except BaseException as e:
        traceback.print_exc()
        _sys.stderr.flush()
        send("import-error", _describe(e))
        _os._exit(1)
    _sys.stdout.flush()

    names = []
    for name, value in list(scope.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, _types.ModuleType):
            names.append((name, "module", value.__name__))
        elif callable(value):
            names.append((name, "call", None))
        else:
            try:
                encoded = encode(value, True)
                if len(ascii(encoded)) > _MAX_VALUE_NAME:
                    raise Unencodable("too large")
                names.append((name, "value", encoded))
            except (Unencodable, RecursionError, ValueError):
                names.append((name, "other", type(value).__name__))
    send("ready", ascii(names))

    for line in requests:
        try:
            if not line.startswith(b"call "):
                raise Malformed("not a call")
            request = read(line[5:].rstrip(b"\n"))
            if type(request) is not tuple or len(request) != 4 or request[0] != "call":
                raise Malformed("not a call")
            name, args_node, kwargs_node = request[1], request[2], request[3]
            args, kwargs = decode(args_node), decode(kwargs_node)
            if type(name) is not str or type(args) is not list or type(kwargs) is not dict:
                raise Malformed("not a call")
        except Malformed as e:
            send("reply", ascii(("unsupported", "a request moot could not read: %s" % e)))
            continue
        send("reply", ascii(_call(scope, name, args, kwargs, args_node, kwargs_node)))
    _sys.stdout.flush()
    _sys.stderr.flush()
    _os._exit(0)


def _call(scope, name, args, kwargs, args_node, kwargs_node):
    function = scope.get(name)
    if not callable(function):
        return ("raise", "NameError", True, None, "name %r is not defined" % name)
    try:
        result = function(*args, **kwargs)
    except Exception as e:
        kind = type(e)
        builtin = getattr(_builtins, kind.__name__, None) is kind
        try:
            args_out = encode(list(e.args), True)
        except BaseException:
            args_out = None
        return ("raise", kind.__name__, builtin, args_out, _describe(e))
    except BaseException as e:
        return ("exit", type(e).__name__, _describe(e))
    try:
        value = encode(result, True)
    except (Unencodable, RecursionError, ValueError) as e:
        return ("unsupported", "%s() returned %s" % (name, e))
    # Arguments changed in place cross back, so that tests that read them see the change.
    changed = []
    before = args_node[1] if type(args_node) is tuple and len(args_node) == 2 else []
    for i, arg in enumerate(args):
        try:
            after = encode(arg, True)
        except (Unencodable, RecursionError, ValueError) as e:
            return ("unsupported", "%s() changed argument %d into %s" % (name, i + 1, e))
        if i < len(before) and ascii(after) != ascii(before[i]):
            changed.append((i, after))
    kw_before = dict(kwargs_node[1]) if type(kwargs_node) is tuple and len(kwargs_node) == 2 else {}
    for key, arg in kwargs.items():
        try:
            after = encode(arg, True)
        except (Unencodable, RecursionError, ValueError) as e:
            return ("unsupported", "%s() changed argument %s into %s" % (name, key, e))
        if ascii(after) != ascii(kw_before.get(key)):
            changed.append((key, after))
    return ("ok", value, changed)


_serve()
