"""The node's hostPort state and its iptables I/O (upstream hostport_manager.go Add / Remove, plus the
resync at start that upstream leaves to the next Add).

What each sandbox was given is kept in memory and in a small JSON file under the kubelet's state dir
(upstream keeps a pod's port mappings in the dockershim sandbox checkpoint), so a restarted kubelet knows
the mappings of the sandboxes it adopts without re-reading pod specs:

- `add(sandbox_id, pod, ip)`, when the sandbox got its address: refused with HostportError if another
  sandbox holds an overlapping port (nothing changes then), else recorded and the table rewritten;
- `remove(sandbox_id)`, when the sandbox's network is torn down: forgotten and the table rewritten
  (idempotent; a sandbox with no hostPorts costs nothing);
- `start(live_sandbox_ids)` at kubelet start: entries of sandboxes that are gone are dropped, the table
  rewritten — which deletes every KUBE-HP- chain no live sandbox owns — and the jumps ensured;
- a node with no hostPorts has no hostport rules: the last removal deletes the jumps and chains;
- `resync()` every sync period (rules someone flushed come back); `remove_all` for `slimkube down`.

Every write renders the whole state (hostport.render) and applies it with one `iptables-restore
--noflush` on the nat table; only KUBE-HOSTPORTS, KUBE-HP-* (and KUBE-MARK-MASQ when absent) are named.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from nodeagent.network import hostport
from nodeagent.network.hostport import HostportError, PodPortMapping, PortMapping

log = logging.getLogger(__name__)

STATE_FILE = "hostports.json"


class IptablesClient(Protocol):
    """The slice of control.util.iptables.Iptables used here."""

    def restore(self, text: str) -> None: ...

    def save(self, table: str) -> str: ...

    def has_rule(self, table: str, chain: str, rule: Sequence[str]) -> bool: ...

    def insert_rule(self, table: str, chain: str, rule: Sequence[str]) -> None: ...

    def delete_rule(self, table: str, chain: str, rule: Sequence[str]) -> None: ...


def state_path(state_dir: str) -> Path:
    return Path(state_dir) / STATE_FILE


def nat_chains(iptables: IptablesClient) -> frozenset[str]:
    """The KUBE-* chains the nat table declares now (`:NAME` lines of its -save output)."""
    return frozenset(line[1:].split(" ", 1)[0] for line in iptables.save("nat").splitlines()
                     if line.startswith(":KUBE-"))


def _load(path: Path) -> dict[str, PodPortMapping]:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable hostport state %s: %s", path, exc)
        return {}
    entries = {}
    for sandbox_id, item in (raw or {}).items():
        try:
            entries[sandbox_id] = PodPortMapping(sandbox_id, str(item["pod"]), str(item["ip"]),
                                                 tuple(PortMapping(**m) for m in item["mappings"]))
        except (KeyError, TypeError) as exc:
            log.warning("ignoring a bad hostport state entry %s: %s", sandbox_id, exc)
    return entries


class HostportManager:
    def __init__(self, iptables: IptablesClient, path: Path | None) -> None:
        self._iptables = iptables
        self._path = path
        self._lock = threading.Lock()
        self._entries: dict[str, PodPortMapping] = _load(path) if path is not None else {}

    def entries(self) -> dict[str, PodPortMapping]:
        with self._lock:
            return dict(self._entries)

    def add(self, sandbox_id: str, pod: Mapping[str, Any], ip: str) -> tuple[PortMapping, ...]:
        """Open the pod's hostPorts to `ip` (returned); HostportError when they clash or are invalid."""
        mappings = hostport.port_mappings(pod)
        if not mappings:
            return ()
        entry = PodPortMapping(sandbox_id, hostport.pod_full_name(pod), ip, mappings)
        with self._lock:
            problems = hostport.conflicts(entry, self._entries.values())
            if problems:
                raise HostportError("; ".join(problems))
            previous = self._entries.get(sandbox_id)
            self._entries[sandbox_id] = entry
            try:
                self._apply()
            except BaseException:
                if previous is None:
                    self._entries.pop(sandbox_id, None)
                else:
                    self._entries[sandbox_id] = previous
                raise
            self._save()
        return mappings

    def remove(self, sandbox_id: str) -> bool:
        """Close the sandbox's hostPorts; False if it had none. Safe to repeat."""
        with self._lock:
            if self._entries.pop(sandbox_id, None) is None:
                return False
            self._save()
            self._apply()
        return True

    def start(self, live_sandbox_ids: Iterable[str]) -> list[str]:
        """Forget sandboxes that are gone (returned), rewrite the table (stale chains go), ensure jumps."""
        live = set(live_sandbox_ids)
        with self._lock:
            gone = sorted(set(self._entries) - live)
            for sandbox_id in gone:
                del self._entries[sandbox_id]
            self._save()
            self._apply()
        return gone

    def resync(self) -> None:
        with self._lock:
            self._apply()

    def remove_all(self) -> None:
        """Delete the jumps (every copy), then every hostport chain; state forgotten. For `slimkube down`."""
        with self._lock:
            self._entries.clear()
            remove_rules(self._iptables)
            if self._path is not None:
                self._path.unlink(missing_ok=True)

    def _apply(self) -> None:
        """With no hostPorts on the node there are no hostport rules at all (the jumps and chains of an
        earlier run removed); otherwise the whole state is rendered and the jumps ensured."""
        existing = nat_chains(self._iptables)
        if not self._entries:
            if any(hostport.is_hostport_chain(chain) for chain in existing):
                remove_rules(self._iptables)
            return
        self._iptables.restore(hostport.render(list(self._entries.values()), existing))
        for jump in hostport.jump_rules():
            if not self._iptables.has_rule(jump.table, jump.chain, jump.rule):
                self._iptables.insert_rule(jump.table, jump.chain, jump.rule)

    def _save(self) -> None:
        if self._path is None:
            return
        data = {sid: {"pod": e.pod, "ip": e.ip, "mappings": [asdict(m) for m in e.mappings]}
                for sid, e in self._entries.items()}
        tmp = self._path.with_name(self._path.name + ".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, self._path)


def remove_rules(iptables: IptablesClient) -> None:
    """The hostport jumps (every copy) and chains, whoever wrote them; nothing else."""
    for jump in hostport.jump_rules():
        while iptables.has_rule(jump.table, jump.chain, jump.rule):
            iptables.delete_rule(jump.table, jump.chain, jump.rule)
    text = hostport.render_removal(nat_chains(iptables))
    if text:
        iptables.restore(text)
