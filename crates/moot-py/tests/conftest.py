"""Shared pieces of moot's Python tests: a fresh store per test, a sleepy cli team, and a
fake OpenAI-compatible server that waits before it answers and counts requests in flight."""

import http.server
import json
import os
import threading
import time

import pytest

import moot


@pytest.fixture
def store(tmp_path):
    s = moot.Store(tmp_path / "moot.db")
    yield s
    s.close()


def sleepy_team(tmp_path, agents=("a", "b")):
    """A configuration of cli agents that each start a child (`sleep` with an argument no
    other process has), note that they have in a `.started` file, then wait 30 s. Returns the
    configuration, the `.started` files and the command-line arguments that find the agents and
    their children (an agent runs in a PID namespace of its own: the pids it sees are not ours).
    """
    lines = [
        "[debate]",
        'protocol = "cot-sc"',
        'answer = "numeric"',
        "",
    ]
    allowed, started, markers, agent_lines = [], [], [], []
    for n, agent in enumerate(agents):
        script = tmp_path / f"{agent}.sh"
        child = f"30.{os.getpid()}{n:03}"
        script.write_text(
            f"#!/bin/sh\nsleep {child} &\necho started > {tmp_path}/{agent}.started\nwait\n"
        )
        script.chmod(0o755)
        allowed.append(f'"{script}"')
        agent_lines += ["[[agents]]", f'id = "{agent}"', 'backend = "cli"', f'command = "{script}"', ""]
        started.append(tmp_path / f"{agent}.started")
        markers += [str(script), child]
    lines += ["[security]", f"cli_allowed_commands = [{', '.join(allowed)}]", ""] + agent_lines
    config = tmp_path / "sleepy.toml"
    config.write_text("\n".join(lines))
    return config, started, markers


def running_with_argument(argument):
    """The pids of the running processes (not zombies) that have `argument` as one whole
    argument of their command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                arguments = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().split(")")[-1].split()[0]
        except OSError:
            continue
        if argument.encode() in arguments and state != "Z":
            found.append(int(entry))
    return found


def survivors(markers, within=5.0):
    """Waits until no running process has any of `markers` as an argument, or `within` seconds
    pass; the pids still running."""
    deadline = time.monotonic() + within
    while True:
        left = [pid for m in markers for pid in running_with_argument(m)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


class SlowOpenAi:
    """An OpenAI-compatible chat endpoint answering "Final answer: 7" after `delay` seconds;
    `most_at_once` is the most requests it held at the same time."""

    def __init__(self, delay):
        self.delay = delay
        self.in_flight = 0
        self.most_at_once = 0
        self.requests = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                with fake.lock:
                    fake.in_flight += 1
                    fake.requests += 1
                    fake.most_at_once = max(fake.most_at_once, fake.in_flight)
                time.sleep(fake.delay)
                with fake.lock:
                    fake.in_flight -= 1
                body = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": "fake",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "Final answer: 7"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def config(self, agents=1):
        return {
            "debate": {"protocol": "cot", "answer": "numeric"},
            "agents": [
                {"id": f"a{i}", "backend": "openai", "base_url": self.url, "model": "fake"}
                for i in range(agents)
            ],
        }

    def close(self):
        self.server.shutdown()


@pytest.fixture
def slow_openai():
    fake = SlowOpenAi(delay=0.3)
    yield fake
    fake.close()
