"""StopOnSignal (slimkube/stopsignal.py): the stop event is set however the signal reaches the process.

Each case runs in a child interpreter with a deadline, so a regression fails instead of hanging the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from slimkube.stopsignal import StopOnSignal

ROOT = Path(__file__).resolve().parents[3]


def run_child(body: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    script = "from slimkube.stopsignal import StopOnSignal\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_taken_by_another_thread_wakes_a_main_thread_waiting_without_timeout(signum):
    """What the kernel does when the main thread cannot take a process signal at once (a SIGCHLD pending on
    it): another thread gets it. The main thread, blocked in `event.wait()`, must still wake."""
    done = run_child(f"""
        import signal, threading
        with StopOnSignal() as signals:
            taker = threading.Thread(target=lambda: threading.Event().wait(30), daemon=True)
            taker.start()
            threading.Timer(0.3, signal.pthread_kill, (taker.ident, {int(signum)})).start()
            signals.event.wait()
            print("stopped by", signals.received)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"stopped by {int(signum)}"


def test_signals_arriving_while_child_processes_exit_all_stop_the_waiter():
    """The e2e case, statistically: threads starting and reaping short-lived children (SIGCHLD keeps coming),
    SIGINT from outside; each of 15 processes stops within its deadline."""
    body = """
        import subprocess, sys, threading
        def churn():
            while True:
                subprocess.run(["true"])
        with StopOnSignal() as signals:
            for _ in range(6):
                threading.Thread(target=churn, daemon=True).start()
            print("ready", flush=True)
            signals.event.wait()
            print("stopped", flush=True)
    """
    script = "from slimkube.stopsignal import StopOnSignal\n" + textwrap.dedent(body)
    for _ in range(15):
        child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=10) == 0
            assert child.stdout.read().strip() == "stopped"
        finally:
            if child.poll() is None:
                child.kill()  # by PID: the child this test started
                child.wait()
            child.stdout.close()


def test_the_previous_handlers_and_wakeup_fd_come_back_and_the_watcher_ends():
    import threading

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with StopOnSignal():
        pass
    assert {signum: signal.getsignal(signum) for signum in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # none left behind
    assert not any(thread.name == "stop-signal" for thread in threading.enumerate())


def test_a_signal_before_the_wait_leaves_the_event_set_and_says_which():
    with StopOnSignal() as signals:
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.event.wait(5) and signals.received == signal.SIGINT



def test_sigusr1_makes_the_cli_print_every_threads_stack_and_carry_on():
    """The operator's (and the e2e fixture's) look into a process that seems stuck: `kill -USR1 PID`."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, signal, threading
        from slimkube.cli import main
        main(["version"], standalone_mode=False)
        threading.Thread(target=threading.Event().wait, args=(5,), name="parked", daemon=True).start()
        os.kill(os.getpid(), signal.SIGUSR1)
        print("still running")
    """)], cwd=ROOT, capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "still running"
    assert "Current thread 0x" in done.stderr and "in wait" in done.stderr, done.stderr  # the parked thread too
