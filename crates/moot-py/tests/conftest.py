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
    """A configuration of cli agents that write their pids and a child's, then wait 30 s."""
    lines = [
        "[debate]",
        'protocol = "cot-sc"',
        'answer = "numeric"',
        "",
    ]
    allowed, pid_files, agent_lines = [], [], []
    for agent in agents:
        script = tmp_path / f"{agent}.sh"
        script.write_text(
            "#!/bin/sh\nsleep 30 &\n"
            f"echo $! > {tmp_path}/{agent}.child.pid\necho $$ > {tmp_path}/{agent}.pid\nwait\n"
        )
        script.chmod(0o755)
        allowed.append(f'"{script}"')
        agent_lines += ["[[agents]]", f'id = "{agent}"', 'backend = "cli"', f'command = "{script}"', ""]
        pid_files += [tmp_path / f"{agent}.pid", tmp_path / f"{agent}.child.pid"]
    lines += ["[security]", f"cli_allowed_commands = [{', '.join(allowed)}]", ""] + agent_lines
    config = tmp_path / "sleepy.toml"
    config.write_text("\n".join(lines))
    return config, pid_files


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; it only waits for its parent to read its status.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


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
