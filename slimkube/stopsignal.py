"""SIGINT/SIGTERM as a `threading.Event`, for the long-running subcommands (`up`, `agent`, `proxy`).

The main thread waits on the event (with timeouts, so progress lines keep coming while it starts); a
Ctrl-C during start-up still reaches the orderly stop path instead of raising KeyboardInterrupt in the
middle of a Docker call. The previous handlers come back on exit.

Why the event is set by a thread of its own and not by the Python handler: CPython runs a Python signal
handler only in the main thread, and only once that thread executes bytecode again. The kernel hands a
process-directed signal to *any* thread that does not block it when the main thread cannot take it at
once — e.g. while a SIGCHLD from one of our many child processes (kubelet and proxy commands, node agents)
is pending on it. The thread that got the signal runs CPython's C handler, which only marks it tripped;
the main thread, asleep in `event.wait()` without a timeout, is never interrupted, so the Python handler
never runs and `up` ignores Ctrl-C for ever (the e2e fixture's "did not stop on SIGINT", about one run in
five while pods were being torn down). The C handler does, from whatever thread it runs on, write the
signal number to the fd given to `signal.set_wakeup_fd`; a watcher thread blocked on that pipe sets the
event. Setting it there also keeps the Python handler free of locks: `Event.set()` inside a handler can
deadlock when the handler interrupts the main thread while it holds that event's own lock (in `wait`).
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self._previous: dict[int, object] = {}
        self._previous_fd = -1
        self._read_fd = self._write_fd = -1
        self._watcher: threading.Thread | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """The Python-level handler: must exist for the C handler to write the wakeup fd; takes no lock."""

    def _watch(self) -> None:
        while data := os.read(self._read_fd, 64):  # b"" once __exit__ closed the write end
            for signum in data:
                if signum in SIGNALS and not self.event.is_set():
                    self.received = signum
                    self.event.set()

    def __enter__(self) -> StopOnSignal:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)  # set_wakeup_fd's requirement: a full pipe must not block a handler
        self._watcher = threading.Thread(target=self._watch, name="stop-signal", daemon=True)
        self._watcher.start()
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._write_fd)  # the watcher reads end-of-file and ends
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        os.close(self._read_fd)
