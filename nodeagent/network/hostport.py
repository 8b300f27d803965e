"""hostPort rules as pure functions: which ports a pod asks for, where they clash, and the nat rules.

Upstream: pkg/kubelet/dockershim/network/hostport/hostport_manager.go (kubenet's hostport handling) and
hostport.go, in the shape they render:

- nat `KUBE-HOSTPORTS`, reached from PREROUTING (traffic from other hosts and pods) and OUTPUT (from this
  host) by `-m addrtype --dst-type LOCAL` jumps ("kube hostport portals"), so only packets addressed to
  one of this node's own addresses go there;
- one `KUBE-HP-<hash>` chain per (sandbox, hostPort, protocol, hostIP), the hash being upstream's
  `getHostportChain`: the first 16 base32 characters of sha256(sandbox id + hostPort + protocol + hostIP),
  so a restarted kubelet (or upstream's) names the same chain; `KUBE-HOSTPORTS` holds one
  `-m <proto> -p <proto> --dport <hostPort> -j KUBE-HP-…` per mapping;
- in each `KUBE-HP-…`: `-s <podIP> -j KUBE-MARK-MASQ` (a pod reaching its own hostPort: hairpin, answered
  only if masqueraded), then `DNAT --to-destination <podIP>:<containerPort>`, with `-d <hostIP>` when
  the port names a hostIP other than 0.0.0.0.

Departure: upstream's Add/Remove splice one pod's chains into the table it reads back; here the whole
state (every pod's mappings) is rendered at once and `KUBE-HOSTPORTS` rewritten whole, stale `KUBE-HP-`
chains deleted with `-X` in the same restore, as the proxy renders its tables. A resync and a removal are
then the same operation, and a kubelet restart that lost a pod's removal cleans up the next time.

`conflicts` reports what upstream's openHostports finds by binding: two pods of this node asking for the
same port and protocol on overlapping host addresses (0.0.0.0 overlaps every address).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.util.iptables import JumpRule

HOSTPORTS_CHAIN = "KUBE-HOSTPORTS"
HOSTPORT_CHAIN_PREFIX = "KUBE-HP-"
MARK_MASQ_CHAIN = "KUBE-MARK-MASQ"
DEFAULT_MASQ_MARK = "0x4000"  # upstream's masqueradeBit 14, as the kube-proxy writes it
PROTOCOLS = ("TCP", "UDP", "SCTP")
_WILDCARDS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class PortMapping:
    """One container port with a hostPort (upstream hostport.PortMapping)."""

    host_port: int
    container_port: int
    protocol: str = "TCP"
    host_ip: str = ""

    @property
    def wildcard(self) -> bool:
        return self.host_ip in _WILDCARDS

    def overlaps(self, other: PortMapping) -> bool:
        """Same port and protocol on a host address both would answer on."""
        return (self.host_port == other.host_port and self.protocol == other.protocol
                and (self.wildcard or other.wildcard or self.host_ip == other.host_ip))

    def describe(self) -> str:
        where = "" if self.wildcard else f"{self.host_ip}:"
        return f"{where}{self.host_port}/{self.protocol}"


@dataclass(frozen=True)
class PodPortMapping:
    """One sandbox's mappings and the address they go to (upstream hostport.PodPortMapping)."""

    sandbox_id: str
    pod: str  # upstream's podFullName: name_namespace
    ip: str
    mappings: tuple[PortMapping, ...]


class HostportError(Exception):
    """A pod's hostPorts cannot be set up (a clash with another pod, a bad port); its sandbox fails."""


def pod_full_name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('name', '')}_{meta.get('namespace') or 'default'}"


def port_mappings(pod: Mapping[str, Any]) -> tuple[PortMapping, ...]:
    """The ports of the pod's containers that have a hostPort (> 0), as upstream's makePortMappings; a
    hostNetwork pod has none (its ports are the host's already). Raises HostportError on a bad value."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork"):
        return ()
    found: list[PortMapping] = []
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            host_port = int(port.get("hostPort") or 0)
            if host_port <= 0:
                continue
            protocol = str(port.get("protocol") or "TCP").upper()
            container_port = int(port.get("containerPort") or 0)
            host_ip = str(port.get("hostIP") or "")
            if protocol not in PROTOCOLS:
                raise HostportError(f"hostPort {host_port}: unsupported protocol {protocol}")
            if not 0 < host_port < 65536 or not 0 < container_port < 65536:
                raise HostportError(f"hostPort {host_port} → containerPort {container_port}: out of range")
            if host_ip not in _WILDCARDS:
                try:
                    ipaddress.ip_address(host_ip)
                except ValueError as exc:
                    raise HostportError(f"hostPort {host_port}: hostIP {host_ip!r} is not an IP address") from exc
            mapping = PortMapping(host_port, container_port, protocol, host_ip)
            if mapping not in found:
                found.append(mapping)
    return tuple(found)


def conflicts(candidate: PodPortMapping, others: Iterable[PodPortMapping]) -> list[str]:
    """Upstream-like messages for each of `candidate`'s mappings another sandbox already holds."""
    problems = []
    for mine in candidate.mappings:
        for other in others:
            if other.sandbox_id == candidate.sandbox_id:
                continue
            clash = next((theirs for theirs in other.mappings if mine.overlaps(theirs)), None)
            if clash is not None:
                problems.append(f"cannot open hostport {mine.describe()} for pod {candidate.pod}: "
                                f"already used by pod {other.pod} ({clash.describe()})")
                break
    return problems


def chain_name(sandbox_id: str, mapping: PortMapping) -> str:
    """upstream getHostportChain: KUBE-HP- + base32(sha256(id + hostPort + protocol + hostIP))[:16]."""
    digest = hashlib.sha256(f"{sandbox_id}{mapping.host_port}{mapping.protocol}{mapping.host_ip}".encode()).digest()
    return HOSTPORT_CHAIN_PREFIX + base64.b32encode(digest).decode()[:16]


def is_hostport_chain(chain: str) -> bool:
    return chain == HOSTPORTS_CHAIN or chain.startswith(HOSTPORT_CHAIN_PREFIX)


def jump_rules() -> tuple[JumpRule, ...]:
    """upstream ensureKubeHostportChains: PREROUTING and OUTPUT send local destinations to KUBE-HOSTPORTS."""
    rule = ("-m", "comment", "--comment", "kube hostport portals", "-m", "addrtype", "--dst-type", "LOCAL",
            "-j", HOSTPORTS_CHAIN)
    return (JumpRule("nat", "PREROUTING", rule), JumpRule("nat", "OUTPUT", rule))


def _quoted(text: str) -> str:
    return f'"{text}"'


def chain_rules(entries: Sequence[PodPortMapping]) -> dict[str, list[tuple[str, ...]]]:
    """chain → its rules (argv after `-A CHAIN`): KUBE-HOSTPORTS first, then each KUBE-HP- chain."""
    out: dict[str, list[tuple[str, ...]]] = {HOSTPORTS_CHAIN: []}
    for entry in sorted(entries, key=lambda e: (e.pod, e.sandbox_id)):
        for pm in entry.mappings:
            proto = pm.protocol.lower()
            chain = chain_name(entry.sandbox_id, pm)
            comment = ("-m", "comment", "--comment", f"{entry.pod} hostport {pm.host_port}")
            out[HOSTPORTS_CHAIN].append((*comment, "-m", proto, "-p", proto, "--dport", str(pm.host_port),
                                         "-j", chain))
            destination = () if pm.wildcard else ("-d", pm.host_ip)
            out[chain] = [
                (*comment, "-s", entry.ip, "-j", MARK_MASQ_CHAIN),
                (*comment, "-m", proto, "-p", proto, *destination, "-j", "DNAT",
                 f"--to-destination={entry.ip}:{pm.container_port}"),
            ]
    return out


def _line(chain: str, rule: Sequence[str]) -> str:
    return " ".join(["-A", chain, *(_quoted(a) if " " in a else a for a in rule)])


def render(entries: Sequence[PodPortMapping], existing_chains: Iterable[str], *,
           masq_mark: str = DEFAULT_MASQ_MARK) -> str:
    """nat restore text (for `--noflush`) that makes the hostport chains exactly `entries`: KUBE-HOSTPORTS
    and every wanted KUBE-HP- chain declared (so flushed) and filled, stale KUBE-HP- chains deleted.
    KUBE-MARK-MASQ is declared (with the mark rule) only when `existing_chains` lacks it: where the
    kube-proxy runs, it owns that chain and it is left alone."""
    existing = set(existing_chains)
    wanted = chain_rules(entries)
    out = ["*nat"]
    if MARK_MASQ_CHAIN not in existing:
        out += [f":{MARK_MASQ_CHAIN} - [0:0]", f"-A {MARK_MASQ_CHAIN} -j MARK --or-mark {masq_mark}"]
    out += [f":{chain} - [0:0]" for chain in wanted]
    out += [_line(chain, rule) for chain, rules in wanted.items() for rule in rules]
    stale = sorted(c for c in existing if c.startswith(HOSTPORT_CHAIN_PREFIX) and c not in wanted)
    out += [f":{chain} - [0:0]" for chain in stale] + [f"-X {chain}" for chain in stale]
    out.append("COMMIT")
    return "\n".join(out) + "\n"


def render_removal(existing_chains: Iterable[str]) -> str:
    """nat restore text that flushes and deletes every hostport chain (the jumps must be gone first)."""
    chains = sorted(c for c in existing_chains if is_hostport_chain(c))
    if not chains:
        return ""
    return "\n".join(["*nat", *(f":{c} - [0:0]" for c in chains), *(f"-X {c}" for c in chains), "COMMIT"]) + "\n"
