"""sd_notify(3): tell the service manager about a daemon's state (`READY=1`, `STOPPING=1`, `STATUS=...`).

The protocol (systemd's sd_notify.c, documented in sd_notify(3)): one datagram of newline-separated
`VAR=value` lines to the AF_UNIX SOCK_DGRAM socket named by `$NOTIFY_SOCKET`; a name starting with `@` is in
the abstract namespace (the `@` stands for a leading NUL byte). With the variable unset — not started by
systemd with `Type=notify`, or a test that sets none — every call does nothing, so daemons call it
unconditionally. A send that fails is logged and ignored: the daemon works on, as systemd's own helper
returns an error its callers usually drop.

Written here rather than taken from PyPI: `systemd-python` needs libsystemd headers and a compiler at
install time, and the pure-Python `sdnotify` package (unreleased since 2017) swallows every error
silently; the protocol is these thirty lines.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)

READY = "READY=1"
STOPPING = "STOPPING=1"


def socket_address(value: str) -> str | bytes | None:
    """The address `$NOTIFY_SOCKET` names: a path, an abstract name (`@x` → b"\\0x"), or None if unusable."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # sd_notify accepts only absolute paths and abstract names (vsock is not supported here)


def notify(state: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Send `state` (e.g. READY, or "READY=1\\nSTATUS=serving") to `$NOTIFY_SOCKET`; True if it was sent,
    False if there is no socket to send to or the send failed."""
    value = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not value:
        return False
    address = socket_address(value)
    if address is None:
        log.warning("NOTIFY_SOCKET=%r is neither an absolute path nor an abstract name; not notifying", value)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(state.encode(), address)
    except OSError as exc:
        log.warning("sd_notify %r to %s failed: %s", state, value, exc)
        return False
    return True


def ready() -> None:
    """READY=1: start-up is finished (the hook `slimkube server|agent|proxy` call once really ready)."""
    notify(READY)


def stopping() -> None:
    """STOPPING=1: shutting down (called before the daemon starts stopping its parts)."""
    notify(STOPPING)
