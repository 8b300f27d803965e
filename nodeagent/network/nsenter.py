"""Run a callable inside a network namespace, on a thread of this process.

setns(2) with CLONE_NEWNET moves only the calling thread, so the call runs on a fresh thread that enters
the namespace, runs it and ends: no other code of the process ever runs there by accident, and sockets the
call opens (a netlink socket for pyroute2's `IPRoute()`) belong to that namespace for their whole life.

Why not pyroute2's own `IPRoute(netns=...)`: it forks a child process to open each socket in the namespace
(pyroute2 0.9 netns.create_socket → ChildProcess). Forking a process with dozens of threads is slow under
load — measured in the kubelet while 30 pods start at once (bench/pod_startup.py): wiring one pod took
0.24 s on average, most of it that fork; one call here costs ~1.5 ms against ~7 ms for the fork on an
idle host. Python 3.11 has no `os.setns` (3.12 does): libc's setns through ctypes is the same system call.
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


def call_in_netns(path: str, action: Callable[[], T], *, timeout: float = 60.0) -> T:
    """`action()` in the network namespace at `path` (`/proc/PID/ns/net`, `/var/run/netns/NAME`); its
    result is returned and its exception raised here. TimeoutError if it has not ended after `timeout`."""
    outcome: dict[str, object] = {}

    def body() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            outcome["result"] = action()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which re-raises it
            outcome["error"] = exc

    thread = threading.Thread(target=body, name=f"netns-{os.path.basename(os.path.dirname(path)) or path}",
                              daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"call in network namespace {path} still running after {timeout:g}s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
