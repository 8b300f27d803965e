"""Host network facts tests and benchmarks need to stay clear of a real node on the same host."""

from __future__ import annotations

import ipaddress
import json
import random
import subprocess


def routed_networks() -> list[ipaddress.IPv4Network]:
    """The destinations of this host's routes (the default route left out)."""
    out = subprocess.run(["ip", "-j", "route"], capture_output=True, text=True, check=True).stdout
    return [ipaddress.ip_network(r["dst"], strict=False) for r in json.loads(out) if r["dst"] != "default"]


def free_pod_cidr() -> str:
    """A 10.244.N.0/24 (N ≥ 100) that no route on this host overlaps (a real node here uses a low N)."""
    taken = routed_networks()
    for n in random.sample(range(100, 255), 155):
        candidate = ipaddress.ip_network(f"10.244.{n}.0/24")
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    raise RuntimeError("no free 10.244.N.0/24 on this host")


def free_block(prefix: str, candidates: range, count: int) -> int:
    """The first n in `candidates` with `prefix.n..n+count-1.0/24` clear of every route on this host."""
    taken = routed_networks()
    for n in candidates:
        nets = [ipaddress.ip_network(f"{prefix}.{n + i}.0/24") for i in range(count)]
        if not any(net.overlaps(t) for net in nets for t in taken):
            return n
    raise RuntimeError(f"no {count} free /24s under {prefix}")
