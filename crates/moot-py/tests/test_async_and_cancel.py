"""Debates run at once from asyncio, release the GIL, and stop on Ctrl-C or cancellation
without leaving an agent process behind."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import moot
from conftest import sleepy_team, survivors


def test_many_debates_run_at_once_from_asyncio(store):
    async def main():
        return await asyncio.gather(
            *[
                moot.ask_async(
                    f"What is {i} + {i}?", agents=3, rounds=1, sim=True, gold=str(2 * i), store=store
                )
                for i in range(1, 9)
            ]
        )

    results = asyncio.run(main())
    assert len({r.run_id for r in results}) == 8
    assert len(store.runs()) == 8


def test_asyncio_debates_overlap_on_a_server_that_waits(store, slow_openai):
    async def main():
        return await asyncio.gather(
            *[
                moot.ask_async("What is 3 + 4?", config=slow_openai.config(), store=store)
                for _ in range(4)
            ]
        )

    results = asyncio.run(main())
    assert [r.answer for r in results] == ["7"] * 4
    assert slow_openai.requests == 4
    # Overlap shown by the server, not by a clock: it held several requests at once.
    assert slow_openai.most_at_once >= 2


def test_the_gil_is_released_while_a_debate_waits(store, slow_openai):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    counter = threading.Thread(target=count)
    counter.start()
    before = len(ticks)
    moot.ask("What is 3 + 4?", config=slow_openai.config(), store=store)
    during = len(ticks) - before
    stop.set()
    counter.join()
    # The other thread kept running while the debate waited on its model.
    assert during >= 5


def test_cancelling_an_asyncio_task_cancels_its_debate(tmp_path, store):
    config, started, markers = sleepy_team(tmp_path, agents=("a",))

    async def main():
        task = asyncio.ensure_future(moot.ask_async("What is 1 + 1?", config=config, store=store))
        deadline = time.monotonic() + 20
        while not all(p.exists() and p.read_text().strip() for p in started):
            assert time.monotonic() < deadline, "the agent never started"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert survivors(markers) == []
    [run] = store.runs()
    assert run["status"] == "failed"


def test_ctrl_c_stops_a_debate_and_leaves_no_agent_behind(tmp_path):
    config, started, markers = sleepy_team(tmp_path)
    script = tmp_path / "debate.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import faulthandler, signal
            faulthandler.register(signal.SIGUSR1, all_threads=True)
            # What Python does when started from a terminal. Started with SIGINT ignored (a
            # shell's background job without job control, as `(nohup .ci/run &)`), it installs
            # no KeyboardInterrupt handler, and Ctrl-C would not reach the debate at all.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import moot
            try:
                moot.ask("What is 1 + 1?", config={str(config)!r}, store={str(tmp_path / 'moot.db')!r})
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                raise SystemExit(130)
            """
        )
    )
    child = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    while not all(p.exists() and p.read_text().strip() for p in started):
        assert child.poll() is None, "the debate ended before its agents started"
        assert time.monotonic() < deadline, "the agents never started"
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    try:
        out, _ = child.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Ctrl-C did not end the debate within 20 s; where it was:\n{stuck(child)}")
    assert child.returncode == 130
    assert "interrupted" in out
    assert survivors(markers) == []
    with moot.Store(tmp_path / "moot.db") as store:
        [run] = store.runs()
        assert run["status"] == "failed"


def stuck(child):
    """What a process that did not end was doing: each thread's state and kernel wait channel,
    the processes below it, and its Python threads' stacks (faulthandler on SIGUSR1); then it
    is killed."""
    lines = []
    for task in sorted(os.listdir(f"/proc/{child.pid}/task")):
        base = f"/proc/{child.pid}/task/{task}"
        try:
            with open(f"{base}/comm") as comm, open(f"{base}/wchan") as wchan, open(f"{base}/stat") as stat:
                lines.append(f"thread {task} {comm.read().strip()}: {stat.read().split()[2]} in {wchan.read()}")
        except OSError as e:
            lines.append(f"thread {task}: {e}")
    tree = subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:20,args", "--ppid", str(child.pid)],
                          capture_output=True, text=True)
    lines.append(tree.stdout)
    child.send_signal(signal.SIGUSR1)
    time.sleep(1)
    child.kill()
    out, err = child.communicate()
    lines += ["stdout:", out, "stderr (Python stacks):", err]
    return "\n".join(lines)

