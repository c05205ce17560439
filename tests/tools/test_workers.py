"""Processes left behind: every command that starts worker processes ends them on SIGTERM and
SIGINT (``spades_env.workers.worker_pool``), and workers whose command was killed outright exit by
themselves.

Each command test starts the command in its own session, waits until its spawn workers run,
signals the main process only, and asserts that no process of the session is alive a few seconds
after the main one exited (the old arena left its workers and the resource tracker forever).
Whatever is left is killed by process id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from spades_env.workers import TERMINATED_STATUS, Terminated, worker_pool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = sys.executable
AGENT = os.path.join(ROOT, "tests", "data", "agent_v1.pt")


def _session(sid: int) -> list[tuple[int, str]]:
    """Live (not zombie) processes of session ``sid``: (pid, command line)."""
    out = subprocess.run(["ps", "-ww", "-o", "pid=,stat=,args=", "-s", str(sid)],
                         capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in out.strip().splitlines() if line.strip()]
    return [(int(r[0]), r[2] if len(r) > 2 else "") for r in rows if not r[1].startswith("Z")]


def _kill_all(sid: int) -> None:
    for pid, _ in _session(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start(argv: list[str], tmp_path, workers: int = 2) -> subprocess.Popen:
    """Start ``argv`` in a new session; return once ``workers`` spawn workers run (and 1 s more,
    so the work is under way)."""
    env = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"}
    # SIGINT as in a terminal: a test runner's worker (pytest-xdist) may ignore SIGINT, and an
    # ignored signal stays ignored across exec, so Python would never raise KeyboardInterrupt
    p = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / "stderr.txt", "w"), start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sum("spawn_main" in args for _, args in _session(p.pid)) >= workers:
            time.sleep(1.0)
            return p
        if p.poll() is not None:
            break
        time.sleep(0.2)
    _kill_all(p.pid)
    p.kill()
    raise AssertionError(f"{argv} did not start {workers} workers (exit {p.poll()}): "
                         f"{(tmp_path / 'stderr.txt').read_text()[-2000:]}")


def _signal_and_check(p: subprocess.Popen, sig: int, statuses: tuple) -> None:
    """Send ``sig`` to the main process; it must exit with one of ``statuses`` and leave no
    process of its session alive 5 s later."""
    sid = p.pid
    try:
        p.send_signal(sig)
        rc = p.wait(timeout=60)
        left = []
        for _ in range(50):
            left = _session(sid)
            if not left:
                break
            time.sleep(0.1)
        assert not left, f"alive after {signal.Signals(sig).name} (exit {rc}): {left}"
        assert rc in statuses, f"exit status {rc} after {signal.Signals(sig).name}"
    finally:
        _kill_all(sid)
        if p.poll() is None:
            p.kill()


COMMANDS = {
    "arena": lambda tmp: [PY, "-m", "spades_env", "arena", "--team0", "medium", "--team1", "easy",
                          "--games", "400", "--workers", "2", "--quiet"],
    "teacher_records": lambda tmp: [PY, "-m", "spades_env.training.teacher_records", "--teacher", "hard",
                                    "--chunks", "20", "--chunk-hands", "50", "--workers", "2",
                                    "--out", str(tmp / "rec")],
    "distill": lambda tmp: [PY, "-m", "spades_env.training.distill", AGENT, "--out",
                            str(tmp / "out.pt"), "--chunks", "20", "--chunk-hands", "50",
                            "--workers", "2", "--minutes", "5"],
    "bench_checkpoint_threads": lambda tmp: [
        PY, os.path.join(ROOT, "benchmarks", "bench_checkpoint_threads.py"), "--checkpoint",
        AGENT, "--procs", "2", "--hands", "200", "--repeats", "3"],
    "bench_contract_quality": lambda tmp: [
        PY, os.path.join(ROOT, "benchmarks", "bench_contract_quality.py"), "--level", "hard",
        "--hands", "400", "--workers", "2"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_sigterm_ends_every_worker_of_the_command(name, tmp_path):
    p = _start(COMMANDS[name](tmp_path), tmp_path)
    _signal_and_check(p, signal.SIGTERM, (TERMINATED_STATUS,))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["arena", "distill"])
def test_sigint_to_the_main_process_alone_ends_every_worker(name, tmp_path):
    # Ctrl-C in a terminal reaches the whole group; `kill -INT PID` reaches the main one only
    p = _start(COMMANDS[name](tmp_path), tmp_path)
    _signal_and_check(p, signal.SIGINT, (130,))
    assert "interrupted" in (tmp_path / "stderr.txt").read_text()


_KILLED_PARENT = textwrap.dedent("""
    import sys, time
    from spades_env.workers import worker_pool
    if __name__ == "__main__":
        with worker_pool(2, executor=EXECUTOR) as pool:
            list(pool.map(time.sleep, [600, 600]))
""")


@pytest.mark.parametrize("executor", [False, True])
def test_workers_exit_by_themselves_when_the_command_is_killed(executor, tmp_path):
    # SIGKILL reaches no handler: the workers notice their parent is gone and exit
    script = tmp_path / "killed.py"
    script.write_text(_KILLED_PARENT.replace("EXECUTOR", str(executor)))
    p = _start([PY, str(script)], tmp_path)
    _signal_and_check(p, signal.SIGKILL, (-signal.SIGKILL,))


def _square(x):
    return x * x


def test_pool_works_and_restores_the_sigterm_handler():
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with worker_pool(1) as pool:
        assert pool.map(_square, [2, 3]) == [4, 9]
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with worker_pool(1, executor=True) as ex:
        assert list(ex.map(_square, [4])) == [16]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_sigterm_handler_of_the_program_is_kept():
    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGTERM, mine)
    try:
        with worker_pool(1) as pool:
            assert signal.getsignal(signal.SIGTERM) is mine
            assert pool.map(_square, [5]) == [25]
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)


def test_terminated_is_a_system_exit_with_status_143():
    e = Terminated()
    assert isinstance(e, SystemExit) and e.code == 143 == TERMINATED_STATUS


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_bad_process_counts_are_value_errors(bad):
    with pytest.raises(ValueError, match="processes must be a positive int"):
        with worker_pool(bad):
            pass


def test_a_non_callable_initializer_is_a_value_error():
    with pytest.raises(ValueError, match="initializer must be callable"):
        with worker_pool(1, initializer=5):
            pass


def test_a_pool_opened_outside_the_main_thread_works_and_leaves_signals_alone():
    # signal handlers can only be set in the main thread: elsewhere the pool relies on the
    # workers' own parent watch, and must not fail
    import threading
    out = {}

    def run():
        try:
            with worker_pool(1) as pool:
                out["squares"] = pool.map(_square, [3])
        except BaseException as e:  # noqa: BLE001 (reported below)
            out["error"] = repr(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    assert out == {"squares": [9]}
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def _sleep_forever():
    time.sleep(3600)


def _write_and_exit(path: str, code: int):
    with open(path, "w") as f:
        f.write("ran")
    sys.exit(code)


def test_a_background_process_runs_its_target_and_ends_when_stopped(tmp_path):
    from spades_env.workers import BackgroundProcess
    done = BackgroundProcess(_write_and_exit, (str(tmp_path / "out"), 3))
    done.process.join(60)
    assert (tmp_path / "out").read_text() == "ran" and not done.alive()
    assert done.stop() == 3  # its own exit code: it had ended with an error
    with BackgroundProcess(_sleep_forever) as p:
        assert p.alive()
    assert not p.alive() and p.process.exitcode == -signal.SIGTERM
    with pytest.raises(ValueError, match="target must be callable"):
        BackgroundProcess("not a function")
