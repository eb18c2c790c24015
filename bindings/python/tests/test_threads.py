"""Threads and processes: parallel waits, Ctrl-C, exit with a hung probe,
fork."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import threading
import time
import warnings

import pytest
import waitfor
from conftest import PYTHON, child_env, eventually


def test_two_threads_waiting_at_once_both_progress() -> None:
    gate = threading.Barrier(2, timeout=20)
    results: dict[str, waitfor.WaitResult] = {}

    def run(name: str) -> None:
        n = 0

        def probe() -> str:
            nonlocal n
            n += 1
            if n == 2:
                # Each probe reaches its second sample only while the other
                # thread's wait runs too.
                gate.wait()
            return "done" if n >= 3 else ""

        results[name] = waitfor.wait({"until": {"matches": "done"}, "interval_ms": 10, "max_wait_ms": 20000}, probe)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {k: r.outcome for k, r in results.items()} == {"a": "matched", "b": "matched"}


# Children get Python's own SIGINT handler whatever this process inherited:
# a suite started from a background job starts with SIGINT ignored, and a
# child would inherit that, so Ctrl-C and `interrupt_main` would do nothing.
SIGINT_PROLOGUE = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def run_child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, "-c", SIGINT_PROLOGUE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def test_ctrl_c_interrupts_a_blocking_wait_and_cancels_it() -> None:
    child = run_child(
        """
        import waitfor
        seen = []
        def probe(ctx):
            if ctx.sample == 1:
                print("waiting", flush=True)
            seen.append(ctx.sample)
            return ""
        try:
            waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 120000}, probe)
        except KeyboardInterrupt:
            n = len(seen)
            import time; time.sleep(0.3)
            print("interrupted", "stopped" if len(seen) <= n + 1 else "still probing", flush=True)
        """
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "waiting"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert out.strip() == "interrupted stopped", err


def test_an_interrupt_raised_from_another_thread_reaches_a_blocking_wait() -> None:
    # No signal reaches the blocked thread here (`interrupt_main` only sets
    # Python's flag): the wait's periodic look for signals must find it.
    child = run_child(
        """
        import _thread, waitfor
        def probe(ctx):
            if ctx.sample == 1:
                _thread.interrupt_main()
            return ""
        try:
            waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 120000}, probe)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    out, err = child.communicate(timeout=30)
    assert out.strip() == "interrupted", err


def test_interpreter_exit_is_not_held_up_by_hung_probes() -> None:
    child = run_child(
        """
        import threading, time, waitfor
        entered = threading.Barrier(3, timeout=20)
        def sleeper():
            entered.wait()
            threading.Event().wait()  # hangs, GIL released
        def spinner():
            entered.wait()
            while True:               # hangs, holding the GIL by turns
                pass
        spec = {"until": {"matches": "x"}, "max_wait_ms": 600000}
        waitfor.start(spec, sleeper)
        waitfor.start(spec, spinner)
        entered.wait()
        print("exiting", flush=True)
        """
    )
    out, err = child.communicate(timeout=60)
    assert out.strip() == "exiting", err
    assert child.returncode == 0, err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def _fork_and_wait_in_child() -> int:
    """Forks; the child runs one wait with a Python probe and exits 0 when
    it matched on its second sample. Returns the child's pid."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            polls = iter(["", "x"])
            r = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 10000}, lambda: next(polls))
            code = 0 if (r.outcome, r.samples) == ("matched", 2) else 2
        finally:
            os._exit(code)
    return pid


def test_children_forked_while_the_engine_is_busy_can_still_wait() -> None:
    # The parent's engine threads park and wake each other all the time
    # here; a fork in the middle of that must leave the child nothing
    # locked (locks that park through a process-wide table did: the
    # child's scheduler then hung for good, or the child crashed).
    spec = {"until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": 60000}
    busy = [waitfor.start(spec, lambda: "no") for _ in range(50)]
    try:
        for _ in range(20):
            pid = _fork_and_wait_in_child()
            status = [0]

            def reaped(pid: int = pid) -> bool:
                done, status[0] = os.waitpid(pid, os.WNOHANG)
                return done == pid

            try:
                eventually(reaped, timeout=30, what="a forked child to finish its wait")
            except BaseException:  # pytest.fail: the child must not outlive the test
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise
            assert os.waitstatus_to_exitcode(status[0]) == 0
    finally:
        for handle in busy:
            handle.cancel()


def test_a_forked_child_can_still_wait() -> None:
    before = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, lambda: "x")
    assert before.outcome == "matched"
    pid = _fork_and_wait_in_child()
    status = [0]

    def reaped() -> bool:
        done, status[0] = os.waitpid(pid, os.WNOHANG)
        return done == pid

    eventually(reaped, timeout=30, what="the forked child to finish")
    assert os.waitstatus_to_exitcode(status[0]) == 0
    after = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, lambda: "x")
    assert after.outcome == "matched"


def engine_threads(pid: int) -> int:
    """The engine's threads in process `pid`, counted by name."""
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm:
                names.append(comm.read())
        except OSError:
            pass  # the thread just ended
    return sum(name.startswith("waitfor") for name in names)


def test_a_busy_main_thread_does_not_grow_the_engine_a_thread_per_probe() -> None:
    # While the host's main thread runs Python code, every probe call waits
    # milliseconds for the interpreter lock; the calls queue and are made
    # in runs by a worker holding the lock, not on a thread each. This
    # process counts the child's threads, so the child's main thread does
    # nothing but run Python code.
    child = run_child(
        """
        import time, waitfor
        spec = {"until": {"matches": "never"}, "interval_ms": 20, "max_wait_ms": 2000}
        handles = [waitfor.start(spec, lambda: "not yet") for _ in range(200)]
        print("started", flush=True)
        until = time.monotonic() + 2.2
        while time.monotonic() < until:
            pass
        print(min(h.result().samples for h in handles), flush=True)
        """
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"
    most = 0
    while child.poll() is None:
        most = max(most, engine_threads(child.pid))
        time.sleep(0.05)  # a sampling period, not a synchronisation
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    # The scheduler, two delivery lanes, two workers, and room for more
    # workers while a drainer is stuck; a thread per waiting call is 200.
    assert most <= 12, f"{most} engine threads"
    assert int(out) > 0, "a wait took no sample"


def test_probes_hung_in_python_do_not_hold_up_other_python_probes() -> None:
    # One probe sleeps (letting go of the interpreter lock) and one spins
    # (holding it by turns), each inside a run of calls made under the
    # lock; other workers take the queued calls.
    child = run_child(
        """
        import threading, waitfor
        entered = threading.Barrier(3, timeout=20)
        def sleeper():
            entered.wait()
            threading.Event().wait()
        def spinner():
            entered.wait()
            while True:
                pass
        hung = {"until": {"matches": "never"}, "max_wait_ms": 600000}
        waitfor.start(hung, sleeper)
        waitfor.start(hung, spinner)
        entered.wait()
        quick = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 20000}
        handles = [waitfor.start(quick, lambda: "ready") for _ in range(20)]
        print(sorted({h.result().outcome for h in handles}), flush=True)
        """
    )
    out, err = child.communicate(timeout=60)
    assert out.strip() == "['matched']", err
