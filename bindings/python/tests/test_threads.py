"""Threads and processes: parallel waits, Ctrl-C, exit with a hung probe,
fork."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from conftest import PYTHON, child_env, eventually

import waitfor


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


def test_engine_threads_attaching_for_the_first_time_at_exit_neither_crash_nor_hang() -> None:
    # Hundreds of waits whose plain probes (on the engine's workers, the
    # pool growing: fresh threads attaching for the first time) take
    # longer than exit's grace and take the interpreter lock back every
    # millisecond; the interpreter exits at once. A thread still waiting
    # for its first attach when exit began ran its probe on into
    # finalization, where CPython ends a thread retaking the lock by an
    # unwind through Rust frames: the process aborted, about every other
    # run. Each child exits at a different moment of the pool's growth.
    code = """
        import asyncio, sys, time, waitfor
        def probe():
            for _ in range(3000):
                time.sleep(0.001)
            return ""
        spec = {"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 60000}
        async def main():
            tasks = [asyncio.ensure_future(waitfor.wait_async(spec, probe)) for _ in range(600)]
            await asyncio.sleep(float(sys.argv[1]))
            return tasks
        loop = asyncio.new_event_loop()
        tasks = loop.run_until_complete(main())
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        print("exiting", flush=True)
        """
    for run in range(20):
        child = subprocess.run(
            [PYTHON, "-c", textwrap.dedent(code), str(run * 0.005)],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=60,
        )
        assert (child.returncode, child.stdout.strip()) == (0, "exiting"), (run, child.returncode, child.stderr)


def test_an_engine_thread_whose_first_attach_runs_host_code_is_stopped_at_exit() -> None:
    # The host's `threading` module (as an import hook or a patch may
    # make it) lets go of the interpreter lock for a second when read,
    # retaking it every millisecond, and the interpreter exits meanwhile.
    # An engine thread that read it on its first attach, after looking
    # for exit and before exit could know its id, went on into
    # finalization: the process aborted. An engine thread reads nothing
    # there, and the child exits once its 3 s look for a read is over.
    child = run_child(
        """
        import sys, threading, time, types, waitfor
        real = sys.modules["threading"]
        read = real.Event()
        class Slow(types.ModuleType):
            @property
            def get_ident(self):
                read.set()
                for _ in range(1000):
                    time.sleep(0.001)
                return real.get_ident
        sys.modules["threading"] = Slow("threading")
        def probe():
            for _ in range(3000):
                time.sleep(0.001)
            return ""
        waitfor.start({"until": {"matches": "x"}, "max_wait_ms": 600000}, probe)
        read.wait(3)
        sys.modules["threading"] = real
        print("exiting", flush=True)
        """
    )
    out, err = child.communicate(timeout=60)
    assert (child.returncode, out.strip()) == (0, "exiting"), err


def _matches_on_its_second_sample() -> waitfor.WaitResult | None:
    """One wait with a Python probe: None when it matched on its second
    sample, as it must; the result otherwise."""
    polls = iter(["", "x"])
    r = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10, "max_wait_ms": 10000}, lambda: next(polls))
    return None if (r.outcome, r.samples) == ("matched", 2) else r


def _wait_in_a_forked_child(wait: Callable[[], waitfor.WaitResult | None] = _matches_on_its_second_sample) -> None:
    """Forks; the child runs `wait`, which gives None when the child's wait
    went as it must. Fails unless the child did so within 30 s."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            wrong = wait()
            code = 0 if wrong is None else 2
            if code:  # the parent's assert shows only the exit code
                print(f"the child's wait: {wrong!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    status = [0]

    def reaped() -> bool:
        done, status[0] = os.waitpid(pid, os.WNOHANG)
        return done == pid

    try:
        eventually(reaped, timeout=30, what="a forked child to finish its wait")
    except BaseException:  # pytest.fail: the child must not outlive the test
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    assert os.waitstatus_to_exitcode(status[0]) == 0


def test_a_parents_wait_is_refused_in_a_forked_child_at_once() -> None:
    # No thread of the child will ever end the parent's wait: result()
    # waited its whole timeout there, or for ever without one.
    handle = waitfor.start({"until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": 60000}, lambda: "no")

    def refused() -> waitfor.WaitResult | None:
        try:
            handle.result()
        except RuntimeError as err:
            if "forked child" in str(err):
                return None
        raise AssertionError("the parent's wait was not refused")

    try:
        _wait_in_a_forked_child(refused)
    finally:
        handle.cancel()


def test_children_forked_while_the_engine_is_busy_can_still_wait() -> None:
    # The parent's engine threads park and wake each other all the time
    # here; a fork in the middle of that must leave the child nothing
    # locked (locks that park through a process-wide table did: the
    # child's scheduler then hung for good, or the child crashed).
    spec = {"until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": 60000}
    busy = [waitfor.start(spec, lambda: "no") for _ in range(50)]
    try:
        for _ in range(20):
            _wait_in_a_forked_child()
    finally:
        for handle in busy:
            handle.cancel()


def test_a_child_forked_while_the_parent_compiles_can_still_wait() -> None:
    # Compiles pass a gate, at most one per core at once. A child forked
    # while the parent's compiles held every place inherited them as taken
    # for good: its own waits never compiled and timed out.
    def slow_to_compile(i: int) -> dict[str, object]:
        patterns = [{"text": f"{i}-{j}:" + "[a-y]z" * 10000, "regex": True} for j in range(60)]
        return {"until": {"patterns": patterns}, "interval_ms": 10, "max_wait_ms": 60000}

    cpu_before = time.process_time()
    compiling = [waitfor.start(slow_to_compile(i), lambda: "no") for i in range(6)]
    try:
        # Nothing else here uses CPU: once it is used, compiles run (six
        # take seconds, two at a time).
        eventually(lambda: time.process_time() - cpu_before > 0.3, what="the compiles to run")
        _wait_in_a_forked_child()
    finally:
        for handle in compiling:
            handle.cancel()


def test_a_child_forked_while_files_are_watched_still_reads_files(tmp_path: Path) -> None:
    # File probes share one watch, whose thread stays in the parent: a
    # child's first sample of a file in a directory not watched yet waited
    # for that thread for good.
    grants = waitfor.Grants(file_roots=[tmp_path])

    def following(name: str, max_wait_ms: int) -> dict[str, object]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "log").write_text("")
        path = str(tmp_path / name / "log")
        return {"probe": {"file": {"path": path}}, "until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": max_wait_ms}

    sampled = threading.Event()
    watched = waitfor.start(following("parent", 60000), grants=grants, on_progress=lambda _: sampled.set())

    def samples_the_file() -> waitfor.WaitResult | None:
        r = waitfor.wait(following("child", 1000), grants=grants)
        return None if (r.outcome, r.samples >= 2) == ("timeout", True) else r

    try:
        assert sampled.wait(20), "the parent's file wait never sampled"
        _wait_in_a_forked_child(samples_the_file)
    finally:
        watched.cancel()


def test_a_forked_child_can_still_wait() -> None:
    before = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, lambda: "x")
    assert before.outcome == "matched"
    _wait_in_a_forked_child()
    after = waitfor.wait({"until": {"matches": "x"}, "interval_ms": 10}, lambda: "x")
    assert after.outcome == "matched"


def test_a_probe_that_forks_and_fails_in_the_child_ends_that_child() -> None:
    # A fork and exec whose exec fails raises in the child, which returns
    # to the engine's worker: its only thread, with no engine around it.
    # The child then waited for work for good, a copy of the host.
    children: list[int] = []

    def fork_and_exec() -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork() in a threaded process
            pid = os.fork()
        if pid == 0:
            raise OSError("exec failed")
        children.append(pid)
        return ""

    handle = waitfor.start({"until": {"matches": "never"}, "interval_ms": 10, "max_wait_ms": 60000}, fork_and_exec)
    try:
        eventually(lambda: bool(children), what="the probe to fork")
    finally:
        handle.cancel()
    statuses: dict[int, int] = {}

    def all_ended() -> bool:
        for pid in children:
            if pid not in statuses:
                ended, status = os.waitpid(pid, os.WNOHANG)
                if ended:
                    statuses[pid] = status
        return len(statuses) == len(children)

    try:
        # Generous: a child ends as soon as its probe returns.
        eventually(all_ended, what="the forked children to end")
    finally:
        for pid in set(children) - set(statuses):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 1 for s in statuses.values()), statuses


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


def test_probes_that_run_whole_waits_of_their_own_all_end() -> None:
    # Each blocking probe runs in the interpreter lock's lane and waits there
    # for a wait whose probe needs that lane too, three levels deep, many at
    # once: the lane takes on drainers instead of waiting for itself.
    def inner() -> str:
        return "ready"

    def middle() -> str:
        return waitfor.wait({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 60000}, inner).outcome

    def outer() -> str:
        return waitfor.wait({"until": {"matches": "matched"}, "interval_ms": 10, "max_wait_ms": 60000}, middle).outcome

    spec = {"until": {"matches": "matched"}, "interval_ms": 10, "max_wait_ms": 60000}
    handles = [waitfor.start(spec, outer) for _ in range(100)]
    assert {h.result(timeout=120).outcome for h in handles} == {"matched"}


def test_waiting_on_a_delivery_thread_is_refused_and_holds_no_other_result() -> None:
    # Python code runs on a delivery thread only as a finalizer the engine
    # sets off there; here a stand-in loop runs the end callback on the
    # calling thread, the delivery thread. A blocking wait there could be
    # one whose result that very thread delivers: it is refused at once,
    # and every other wait still ends.
    child = run_child(
        """
        import threading, waitfor
        from waitfor import _native
        spec = {"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 5000}
        heard = []
        told = threading.Event()
        class RunsAtOnce:
            def call_soon_threadsafe(self, callback, *args, context=None):
                callback(*args)
        def on_done():
            for _ in range(2):  # consecutive waits end on both delivery threads
                try:
                    heard.append(waitfor.wait(spec, lambda: "ready").outcome)
                except RuntimeError as err:
                    heard.append("refused" if "wait from another thread" in str(err) else repr(err))
            told.set()
        native = _native.start(spec, lambda: "ready", on_done=on_done, event_loop=RunsAtOnce())
        native.result(timeout=20)
        if not told.wait(20):
            heard.append("stuck")
        others = [waitfor.start(spec, lambda: "ready") for _ in range(8)]
        outcomes = []
        for other in others:
            try:
                outcomes.append(other.result(timeout=20).outcome)
            except TimeoutError:
                outcomes.append("stuck")
        print(heard, sorted(set(outcomes)), flush=True)
        """
    )
    out, err = child.communicate(timeout=120)
    assert out.strip() == "['refused', 'refused'] ['matched']", (out, err)
