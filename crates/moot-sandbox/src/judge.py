
# moot's grader, the tests' side (runs inside its own bubblewrap sandbox, after wire.py).
#
# The program under test never runs in this process. Its functions are stand-ins that send
# each call, as literal values, to the program's process (through moot) and turn the reply
# back into plain values; the tests, a dataset's reference code and helpers, and the verdict
# all live here, out of the program's reach.
#
# stdin: a JSON line {"reference", "tests", "candidate"}, the program's "ready" line, then one
#   reply line per call ("reply REPLY", or "ended" when the program's process is gone).
# stdout (the channel; the tests' own prints go to stderr):
#   call REQUEST | done passed | done failed DETAIL | done unsupported DETAIL | done ended
import builtins as _builtins
import json as _json
import os as _os
import sys as _sys


class _Unsupported(BaseException):
    """The tests needed something that does not cross as a plain value. A BaseException, so
    that the tests' own `except Exception` does not swallow it (and the verdict records it
    even if they catch it anyway)."""


class _Broken(BaseException):
    """The program's process stopped answering as a program does: it ended, raised
    SystemExit, or sent what moot did not write."""


def _judge():
    replies, channel = _take_channel()
    state = {"unsupported": None, "broken": None, "ended": False}

    def send(line):
        _write_all(channel, (line + "\n").encode("ascii", "backslashreplace"))

    def finish(verdict, detail=""):
        _sys.stdout.flush()
        _sys.stderr.flush()
        send(("done %s %s" % (verdict, _one_line(detail))).rstrip())
        _os._exit(0)

    def unsupported(why):
        if state["unsupported"] is None:
            state["unsupported"] = why
        raise _Unsupported(why)

    def broken(why, ended=False):
        if ended:
            state["ended"] = True
        elif state["broken"] is None:
            state["broken"] = why
        raise _Broken(why)

    def receive():
        line = replies.readline()
        if not line or line == b"ended\n":
            broken("the program's process ended", ended=True)
        if not line.startswith(b"reply "):
            broken("the program's process sent something that is not a reply")
        try:
            return read(line[6:])
        except Malformed as e:
            broken("the program's reply was malformed (%s)" % e)

    def stand_in(name):
        def call(*args, **kwargs):
            if state["ended"] or state["broken"]:
                raise _Broken(state["broken"] or "the program's process ended")
            try:
                request = ascii(("call", name, encode(list(args), True), encode(kwargs, True)))
            except (Unencodable, RecursionError, ValueError) as e:
                unsupported("the tests called %s() with %s" % (name, e))
            send("call " + request)
            reply = receive()
            try:
                return _answer(name, reply, args, kwargs, unsupported, broken)
            except Malformed as e:
                broken("the program's reply was malformed (%s)" % e)

        call.__name__ = call.__qualname__ = name
        return call

    def stub(name, what):
        def refuse(*a, **k):
            unsupported("the tests used %s, a %s of the program's, which does not cross as a "
                        "plain value" % (name, what))

        methods = {m: refuse for m in (
            "__call__", "__getattr__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
            "__ge__", "__bool__", "__len__", "__iter__", "__getitem__", "__setitem__",
            "__contains__", "__add__", "__sub__", "__mul__", "__hash__", "__int__",
            "__float__", "__index__")}
        return type(name, (), methods)()

    header = _json.loads(replies.readline())
    # The tests run as the __main__ module, so that `unittest.main()` finds their test cases.
    import types

    main_module = types.ModuleType("__main__")
    scope = main_module.__dict__
    scope["__builtins__"] = _builtins
    _sys.modules["__main__"] = main_module
    reference = header.get("reference") or ""
    if reference.strip():
        try:
            exec(compile(reference, "reference.py", "exec"), scope)
        except BaseException as e:
            finish("failed", "the tests' own reference code failed: %s: %s" % (type(e).__name__, e))

    ready = replies.readline()
    if not ready.startswith(b"ready "):
        finish("failed", "the program's process did not say it was ready")
    try:
        names = read(ready[6:])
        if type(names) is not list:
            raise Malformed("not a list")
        defined = {}
        for entry in names:
            if type(entry) is not tuple or len(entry) != 3 or type(entry[0]) is not str:
                raise Malformed("not a name")
            defined[entry[0]] = (entry[1], entry[2])
    except Malformed as e:
        finish("failed", "the program's list of names was malformed (%s)" % e)

    candidate = header.get("candidate")
    if candidate:
        if defined.get(candidate, (None,))[0] != "call":
            finish("failed", "the program does not define a function %s" % candidate)
        scope["candidate"] = stand_in(candidate)
    else:
        import importlib

        for name, (kind, extra) in defined.items():
            if name in scope:
                continue
            if kind == "call":
                scope[name] = stand_in(name)
            elif kind == "module" and type(extra) is str:
                try:
                    scope[name] = importlib.import_module(extra)
                except BaseException:
                    scope[name] = stub(name, "module")
            elif kind == "value":
                try:
                    scope[name] = decode(extra)
                except Malformed:
                    scope[name] = stub(name, "value")
            else:
                scope[name] = stub(name, extra if type(extra) is str else "value")

        # Tests written as a separate file import the program: `from solution import add`.
        module = types.ModuleType("solution")
        for name, (kind, _) in defined.items():
            if name in scope:
                setattr(module, name, scope[name])
        _sys.modules["solution"] = module

    failure = None
    try:
        exec(compile(header.get("tests") or "", "tests.py", "exec"), scope)
    except SystemExit as e:
        # unittest.main() ends this way, with status False (0) or True (1).
        code = int(e.code) if type(e.code) is bool else e.code
        if code not in (None, 0):
            failure = "the tests exited with status %s" % (code,)
    except (_Unsupported, _Broken):
        pass
    except BaseException as e:
        import traceback

        traceback.print_exc()
        message = str(e)
        failure = "%s: %s" % (type(e).__name__, message) if message else type(e).__name__
    # What happened to the program outranks how the tests ended: tests may catch anything.
    if state["ended"]:
        finish("ended")
    if state["broken"]:
        finish("failed", state["broken"])
    if state["unsupported"]:
        finish("unsupported", state["unsupported"])
    if failure:
        finish("failed", failure)
    finish("passed")


def _answer(name, reply, args, kwargs, unsupported, broken):
    """The value (or exception) a reply stands for; changed arguments updated in place."""
    if type(reply) is not tuple or not reply:
        raise Malformed("not a reply")
    kind = reply[0]
    if kind == "ok" and len(reply) == 3 and type(reply[2]) is list:
        value = decode(reply[1])
        for change in reply[2]:
            if type(change) is not tuple or len(change) != 2:
                raise Malformed("a bad change")
            where, new = change
            if type(where) is int and 0 <= where < len(args):
                old = args[where]
            elif type(where) is str and where in kwargs:
                old = kwargs[where]
            else:
                raise Malformed("a change to an argument that was not given")
            _update(name, where, old, decode(new), unsupported)
        return value
    if kind == "raise" and len(reply) == 5 and type(reply[1]) is str:
        exception = getattr(_builtins, reply[1], None)
        if reply[2] is True and isinstance(exception, type) and issubclass(exception, Exception):
            args_out = decode(reply[3]) if reply[3] is not None else [reply[4]]
            if type(args_out) is not list:
                args_out = [reply[4]]
            try:
                error = exception(*args_out)
            except Exception:
                error = exception(reply[4])
            raise error
        unsupported("%s() raised %s, an exception type of the program's own, which does not "
                    "cross" % (name, _one_line(reply[1], 200)))
    if kind == "exit" and len(reply) == 3:
        broken("%s() raised %s" % (name, _one_line(reply[2], 500)))
    if kind == "unsupported" and len(reply) == 2 and type(reply[1]) is str:
        unsupported(_one_line(reply[1], 500))
    raise Malformed("an unknown reply")


_MUTABLE = (list, dict, set, bytearray)


def _update(name, where, old, new, unsupported):
    """Copies an argument the program changed in place back into the tests' own object, where
    that is exact: a list, dict, set or bytearray that holds no other mutable container (whose
    identity a copy could not keep)."""
    what = "argument %d" % (where + 1) if type(where) is int else "argument %s" % where
    if type(old) is not type(new) or type(old) not in _MUTABLE:
        unsupported("%s() changed %s in place, which cannot be copied back" % (name, what))
    inner = old.values() if type(old) is dict else old
    if type(old) is not bytearray and any(isinstance(v, _MUTABLE) for v in inner):
        unsupported("%s() changed %s, which holds mutable values, in place" % (name, what))
    if type(old) is list or type(old) is bytearray:
        old[:] = new
    else:
        old.clear()
        old.update(new)


_judge()
