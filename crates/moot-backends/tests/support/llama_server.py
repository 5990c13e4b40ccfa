"""Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API, for moot's integration tests.

Usage: python3 llama_server.py MODEL_PATH PORT

Starts an in-process llama.cpp server (the `xllamacpp` package) on 127.0.0.1:PORT, prints
"READY" on stdout once the server object exists, and keeps serving until standard input is
closed (the test process exiting or dropping its handle), then exits at once.
"""

import os
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: llama_server.py MODEL_PATH PORT", file=sys.stderr)
        return 2
    model_path, port = sys.argv[1], int(sys.argv[2])

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.n_ctx = 4096
    params.n_parallel = 4
    params.hostnames = ["127.0.0.1"]
    params.port = port
    server = xllamacpp.Server(params)

    print("READY", flush=True)
    # Block until the parent closes our stdin; `server` must stay referenced until then.
    sys.stdin.read()
    # Leave at once: the parent is gone or done, and tearing the server down gracefully could
    # wait on requests still in flight.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
