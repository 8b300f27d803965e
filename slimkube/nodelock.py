"""One node process per data directory: `slimkube up` and `slimkube agent` hold an exclusive `flock` on
`DIR/node.lock` while they run, and `slimkube down` takes the same lock before it removes anything, so
`down` cannot pull the network from under a running kubelet and two kubelets never share one IPAM table.

flock (not a pid file alone) because the kernel drops the lock when its holder dies, even by kill -9:
a stale file never blocks the next `up`. The holder's pid is written into the file only to name it in
the refusal message.
"""

from __future__ import annotations

import fcntl
import os

LOCK_NAME = "node.lock"


class LockHeld(RuntimeError):
    """Another process holds the data directory; the message names it."""


class NodeLock:
    def __init__(self, data_dir: str) -> None:
        self.path = os.path.join(data_dir, LOCK_NAME)
        self._fd: int | None = None

    def acquire(self, *, what: str) -> None:
        """Take the lock or raise LockHeld at once (never waits)."""
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockHeld(f"a slimkube node process (pid {holder}) is running with data dir "
                           f"{os.path.dirname(self.path)}; stop it before {what}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> NodeLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
