"""Service ClusterIP and NodePort allocation (upstream: pkg/registry/core/service/ipallocator and
portallocator, with their repair controllers in .../controller/repair.go).

Upstream keeps one bitmap per range in etcd and updates it with compare-and-swap. We keep one key per
allocated value instead — `/registry/ranges/serviceips/{ip}`, `/registry/ranges/servicenodeports/{port}` —
so allocation is a single `create` that fails with `KeyExists` when another server (or an earlier run)
holds the value: no duplicates even with two API servers on one etcd, and the state survives restarts.

A value is reserved before the Service is stored and released after it is removed. A crash between
the two leaks a reservation; `repair` (run at start-up, before serving) drops reservations no stored
Service uses, as upstream's repair loop does.

Dynamic allocation walks the range from a cursor that only moves forward, so a value just released is
not handed out again at once (clients may still hold it; upstream picks at random for the same reason).
The first address of the service CIDR is never handed out dynamically: it belongs to the `kubernetes`
Service, which asks for it by name.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable, Iterable

from control.storage.interface import KeyExists, KeyNotFound, Storage

IP_PREFIX = "/registry/ranges/serviceips/"
NODE_PORT_PREFIX = "/registry/ranges/servicenodeports/"
NODE_PORT_RANGE = (30000, 32767)


class AllocationError(ValueError):
    """The value is taken, outside the range, or the range is full (the API server answers 422)."""


class _KeyAllocator:
    """Values `first..last` (indexes into a range), reserved as storage keys under `prefix`."""

    def __init__(self, storage: Storage, prefix: str, size: int) -> None:
        self._storage = storage
        self._prefix = prefix
        self._size = size
        self._cursor = 0
        self._lock = threading.Lock()

    def _key(self, value: str) -> str:
        return f"{self._prefix}{value}"

    def reserve(self, value: str) -> bool:
        try:
            self._storage.create(self._key(value), b"{}")
            return True
        except KeyExists:
            return False

    def release(self, value: str) -> None:
        try:
            self._storage.delete(self._key(value))
        except KeyNotFound:
            pass

    def reserved(self) -> list[str]:
        return [r.key[len(self._prefix):] for r in self._storage.list(self._prefix).records]

    def next_free(self, render: Callable[[int], str], first: int) -> str:
        """Reserve the first free index at or after the cursor (wrapping), skipping indexes < `first`."""
        with self._lock:
            span = self._size - first
            if span <= 0:
                raise AllocationError("range is empty")
            taken = set(self.reserved())
            for step in range(span):
                index = first + (self._cursor + step) % span
                value = render(index)
                if value not in taken and self.reserve(value):
                    self._cursor = (index - first + 1) % span
                    return value
            raise AllocationError("range is full")


def kubernetes_service_ip(cidr: str) -> str:
    """The first usable address of the service CIDR: the `kubernetes` Service's, never handed out
    dynamically (and a name in the serving certificate)."""
    return str(ipaddress.ip_network(cidr, strict=True).network_address + 1)


class ClusterIPAllocator:
    """ClusterIPs from the service CIDR (10.96.0.0/12 by default)."""

    def __init__(self, storage: Storage, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=True)
        # Usable addresses are network+1 .. broadcast-1 (upstream never hands out either end).
        usable = self.network.num_addresses - 2
        if usable < 2:
            raise ValueError(f"service CIDR {cidr} is too small")
        self._keys = _KeyAllocator(storage, IP_PREFIX, usable)

    @property
    def kubernetes_ip(self) -> str:
        """The first usable address, kept for the `kubernetes` Service."""
        return kubernetes_service_ip(str(self.network))

    def _render(self, index: int) -> str:
        return str(self.network.network_address + 1 + index)

    def allocate(self, requested: str | None = None) -> str:
        """Reserve `requested` (an address inside the CIDR) or the next free one."""
        if not requested:
            return self._keys.next_free(self._render, first=1)
        try:
            address = ipaddress.ip_address(requested)
        except ValueError:
            raise AllocationError("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)") from None
        if address not in self.network or address in (self.network.network_address,
                                                      self.network.broadcast_address):
            raise AllocationError(f"the provided IP ({requested}) is not in the valid range. "
                                  f"The range of valid IPs is {self.network}")
        if not self._keys.reserve(str(address)):
            raise AllocationError(f"failed to allocate IP {requested}: provided IP is already allocated")
        return str(address)

    def release(self, address: str) -> None:
        self._keys.release(address)

    def repair(self, in_use: Iterable[str]) -> list[str]:
        """Drop reservations no Service holds; returns what was dropped."""
        keep = set(in_use)
        dropped = [ip for ip in self._keys.reserved() if ip not in keep]
        for ip in dropped:
            self._keys.release(ip)
        for ip in keep:
            self._keys.reserve(ip)
        return dropped


class NodePortAllocator:
    """NodePorts from 30000-32767 (upstream's --service-node-port-range default)."""

    def __init__(self, storage: Storage, port_range: tuple[int, int] = NODE_PORT_RANGE) -> None:
        self.first, self.last = port_range
        self._keys = _KeyAllocator(storage, NODE_PORT_PREFIX, self.last - self.first + 1)

    def allocate(self, requested: int | None = None) -> int:
        if not requested:
            return int(self._keys.next_free(lambda i: str(self.first + i), first=0))
        if not self.first <= requested <= self.last:
            raise AllocationError(f"provided port is not in the valid range. "
                                  f"The range of valid ports is {self.first}-{self.last}")
        if not self._keys.reserve(str(requested)):
            raise AllocationError("provided port is already allocated")
        return requested

    def release(self, port: int) -> None:
        self._keys.release(str(port))

    def repair(self, in_use: Iterable[int]) -> list[int]:
        keep = {str(p) for p in in_use}
        dropped = [int(p) for p in self._keys.reserved() if p not in keep]
        for port in dropped:
            self._keys.release(str(port))
        for value in keep:
            self._keys.reserve(value)
        return dropped
