# moot's sandbox bootstrap (runs inside bubblewrap, under prlimit).
#
# stdin: one line with a tag, then the program. The program is compiled as "solution.py";
# in "run" mode it then runs as __main__. Lines starting with the tag, written to the original
# standard output, tell moot how it ended: "<tag> syntax-error <message>" or "<tag> finished".
# A program that exits before the end never writes "finished", so an exit() in a solution
# cannot pass for tests that ran.
import os
import sys


def main():
    mode = sys.argv[1]
    tag = sys.stdin.readline().strip()
    source = sys.stdin.read()
    sys.stdin = open(os.devnull)
    report = os.dup(1)

    def say(line):
        os.write(report, ("\n" + tag + " " + line + "\n").encode("utf-8", "replace"))

    try:
        code = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        where = f" (line {line})" if line else ""
        message = getattr(e, "msg", None) or str(e)
        say(f"syntax-error {type(e).__name__}: {message}{where}")
        sys.exit(3)
    if mode == "run":
        import linecache

        linecache.cache["solution.py"] = (len(source), None, source.splitlines(True), "solution.py")
        scope = {"__name__": "__main__", "__file__": "solution.py", "__builtins__": __builtins__}
        exec(code, scope)
        sys.stdout.flush()
        sys.stderr.flush()
    say("finished")


main()
