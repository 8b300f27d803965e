"""SIGINT/SIGTERM as a `threading.Event`, for the long-running subcommands (`up`, `agent`).

The main thread waits on the event (with timeouts, so progress lines keep coming while it starts); the
handler only sets it, so a Ctrl-C during start-up still reaches the orderly stop path instead of
raising KeyboardInterrupt in the middle of a Docker call. The previous handlers come back on exit.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum
        self.event.set()

    def __enter__(self) -> StopOnSignal:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
