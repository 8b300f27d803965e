"""Run a callable in a network namespace from a thread of this process (for in-process netlink/iptc code).

python-iptables (and anything else using sockets in-process) acts on the calling thread's network namespace,
so the code under test runs in a fresh thread that entered the test's namespace with setns(2) first
(`/var/run/netns/NAME`, as `ip netns exec` opens it). setns(CLONE_NEWNET) changes only the calling thread;
the thread ends with the call, so no other code ever runs in that namespace by accident. Processes the
callable forks inherit the thread's namespace. Python 3.11 has no `os.setns` (added in 3.12): libc's setns
through ctypes is the same system call.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


def run_in_netns(namespace: str, action: Callable[[], T], *, timeout: float = 120.0) -> T:
    """`action()` in namespace `namespace` (made with `ip netns add`); its result returned, its error raised."""
    outcome: dict[str, object] = {}

    def body() -> None:
        try:
            fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            outcome["result"] = action()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=body, name=f"netns-{namespace}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"action in netns {namespace} still running after {timeout:g}s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
