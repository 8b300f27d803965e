"""A persistent, node-local IP address manager for the node's podCIDR.

Upstream's kubenet delegates this to the CNI `host-local` IPAM plugin (containernetworking/plugins
plugins/ipam/host-local): one record per reserved address on disk, allocation keyed by container id,
round-robin from the last reserved address so an address just freed is not handed out again at once
(a late packet or a stale endpoint for the old pod must not reach the new one). We keep the same
behaviour with one JSON document instead of one file per address, because the kubelet needs the whole
table at once (reconcile at start-up) and one atomic rename makes every change all-or-nothing.

Layout of the decision and the I/O:
- `IPAMState` and the functions `assign`, `unassign`, `retain_only` are pure: (state, request) → (new
  state, answer). Unit tests drive them with tables, without files.
- `LocalIPAM` holds the file: every call takes an exclusive `fcntl.flock` on a sibling lock file (the
  state file itself is replaced by rename, so it cannot carry the lock), reads the state, decides, and
  writes the new state with write-temp + fsync + rename + fsync(dir). Two kubelet processes (an old one
  still stopping while the new one starts) therefore never hand out one address twice, and a crash at any
  point leaves either the old or the new table, never a torn one.

Range: the network address, the gateway (the first host address, which the bridge holds) and the
broadcast address are never allocated. A corrupt state file is an error, not a reset: starting from an
empty table would hand out addresses running pods still hold.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

STATE_VERSION = 1


class IPAMError(RuntimeError):
    """The IPAM cannot answer: a bad range, an unreadable state file."""


class IPAMExhausted(IPAMError):
    """Every allocatable address of the range is in use."""


@dataclass(frozen=True)
class Allocation:
    """One address held by one owner (a sandbox id); the pod uid is recorded for operators and GC."""

    ip: str
    pod_uid: str


@dataclass(frozen=True)
class IPAMState:
    """The whole table. `last` is the most recently allocated address: the round-robin cursor."""

    cidr: str
    allocations: Mapping[str, Allocation] = field(default_factory=dict)  # owner id → allocation; read-only
    last: str | None = None

    def owner_of(self, ip: str) -> str | None:
        return next((owner for owner, a in self.allocations.items() if a.ip == ip), None)


def allocatable(cidr: str) -> list[ipaddress.IPv4Address]:
    """The addresses pods may get, in order: all hosts but the first (the bridge's gateway address)."""
    network = _network(cidr)
    if network.num_addresses < 4:
        raise IPAMError(f"pod CIDR {cidr} is too small: it needs a gateway and at least one pod address")
    first, last = int(network.network_address) + 2, int(network.broadcast_address) - 1
    return [ipaddress.IPv4Address(n) for n in range(first, last + 1)]


def gateway_of(cidr: str) -> str:
    """The bridge's address in the pod CIDR: its first host address (10.244.3.0/24 → 10.244.3.1)."""
    return str(_network(cidr).network_address + 1)


def assign(state: IPAMState, owner: str, pod_uid: str) -> tuple[IPAMState, str]:
    """The owner's address, allocating the next free one after `last` (wrapping) if it has none yet."""
    held = state.allocations.get(owner)
    if held is not None:
        return state, held.ip
    candidates = allocatable(state.cidr)
    in_use = {a.ip for a in state.allocations.values()}
    start = 0
    if state.last is not None:
        last = ipaddress.IPv4Address(state.last)
        start = next((i + 1 for i, ip in enumerate(candidates) if ip == last), 0)
    for offset in range(len(candidates)):
        ip = str(candidates[(start + offset) % len(candidates)])
        if ip not in in_use:
            allocations = {**state.allocations, owner: Allocation(ip=ip, pod_uid=pod_uid)}
            return replace(state, allocations=allocations, last=ip), ip
    raise IPAMExhausted(f"no free address in {state.cidr}: all {len(candidates)} are allocated")


def unassign(state: IPAMState, owner: str) -> tuple[IPAMState, str | None]:
    """Free the owner's address; returns it (None if the owner held none). `last` stays, so round-robin
    moves on instead of reusing the address just freed."""
    held = state.allocations.get(owner)
    if held is None:
        return state, None
    allocations = {k: v for k, v in state.allocations.items() if k != owner}
    return replace(state, allocations=allocations), held.ip


def retain_only(state: IPAMState, live_owners: Iterable[str]) -> tuple[IPAMState, dict[str, Allocation]]:
    """Free every allocation whose owner is not live; returns the new state and what was freed."""
    live = set(live_owners)
    freed = {k: v for k, v in state.allocations.items() if k not in live}
    if not freed:
        return state, {}
    kept = {k: v for k, v in state.allocations.items() if k in live}
    return replace(state, allocations=kept), freed


def to_document(state: IPAMState) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "cidr": state.cidr,
        "last": state.last,
        "allocations": {owner: {"ip": a.ip, "podUID": a.pod_uid} for owner, a in sorted(state.allocations.items())},
    }


def from_document(document: object) -> IPAMState:
    """Parse a state document; anything unexpected raises IPAMError (never a silent reset)."""
    try:
        if not isinstance(document, dict) or document.get("version") != STATE_VERSION:
            raise ValueError(f"expected a version {STATE_VERSION} document")
        allocations = {str(owner): Allocation(ip=str(ipaddress.IPv4Address(a["ip"])), pod_uid=str(a["podUID"]))
                       for owner, a in document["allocations"].items()}
        last = document.get("last")
        return IPAMState(cidr=str(_network(document["cidr"])), allocations=allocations,
                         last=str(ipaddress.IPv4Address(last)) if last is not None else None)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise IPAMError(f"IPAM state is not valid: {exc}") from None


def _network(cidr: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as exc:
        raise IPAMError(f"pod CIDR {cidr!r}: {exc}") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise IPAMError(f"pod CIDR {cidr!r}: only IPv4 is supported")
    return network


def state_path(kubelet_state_dir: str | os.PathLike[str]) -> Path:
    """Where the kubelet keeps the table: `<data dir>/kubelet/network/ipam.json` (KubeletConfig.state_dir)."""
    return Path(kubelet_state_dir) / "network" / "ipam.json"


class LocalIPAM:
    """The IPAM of one node's pod CIDR, kept in `path` (created on first use, with its directory).

    Every method is one locked read-decide-write transaction, safe across threads and processes. When the
    node's podCIDR changes, existing allocations are kept (their pods still hold those addresses) until
    they are released or reconciled away; new ones come from the new range.
    """

    def __init__(self, path: str | os.PathLike[str], cidr: str) -> None:
        self._path = Path(path)
        self._lock_path = self._path.with_name(self._path.name + ".lock")
        self._cidr = str(_network(cidr))
        allocatable(self._cidr)  # refuse a range with no pod address now, not at the first allocation

    @property
    def path(self) -> Path:
        return self._path

    @property
    def gateway(self) -> str:
        return gateway_of(self._cidr)

    @property
    def prefix_len(self) -> int:
        return _network(self._cidr).prefixlen

    def allocate(self, owner_id: str, pod_uid: str) -> str:
        """The owner's address: the same one again if it already has one (idempotent)."""
        with self._transaction() as (state, commit):
            new, ip = assign(state, owner_id, pod_uid)
            commit(new)
            return ip

    def release(self, owner_id: str) -> str | None:
        """Free the owner's address (None if it held none): safe to call twice."""
        with self._transaction() as (state, commit):
            new, ip = unassign(state, owner_id)
            commit(new)
            return ip

    def reconcile(self, live_owner_ids: Iterable[str]) -> dict[str, Allocation]:
        """Free the addresses of owners not in `live_owner_ids` (sandboxes gone while the kubelet was down)."""
        with self._transaction() as (state, commit):
            new, freed = retain_only(state, live_owner_ids)
            commit(new)
            return freed

    def allocations(self) -> dict[str, Allocation]:
        """A snapshot of the table (owner id → allocation)."""
        with self._transaction() as (state, _commit):
            return dict(state.allocations)

    @contextmanager
    def _transaction(self) -> Iterator[tuple[IPAMState, Callable[[IPAMState], None]]]:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
            state = replace(self._read(), cidr=self._cidr)
            pending: list[IPAMState] = []
            yield state, pending.append
            if pending and pending[-1] != state:
                self._write(pending[-1])

    def _read(self) -> IPAMState:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return IPAMState(cidr=self._cidr)
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise IPAMError(f"{self._path}: not JSON ({exc}); refusing to start from an empty table") from None
        try:
            return from_document(document)
        except IPAMError as exc:
            raise IPAMError(f"{self._path}: {exc}") from None

    def _write(self, state: IPAMState) -> None:
        data = json.dumps(to_document(state), indent=1).encode()
        tmp = self._path.with_name(f".{self._path.name}.{os.getpid()}.tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._path)
        dir_fd = os.open(self._path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)  # the rename itself must survive a power loss
        finally:
            os.close(dir_fd)
