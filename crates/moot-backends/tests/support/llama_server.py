"""Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API, for moot's integration tests.

Usage: python llama_server.py MODEL_PATH

Starts an in-process llama.cpp server (the `xllamacpp` package) on 127.0.0.1, letting the
server bind a port of the system's choosing itself (port 0: no other process can take it between
choosing and binding), prints "READY http://127.0.0.1:PORT" on stdout once the server listens
there with the model loaded, and keeps serving until standard input is closed (the test process
exiting or dropping its handle), then exits at once.

Run it with the interpreter of the venv the tests install xllamacpp into.
"""

import os
import re
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: llama_server.py MODEL_PATH", file=sys.stderr)
        return 2
    model_path = sys.argv[1]

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    # As many threads as cores, as moot's embedded model, unless MOOT_LOCAL_THREADS says.
    threads = os.environ.get("MOOT_LOCAL_THREADS")
    if threads:
        for cpu in (params.cpuparams, params.cpuparams_batch):
            cpu.n_threads = int(threads)
    params.n_ctx = 4096
    params.n_parallel = 4
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    # The tests watch generation through /slots.
    params.endpoint_slots = True
    server = xllamacpp.Server(params)

    address = server.listening_address
    if not re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*", address or ""):
        print(f"the server reports no bound port: {address!r}", file=sys.stderr)
        return 1
    print(f"READY {address}", flush=True)
    # Block until the parent closes our stdin; `server` must stay referenced until then.
    sys.stdin.read()
    # Leave at once: the parent is gone or done, and tearing the server down gracefully could
    # wait on requests still in flight.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
