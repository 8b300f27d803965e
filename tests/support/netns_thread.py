"""Run a callable in a named network namespace from a thread of this process (for in-process netlink/iptc
code): nodeagent/network/nsenter.py's `call_in_netns` on `/var/run/netns/NAME`, as `ip netns exec` opens it.
Processes the callable forks inherit the thread's namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from nodeagent.network.nsenter import call_in_netns

T = TypeVar("T")


def run_in_netns(namespace: str, action: Callable[[], T], *, timeout: float = 120.0) -> T:
    """`action()` in namespace `namespace` (made with `ip netns add`); its result returned, its error raised."""
    return call_in_netns(f"/var/run/netns/{namespace}", action, timeout=timeout)
