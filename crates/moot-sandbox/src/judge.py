
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
#   call REQUEST | done passed COUNTS | done failed DETAIL | done unsupported DETAIL
#   | done no-tests DETAIL | done ended
import ast as _ast
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

    tests_source = header.get("tests") or ""
    try:
        tests_tree = _ast.parse(tests_source, "tests.py")
    except SyntaxError as e:
        finish("failed", "the tests do not compile: %s (line %s)" % (e.msg, e.lineno))
    candidate = header.get("candidate")
    if candidate:
        if defined.get(candidate, (None,))[0] != "call":
            finish("failed", "the program does not define a function %s" % candidate)
        scope["candidate"] = stand_in(candidate)
    else:
        import importlib

        program = {}
        for name, (kind, extra) in defined.items():
            # The list comes from the program's process, which may say anything: only plain
            # identifiers that are not Python's own dunder names.
            if not name.isidentifier() or (name.startswith("__") and name.endswith("__")):
                continue
            if kind == "call":
                program[name] = stand_in(name)
            elif kind == "module" and type(extra) is str:
                try:
                    program[name] = importlib.import_module(extra)
                except BaseException:
                    program[name] = stub(name, "module")
            elif kind == "value":
                try:
                    program[name] = decode(extra)
                except Malformed:
                    program[name] = stub(name, "value")
            else:
                program[name] = stub(name, extra if type(extra) is str else "value")

        # Tests written as a separate file import the program: `from solution import add`.
        # They get exactly what they ask for; `import *` never brings a name that would hide
        # a builtin.
        module = types.ModuleType("solution")
        for name, value in program.items():
            setattr(module, name, value)
        module.__all__ = [n for n in program if not n.startswith("_") and not _is_builtin(n)
                          and not _is_stdlib_alias(n, defined[n])]
        _sys.modules["solution"] = module
        # A plain assert file uses the program's names directly, except the ones that are
        # already the tests' own: builtins, the reference's, and every name the tests bind
        # at their top level (defined, assigned or imported). A file that imports the
        # program gets nothing this way.
        if not _imports_solution(tests_tree):
            own = _top_level_names(tests_tree)
            for name, value in program.items():
                if name in scope or name in own or _is_builtin(name):
                    continue
                if _is_stdlib_alias(name, defined[name]):
                    continue
                scope[name] = value

    outcome = _run_tests(tests_source, tests_tree, scope, state)
    # What happened to the program outranks how the tests ended: tests may catch anything.
    if state["ended"]:
        finish("ended")
    if state["broken"]:
        finish("failed", state["broken"])
    if state["unsupported"]:
        finish("unsupported", state["unsupported"])
    finish(*outcome)


def _is_builtin(name):
    return hasattr(_builtins, name)


def _is_stdlib_alias(name, entry):
    """A program name that is a standard module's name bound to something else (`import
    numpy as math`, `math = 3`): the tests' `math` is Python's."""
    kind, extra = entry
    names = getattr(_sys, "stdlib_module_names", ())
    return name in names and not (kind == "module" and extra == name)


def _imports_solution(tree):
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Import):
            if any(a.name == "solution" or a.name.startswith("solution.") for a in node.names):
                return True
        elif isinstance(node, _ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] == "solution":
                return True
    return False


def _top_level_names(tree):
    """The names the tests bind in their module scope: at the top level (inside `if`, `for`,
    `with`, `try` blocks too), and those that functions declare `global`."""
    names = set()

    def targets(node):
        for sub in _ast.walk(node):
            if isinstance(sub, _ast.Name) and isinstance(sub.ctx, (_ast.Store, _ast.Del)):
                names.add(sub.id)
            elif isinstance(sub, _ast.Starred) and isinstance(sub.value, _ast.Name):
                names.add(sub.value.id)

    def statements(body):
        for node in body:
            if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
                names.add(node.name)
                continue
            if isinstance(node, (_ast.Import, _ast.ImportFrom)):
                for alias in node.names:
                    if alias.name != "*":
                        names.add(alias.asname or alias.name.split(".")[0])
                continue
            for field in ("targets", "target", "optional_vars"):
                value = getattr(node, field, None)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, _ast.AST):
                        targets(item)
            if isinstance(node, (_ast.With, _ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        targets(item.optional_vars)
            if isinstance(node, _ast.Try) or type(node).__name__ == "TryStar":
                for handler in node.handlers:
                    if handler.name:
                        names.add(handler.name)
                    statements(handler.body)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    statements(inner)
            if isinstance(node, _ast.Match):
                for case in node.cases:
                    targets(case.pattern)
                    statements(case.body)
            # Walrus targets anywhere in a top-level expression bind at module level.
            for sub in _ast.walk(node):
                if isinstance(sub, _ast.NamedExpr):
                    names.add(sub.target.id)

    statements(tree.body)
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Global):
            names.update(node.names)
        elif isinstance(node, _ast.MatchAs) and node.name:
            names.add(node.name)
    return names


_COUNTER = "__moot_assert_held__"


class _CountAsserts(_ast.NodeTransformer):
    """Follows every assert statement with a call that counts it: a file that runs to its
    end has checked as many things as this counted."""

    def visit_Assert(self, node):
        count = _ast.Expr(_ast.Call(_ast.Name(_COUNTER, _ast.Load()), [], []))
        _ast.copy_location(count, node)
        _ast.copy_location(count.value, node)
        _ast.copy_location(count.value.func, node)
        return [node, count]


class _Counts:
    def __init__(self):
        self.asserts = 0

    def held(self):
        self.asserts += 1


def _failure(e, where=None):
    """One line for an exception a test raised: its type and message, or for a bare
    `assert`, the assert's own source line."""
    try:
        message = str(e)
    except BaseException:
        message = "?"
    text = "%s: %s" % (type(e).__name__, message) if message else type(e).__name__
    if not message and isinstance(e, AssertionError):
        line = _assert_line(e)
        if line:
            text = "AssertionError: %s" % line
    return "%s: %s" % (where, text) if where else text


def _assert_line(e):
    import linecache

    tb = e.__traceback__
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "tests.py":
            last = tb.tb_lineno
        tb = tb.tb_next
    if last is None:
        return ""
    line = linecache.getline("tests.py", last).strip()
    return "%s (line %d)" % (line, last) if line else ""


def _run_tests(source, tree, scope, state):
    """Runs the tests file, then the tests it defines: pytest-style `test_*` functions and
    `Test*` classes, and unittest cases (which `unittest.main()` runs in their place).
    Returns the verdict and its detail."""
    import linecache
    import types
    import unittest

    counts = _Counts()
    scope[_COUNTER] = counts.held
    linecache.cache["tests.py"] = (len(source), None, source.splitlines(True), "tests.py")
    code = compile(_ast.fix_missing_locations(_CountAsserts().visit(tree)), "tests.py", "exec")
    _install_pytest_shim()

    cases = _CaseRunner(scope)

    def main(*args, **kwargs):
        # unittest.main() in the tests: their cases run here, once, and the file goes on
        # (exit=False) or ends as unittest.main() ends it.
        result = cases.run()
        if kwargs.get("exit", True):
            raise _MainExit()
        return types.SimpleNamespace(result=result)

    real_main = unittest.main
    unittest.main = main
    failure = None
    try:
        exec(code, scope)
    except _MainExit:
        pass
    except SystemExit as e:
        code_ = int(e.code) if type(e.code) is bool else e.code
        if code_ not in (None, 0):
            failure = "the tests exited with status %s" % (code_,)
    except (_Unsupported, _Broken):
        pass
    except BaseException as e:
        import traceback

        traceback.print_exc()
        failure = _failure(e)
    finally:
        unittest.main = real_main
    if failure:
        return ("failed", failure)
    if state["ended"] or state["broken"] or state["unsupported"]:
        return ("failed", "")
    asserts = counts.asserts
    passed, failed, skipped = [], [], []
    unsupported = []
    for name, run in _pytest_items(scope):
        try:
            run()
            passed.append(name)
        except BaseException as e:
            if _is_skip(e):
                skipped.append(name)
                continue
            if isinstance(e, _NeedsFixture):
                unsupported.append("%s needs the pytest fixture %s, which moot does not "
                                   "provide" % (name, e))
            elif isinstance(e, (_Unsupported, _Broken)):
                failed.append((name, ""))
            else:
                import traceback

                traceback.print_exc()
                failed.append((name, _failure(e)))
    result = cases.run()
    for test in result.passed:
        passed.append(test)
    for test, text in result.failed:
        failed.append((test, text))
    skipped.extend(result.skipped)
    if failed:
        name, text = failed[0]
        ran = len(passed) + len(failed)
        return ("failed", "%s%s (%d of %d failed)" % (name, ": " + text if text else "",
                                                      len(failed), ran))
    if unsupported:
        return ("unsupported", unsupported[0])
    parts = []
    if passed:
        parts.append("%d passed" % len(passed))
    if asserts and not passed:
        parts.append("%d assert%s held" % (asserts, "" if asserts == 1 else "s"))
    if skipped:
        parts.append("%d skipped" % len(skipped))
    if not passed and not asserts:
        why = ("every test was skipped" if skipped else
               "no assert ran, and no test_ function or unittest case was found")
        return ("no-tests", why)
    return ("passed", ", ".join(parts))


class _MainExit(BaseException):
    """unittest.main() ending the tests file, as the real one does with SystemExit."""


class _NeedsFixture(Exception):
    """A pytest-style test takes an argument that no parametrize gives (a fixture)."""


class _CaseResult:
    """What the tests' unittest cases did, by test."""

    def __init__(self):
        self.passed, self.failed, self.skipped = [], [], []


class _CaseRunner:
    """Runs the unittest cases the tests define, once, whoever asks first (their
    `unittest.main()`, or the judge after the file ran)."""

    def __init__(self, scope):
        self.scope = scope
        self.result = None

    def run(self):
        if self.result is not None:
            return self.result
        import unittest

        outcome = _CaseResult()
        self.result = outcome

        def name(test):
            return "%s.%s" % (type(test).__name__, getattr(test, "_testMethodName", "?"))

        class Collect(unittest.TestResult):
            def addSuccess(self, test):
                outcome.passed.append(name(test))

            def addFailure(self, test, err):
                outcome.failed.append((name(test), _failure(err[1])))

            def addError(self, test, err):
                outcome.failed.append((name(test), _failure(err[1])))

            def addSkip(self, test, reason):
                outcome.skipped.append(name(test))

            def addExpectedFailure(self, test, err):
                outcome.passed.append(name(test))

            def addUnexpectedSuccess(self, test):
                outcome.failed.append((name(test), "an expected failure passed"))

            def addSubTest(self, test, subtest, err):
                if err is not None:
                    outcome.failed.append((str(subtest), _failure(err[1])))

        loader = unittest.TestLoader()
        suite = unittest.TestSuite()
        for value in list(self.scope.values()):
            if (isinstance(value, type) and issubclass(value, unittest.TestCase)
                    and value.__module__ == "__main__"):
                suite.addTests(loader.loadTestsFromTestCase(value))
        suite.run(Collect())
        return outcome


def _marks(function, kind):
    return [m for m in getattr(function, "pytestmark", ()) if getattr(m, "name", None) == kind]


def _skip_reason(function):
    """Why a pytest mark skips `function`, or None."""
    for mark in _marks(function, "skip"):
        return mark.kwargs.get("reason", mark.args[0] if mark.args else "skipped")
    for mark in _marks(function, "skipif"):
        if mark.args and mark.args[0]:
            return mark.kwargs.get("reason", "skipped")
    return None


def _parameter_sets(function):
    """The keyword arguments of each run of a parametrized function (one empty set when it
    is not parametrized): the product of its parametrize marks."""
    sets = [({}, "")]
    for mark in reversed(_marks(function, "parametrize")):
        if len(mark.args) < 2:
            continue
        names, values = mark.args[0], mark.args[1]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        names = list(names)
        runs = []
        for i, value in enumerate(values):
            value = getattr(value, "values", value) if type(value).__name__ in (
                "ParameterSet", "_Param") else value
            row = (value,) if len(names) == 1 else tuple(value)
            runs.append((dict(zip(names, row)), str(i)))
        sets = [({**a, **b}, (ia + "-" + ib).strip("-")) for a, ia in sets for b, ib in runs]
    return sets


def _pytest_items(scope):
    """The pytest-style tests the tests file defines, in order: (name, callable)."""
    import inspect
    import types
    import unittest

    def expand(label, function, bind):
        reason = _skip_reason(function)
        for kwargs, ident in _parameter_sets(function):
            name = "%s[%s]" % (label, ident) if ident else label
            if reason is not None:
                yield name, _skipper(reason)
                continue
            yield name, _runner(function, bind, kwargs)

    for label, value in list(scope.items()):
        if (label.startswith("test") and isinstance(value, types.FunctionType)
                and value.__code__.co_filename == "tests.py"):
            yield from expand(label, value, None)
        elif (label.startswith("Test") and isinstance(value, type)
              and value.__module__ == "__main__" and not issubclass(value, unittest.TestCase)
              and "__init__" not in vars(value)):
            for attr, method in list(vars(value).items()):
                if attr.startswith("test") and inspect.isfunction(method):
                    yield from expand("%s.%s" % (label, attr), method, value)


def _skipper(reason):
    def skip():
        raise _Skipped(reason)

    return skip


def _runner(function, owner, kwargs):
    import inspect

    def run():
        if inspect.iscoroutinefunction(function):
            raise _NeedsFixture("(an async test)")
        parameters = list(inspect.signature(function).parameters.values())
        if owner is not None:
            parameters = parameters[1:]
        for p in parameters:
            if p.name not in kwargs and p.default is inspect.Parameter.empty and p.kind in (
                    p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                raise _NeedsFixture(p.name)
        if owner is not None:
            function(owner(), **kwargs)
        else:
            function(**kwargs)

    return run


class _Skipped(BaseException):
    """A test skipped itself (pytest.skip) or was marked to be skipped."""


def _is_skip(e):
    return isinstance(e, _Skipped) or type(e).__name__ == "Skipped"


def _install_pytest_shim():
    """`import pytest` in the tests gets pytest if the sandbox's Python has it, else this
    stand-in with the parts plain test files use: raises, approx, fail, skip, param and the
    parametrize, skip and skipif marks. Fixtures are not provided."""
    try:
        import pytest  # noqa: F401

        return
    except ImportError:
        pass
    import math
    import re
    import types

    shim = types.ModuleType("pytest")

    class Mark:
        def __init__(self, name, args, kwargs):
            self.name, self.args, self.kwargs = name, args, kwargs

        def __call__(self, function):
            marks = list(getattr(function, "pytestmark", []))
            marks.append(self)
            function.pytestmark = marks
            return function

    class Marks:
        def __getattr__(self, name):
            return lambda *args, **kwargs: Mark(name, args, kwargs)

    class _Param:
        def __init__(self, values, marks, id):
            self.values, self.marks, self.id = values, marks, id

    def param(*values, marks=(), id=None):
        return _Param(values, marks, id)

    class Raises:
        def __init__(self, expected, match):
            self.expected, self.match, self.value = expected, match, None

        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            if kind is None:
                raise AssertionError("DID NOT RAISE %r" % (self.expected,))
            if not issubclass(kind, self.expected):
                return False
            if self.match is not None and not re.search(self.match, str(value)):
                raise AssertionError("%r does not match %r" % (str(value), self.match))
            self.value = value
            return True

    def raises(expected, *args, match=None, **kwargs):
        context = Raises(expected, match)
        if args:
            with context:
                args[0](*args[1:], **kwargs)
            return context
        return context

    class Approx:
        def __init__(self, expected, rel, abs_):
            self.expected, self.rel, self.abs = expected, rel, abs_

        def close(self, want, got):
            if isinstance(want, (list, tuple)):
                return (isinstance(got, (list, tuple)) and len(got) == len(want)
                        and all(self.close(w, g) for w, g in zip(want, got)))
            if isinstance(want, dict):
                return (isinstance(got, dict) and got.keys() == want.keys()
                        and all(self.close(want[k], got[k]) for k in want))
            if isinstance(want, bool) or not isinstance(want, (int, float, complex)):
                return want == got
            if isinstance(got, bool) or not isinstance(got, (int, float, complex)):
                return False
            if want == got:
                return True
            rel = 1e-6 if self.rel is None else self.rel
            absolute = 1e-12 if self.abs is None else self.abs
            return abs(want - got) <= max(rel * abs(want), absolute) and not (
                isinstance(got, float) and math.isnan(got))

        def __eq__(self, other):
            return self.close(self.expected, other)

        def __repr__(self):
            return "approx(%r)" % (self.expected,)

    def approx(expected, rel=None, abs=None):
        return Approx(expected, rel, abs)

    def fail(reason=""):
        raise AssertionError(reason or "failed")

    def skip(reason=""):
        raise _Skipped(reason)

    shim.mark = Marks()
    shim.param = param
    shim.raises = raises
    shim.approx = approx
    shim.fail = fail
    shim.skip = skip
    _sys.modules["pytest"] = shim


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
