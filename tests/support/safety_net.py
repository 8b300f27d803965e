"""The safety net for service traffic in tests.

A test that sends packets to service virtual IPs must be sure none of them can leave the machine when a
rule is missing or wrong. A blackhole route would break the very traffic under test (the route lookup for
a locally originated connect() happens before nat OUTPUT, and a blackhole makes it fail with EINVAL), so
the test's service CIDR is routed to an empty local bridge instead: DNAT in OUTPUT or PREROUTING still
re-routes a matched packet to its pod, while a virtual IP without a rule only ARPs on a bridge with
nothing attached and times out.

The CIDR is chosen so that no route on the host overlaps it (a real cluster on the same host keeps its
own 10.96.0.0/12), and the bridge is named `sktest…` so the suite's leftover check finds it if a crash
leaves it behind.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.hostnet import routed_networks

# Just above upstream's default 10.96.0.0/12 (10.96.0.0-10.111.255.255), below the 10.244.0.0/16 pod range.
CANDIDATES = tuple(f"10.{n}.0.0/16" for n in range(112, 128))


def free_service_cidr(*, avoid: tuple[str, ...] = ()) -> str:
    """A /16 service CIDR that no route on this host (and nothing in `avoid`) overlaps."""
    taken = routed_networks() + [ipaddress.ip_network(c) for c in avoid]
    for candidate in CANDIDATES:
        network = ipaddress.ip_network(candidate)
        if not any(network.overlaps(t) for t in taken):
            return candidate
    raise RuntimeError(f"every candidate service CIDR overlaps a route on this host: {CANDIDATES}")


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


@contextmanager
def service_cidr_net(cidr: str, bridge: str, *, netns: str | None = None) -> Iterator[str]:
    """Route `cidr` to a new empty bridge `bridge` for the duration of the block; both go at the end, even
    when the block fails. Refuses a CIDR some route already covers and a bridge name outside `sktest*`.
    With `netns`, inside that network namespace (e.g. a node of `up --nodes`) instead of the host's."""
    if not bridge.startswith("sktest") or len(bridge) > 15:
        raise ValueError(f"bridge {bridge!r}: a test link name starts with 'sktest' and has at most 15 chars")
    network = ipaddress.ip_network(cidr)
    where = ["-n", netns] if netns else []
    routes = json.loads(_ip(*where, "-j", "route")) if netns else None
    taken = ([ipaddress.ip_network(r["dst"], strict=False) for r in routes if r["dst"] != "default"]
             if routes is not None else routed_networks())
    clash = [str(r) for r in taken if r.overlaps(network)]
    if clash:
        raise RuntimeError(f"service CIDR {cidr} overlaps routes already there: {clash}")
    _ip(*where, "link", "add", bridge, "type", "bridge")
    try:
        _ip(*where, "link", "set", bridge, "up")
        _ip(*where, "route", "add", cidr, "dev", bridge)
        yield bridge
    finally:
        subprocess.run(["ip", *where, "route", "del", cidr, "dev", bridge], capture_output=True)
        subprocess.run(["ip", *where, "link", "delete", bridge], capture_output=True)


def routed_to(address: str) -> str:
    """The device the host routes `address` through (`ip route get`: a lookup, no packet is sent)."""
    out = subprocess.run(["ip", "-j", "route", "get", address], capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["dev"]
