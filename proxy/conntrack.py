"""Stale UDP conntrack entries: which to delete (pure), and a client over the `conntrack` tool that deletes them.

UDP has no connection teardown, so a conntrack entry DNAT'd to a backend that is gone keeps sending a
client's datagrams (DNS!) to it until the entry times out, and an entry made while a service had no
endpoint (REJECTed, not NAT'd) keeps bypassing the new DNAT rules. Upstream removes both after writing
the rules (pkg/proxy/conntrack/cleanup.go, v1.28 shape: deleteStaleServiceConntrackEntries for service
ports that went from 0 to some serving endpoints, deleteStaleEndpointConntrackEntries for UDP endpoints
that went away), through pkg/util/conntrack's `conntrack -D` calls.

`flows_to_delete` is that decision as a pure function. Where upstream flushed a newly active service's
whole IP (`--orig-dst IP`), we add the service port (`--dport`), so other ports of the IP keep their
entries; for a gone endpoint we match its reply source (`--reply-src`), as upstream's newer netlink
filter does (filterForIPPortNAT / filterForPortNAT) — the backend after DNAT is the reply's source.
NodePorts match by destination port on any address. The client treats conntrack's exit status 1 with
"0 flow entries have been deleted" as success (nothing to delete), as upstream's exec wrapper did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from control.util.iptables import Runner, run_command
from proxy.model import ServicePortInfo, ServicePortName
from proxy.trackers import StaleEndpoint

_DELETED = re.compile(r"(\d+) flow entries have been deleted")


class ConntrackError(RuntimeError):
    """The conntrack tool failed for another reason than "nothing matched"."""


@dataclass(frozen=True, order=True)
class Flow:
    """A `conntrack -D` filter: every field set narrows it; at least one of the three is always set."""

    protocol: str                 # "udp"
    orig_dst: str = ""            # the service address the client sent to
    dport: int = 0                # destination port in the original direction
    reply_src: str = ""           # the backend that answers (after DNAT)

    def argv(self) -> list[str]:
        args = ["-D", "-p", self.protocol]
        if self.orig_dst:
            args += ["--orig-dst", self.orig_dst]
        if self.dport:
            args += ["--dport", str(self.dport)]
        if self.reply_src:
            args += ["--reply-src", self.reply_src]
        return args


def _service_ips(info: ServicePortInfo) -> list[str]:
    ips = [info.cluster_ip] if info.cluster_ip not in ("", "None") else []
    return ips + list(info.external_ips) + list(info.load_balancer_ips)


def flows_to_delete(*, services: Mapping[ServicePortName, ServicePortInfo],
                    old_services: Mapping[ServicePortName, ServicePortInfo],
                    stale_endpoints: Iterable[StaleEndpoint],
                    newly_active: Iterable[ServicePortName]) -> list[Flow]:
    """The entries to delete after a sync, sorted and without duplicates.

    A stale endpoint's service is looked up in the new map, else in the previous one: when service and
    endpoints go away together the entries to the dead backend still have to go (upstream skips these).
    """
    flows: set[Flow] = set()
    for name in newly_active:
        info = services.get(name)
        if info is None or info.protocol != "UDP":
            continue
        flows |= {Flow("udp", orig_dst=ip, dport=info.port) for ip in _service_ips(info)}
        if info.node_port:
            flows.add(Flow("udp", dport=info.node_port))
    for stale in stale_endpoints:
        info = services.get(stale.name) or old_services.get(stale.name)
        if info is None or info.protocol != "UDP":
            continue
        backend = stale.endpoint.ip
        flows |= {Flow("udp", orig_dst=ip, dport=info.port, reply_src=backend) for ip in _service_ips(info)}
        if info.node_port:
            flows.add(Flow("udp", dport=info.node_port, reply_src=backend))
    return sorted(flows)


class ConntrackClient(Protocol):
    def delete(self, flow: Flow) -> int:
        """Delete the entries matching `flow`; the number deleted. Raises ConntrackError."""
        ...


@dataclass(frozen=True)
class Conntrack:
    """The `conntrack` tool (conntrack-tools); `run` may wrap it, e.g. in `ip netns exec NS`."""

    run: Runner = run_command
    binary: str = "conntrack"

    def delete(self, flow: Flow) -> int:
        argv = [self.binary, *flow.argv()]
        result = self.run(argv)
        match = _DELETED.search(result.stderr + result.stdout)
        if result.returncode == 0 or (result.returncode == 1 and match and match.group(1) == "0"):
            return int(match.group(1)) if match else 0
        raise ConntrackError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")

    def list_entries(self, *args: str) -> str:
        """`conntrack -L` with filters (tests and debugging)."""
        return self.run([self.binary, "-L", *args]).stdout


def delete_all(client: ConntrackClient, flows: Sequence[Flow]) -> tuple[int, list[str]]:
    """Try every flow; (entries deleted, error messages). One failure does not stop the others."""
    deleted, errors = 0, []
    for flow in flows:
        try:
            deleted += client.delete(flow)
        except ConntrackError as exc:
            errors.append(str(exc))
    return deleted, errors
