"""syncProxyRules as a pure function: services, endpoints and node facts → one iptables-restore text.

Follows kubernetes pkg/proxy/iptables/proxier.go (v1.29-1.30 `syncProxyRules`, `writeServiceToEndpointRules`,
`iptablesJumpChains`; looked up in the public source, not copied), step by step:

- filter: KUBE-SERVICES / KUBE-EXTERNAL-SERVICES REJECT a service port with no ready endpoint (cluster IP,
  resp. externalIPs, load-balancer IPs and NodePorts) so clients are refused at once instead of timing out;
  KUBE-FORWARD drops INVALID conntrack state and accepts marked and established traffic; KUBE-NODEPORTS and
  KUBE-PROXY-FIREWALL exist for the jumps (no health-check node ports, no loadBalancerSourceRanges here);
  KUBE-FIREWALL (upstream's copy of the kubelet's rule) blocks outside traffic to 127.0.0.0/8 that was not
  DNATed, the mitigation for route_localnet when localhostNodePorts is on.
- nat: KUBE-SERVICES matches cluster IP, externalIPs and load-balancer IPs per port, and ends with the jump
  to KUBE-NODEPORTS (addrtype LOCAL, or one rule per node address inside nodePortAddresses); KUBE-SVC-*
  first marks traffic for masquerade (masqueradeAll, else sources outside the cluster CIDR), then ClientIP
  affinity (`-m recent --rcheck --seconds N --reap`), then picks an endpoint with `-m statistic --probability
  1/(n-i)` (none on the last); KUBE-SEP-* marks hairpin traffic (`-s <endpoint>`), records affinity (`--set`)
  and DNATs; KUBE-EXT-* masquerades external traffic (Cluster policy) or short-circuits pod and host
  traffic (Local policy); KUBE-POSTROUTING masquerades marked packets and clears the mark.
- Endpoints: upstream's CategorizeEndpoints (proxy/model.py `categorize_endpoints`): the ready ones, and
  when none is ready the serving-and-terminating ones as a fallback (a service with neither is REJECTed);
  traffic policy Local uses this node's endpoints by the same rule. Topology hints are not implemented.
- Comments on the per-endpoint rules are dropped when the endpoints of known service ports (ready or not,
  as upstream counts its endpoints map) exceed 1,000 (largeClusterEndpointsThreshold); the other comments
  stay, as upstream.
- Partial sync (KEP-3453): top-level chains are always written whole; a service port's own chains only when
  it is in `changed` or one of them is missing from `existing`. Chains with a per-service prefix that are in
  `existing` but no longer needed are flushed and deleted (`-X`) in the same text. Nothing here names a
  built-in or foreign chain: the jumps into our chains are `jump_rules`, which the proxier ensures outside
  the `--noflush` restore (inside it they would be appended again on every load).

Not implemented (said so rather than half done): IPv6, health-check node ports, loadBalancerSourceRanges
(no KUBE-FW-* chain is written; the prefix is still recognised as stale), topology hints. `--random-fully`
is always written (upstream asks iptables whether it supports it; every iptables ≥ 1.6.2 does). Upstream
skips stale-chain deletion in large clusters except once per sync period: that is the caller's choice
here (pass `existing={}` to skip it).

Services and endpoints are written in sorted order so the text is deterministic (golden files, diffs);
upstream iterates a map. Lines are built as strings and joined once: 1,000 services × 10 endpoints render
in a fraction of a second.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from control.util.iptables import JumpRule
from proxy import chains as c
from proxy.chains import endpoint_chain_name, service_chain_name
from proxy.model import (
    Categorized,
    EndpointInfo,
    NodeConfig,
    ProxyState,
    ServicePortInfo,
    ServicePortName,
    categorize_endpoints,
)

__all__ = ["Rendered", "service_chain_name", "endpoint_chain_name", "jump_rules", "render"]

LARGE_CLUSTER_ENDPOINTS = 1000  # upstream largeClusterEndpointsThreshold
NODEPORTS_COMMENT = '"kubernetes service nodeports; NOTE: this must be the last rule in this chain"'
_NEW = ("-m", "conntrack", "--ctstate", "NEW")

# (table, built-in chain, our chain, comment, extra match) — upstream iptablesJumpChains, then the kubelet's.
_JUMPS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("filter", "INPUT", c.EXTERNAL_SERVICES, "kubernetes externally-visible service portals", _NEW),
    ("filter", "FORWARD", c.EXTERNAL_SERVICES, "kubernetes externally-visible service portals", _NEW),
    ("filter", "INPUT", c.NODEPORTS, "kubernetes health check service ports", ()),
    ("filter", "FORWARD", c.SERVICES, "kubernetes service portals", _NEW),
    ("filter", "OUTPUT", c.SERVICES, "kubernetes service portals", _NEW),
    ("filter", "FORWARD", c.FORWARD, "kubernetes forwarding rules", ()),
    ("filter", "INPUT", c.PROXY_FIREWALL, "kubernetes load balancer firewall", _NEW),
    ("filter", "OUTPUT", c.PROXY_FIREWALL, "kubernetes load balancer firewall", _NEW),
    ("filter", "FORWARD", c.PROXY_FIREWALL, "kubernetes load balancer firewall", _NEW),
    ("nat", "OUTPUT", c.SERVICES, "kubernetes service portals", ()),
    ("nat", "PREROUTING", c.SERVICES, "kubernetes service portals", ()),
    ("nat", "POSTROUTING", c.POSTROUTING, "kubernetes postrouting rules", ()),
)
_KUBELET_JUMPS = (("filter", "INPUT", c.KUBELET_FIREWALL), ("filter", "OUTPUT", c.KUBELET_FIREWALL))


@dataclass(frozen=True)
class Rendered:
    text: str                              # one iptables-restore input: "*filter ... COMMIT\n*nat ... COMMIT\n"
    chains: Mapping[str, frozenset[str]]   # table → every KUBE-* chain the full state needs (incl. unwritten)
    rule_counts: Mapping[str, int]         # table → number of -A lines written


def jump_rules(node: NodeConfig) -> tuple[JumpRule, ...]:
    """The jumps from built-in chains into ours, in upstream's order.

    Upstream ensures each with `-C`, else `-I` (prepend), in this order, so the last one listed ends up
    first in its built-in chain. KUBE-FIREWALL's jumps come with localhostNodePorts only.
    """
    jumps = [JumpRule(table, src, (*extra, "-m", "comment", "--comment", comment, "-j", dst))
             for table, src, dst, comment, extra in _JUMPS]
    if node.nodeports_on_localhost:
        jumps += [JumpRule(table, src, ("-j", dst)) for table, src, dst in _KUBELET_JUMPS]
    return tuple(jumps)


def _endpoint_order(endpoint: EndpointInfo) -> tuple[str, int]:
    return endpoint.ip, endpoint.port


def _quote(text: str) -> str:
    return f'"{text}"' if " " in text else text


@dataclass
class _Out:
    """Line buffers as upstream's: chain declarations first, then rules, per table."""

    filter_chains: list[str]
    filter_rules: list[str]
    nat_chains: list[str]
    nat_rules: list[str]


def render(state: ProxyState, node: NodeConfig, *, existing: Mapping[str, frozenset[str]] = {},
           changed: frozenset[ServicePortName] | None = None) -> Rendered:
    """The restore text for `state` (see the module docstring); `changed=None` writes every chain."""
    mark = c.masquerade_mark(node.masquerade_bit)
    out = _Out([f":{chain} - [0:0]" for chain in c.FILTER_CHAINS], [],
               [f":{chain} - [0:0]" for chain in c.NAT_CHAINS], [])
    _write_static(out, mark)
    localhost = node.nodeports_on_localhost
    if localhost:
        out.filter_chains.append(f":{c.KUBELET_FIREWALL} - [0:0]")
        out.filter_rules.append(
            f'-A {c.KUBELET_FIREWALL} -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 '
            "! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")

    usable: dict[ServicePortName, Categorized] = {
        name: categorize_endpoints(sorted(state.endpoints.get(name, ()), key=_endpoint_order))
        for name in state.services}
    large = sum(len(state.endpoints.get(name, ())) for name in state.services) > LARGE_CLUSTER_ENDPOINTS
    existing_nat = existing.get("nat", frozenset())
    active: set[str] = set()
    for name in sorted(state.services):
        _write_service(out, state.services[name], usable[name], node, large=large, active=active,
                       existing_nat=existing_nat, changed=changed)

    _write_nodeports_jump(out, node, localhost)
    _write_forward(out, mark)
    nat_needed = frozenset(c.NAT_CHAINS) | active
    filter_needed = frozenset(c.FILTER_CHAINS) | ({c.KUBELET_FIREWALL} if localhost else frozenset())
    for table, needed, chains, rules in (("filter", filter_needed, out.filter_chains, out.filter_rules),
                                         ("nat", nat_needed, out.nat_chains, out.nat_rules)):
        for chain in sorted(existing.get(table, frozenset()) - needed):
            if c.is_service_chain(chain):
                chains.append(f":{chain} - [0:0]")
                rules.append(f"-X {chain}")
    counts = {"filter": sum(1 for line in out.filter_rules if line.startswith("-A ")),
              "nat": sum(1 for line in out.nat_rules if line.startswith("-A "))}
    text = "\n".join(["*filter", *out.filter_chains, *out.filter_rules, "COMMIT",
                      "*nat", *out.nat_chains, *out.nat_rules, "COMMIT"]) + "\n"
    return Rendered(text=text, chains={"filter": filter_needed, "nat": nat_needed}, rule_counts=counts)


def _write_static(out: _Out, mark: str) -> None:
    out.nat_rules += [
        f"-A {c.POSTROUTING} -m mark ! --mark {mark}/{mark} -j RETURN",
        f"-A {c.POSTROUTING} -j MARK --xor-mark {mark}",  # so a re-traversal is not masqueraded again
        f'-A {c.POSTROUTING} -m comment --comment "kubernetes service traffic requiring SNAT" '
        "-j MASQUERADE --random-fully",
        f"-A {c.MARK_MASQ} -j MARK --or-mark {mark}",
    ]


def _write_forward(out: _Out, mark: str) -> None:
    out.filter_rules += [
        f"-A {c.FORWARD} -m conntrack --ctstate INVALID -j DROP",
        f'-A {c.FORWARD} -m comment --comment "kubernetes forwarding rules" -m mark --mark {mark}/{mark} -j ACCEPT',
        f'-A {c.FORWARD} -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack '
        "--ctstate RELATED,ESTABLISHED -j ACCEPT",
    ]


def _write_nodeports_jump(out: _Out, node: NodeConfig, localhost: bool) -> None:
    """The last rule(s) of nat KUBE-SERVICES: everything addressed to this node goes on to KUBE-NODEPORTS."""
    cidrs = [ipaddress.ip_network(cidr, strict=False) for cidr in node.nodeport_addresses]
    if not cidrs or any(net.prefixlen == 0 for net in cidrs):
        guard = "" if localhost else " ! -d 127.0.0.0/8"
        out.nat_rules.append(f"-A {c.SERVICES} -m comment --comment {NODEPORTS_COMMENT} "
                             f"-m addrtype --dst-type LOCAL{guard} -j {c.NODEPORTS}")
        return
    addresses = [ip for ip in node.node_ips if any(ipaddress.ip_address(ip) in net for net in cidrs)]
    if localhost and "127.0.0.1" not in addresses:
        addresses.append("127.0.0.1")
    for ip in addresses:
        if ipaddress.ip_address(ip).is_loopback and not localhost:
            continue
        out.nat_rules.append(f"-A {c.SERVICES} -m comment --comment {NODEPORTS_COMMENT} -d {ip} -j {c.NODEPORTS}")


def _write_service(out: _Out, svc: ServicePortInfo, usable: Categorized, node: NodeConfig, *,
                   large: bool, active: set[str], existing_nat: frozenset[str],
                   changed: frozenset[ServicePortName] | None) -> None:
    name = str(svc.name)
    proto = svc.protocol.lower()
    match = f"-m {proto} -p {proto}"
    svc_chain, svl_chain = service_chain_name(svc.name), c.local_chain_name(svc.name)
    ext_chain = c.external_chain_name(svc.name)
    ready, local = list(usable.cluster), list(usable.local)  # ready, or serving-terminating as the fallback
    has_endpoints = usable.has_any
    accessible = bool(svc.node_port or svc.external_ips or svc.load_balancer_ips)
    # upstream serviceport.go UsesClusterEndpoints / UsesLocalEndpoints
    uses_cluster = has_endpoints and (not svc.internal_policy_local or accessible)
    uses_local = bool(local) and (svc.internal_policy_local or (svc.external_policy_local and accessible))
    internal_chain = svl_chain if svc.internal_policy_local else svc_chain
    has_internal = has_endpoints and (not svc.internal_policy_local or bool(local))
    external_policy_chain = svl_chain if svc.external_policy_local else svc_chain
    has_external = has_endpoints and (not svc.external_policy_local or bool(local))
    uses_ext = has_endpoints and accessible

    if not has_endpoints:
        internal_target = external_target = "REJECT"
        internal_comment = external_comment = f'"{name} has no endpoints"'
    else:
        internal_target, internal_comment = "DROP", f'"{name} has no local endpoints"'
        external_target, external_comment = internal_target, internal_comment

    # Top-level chains: always written.
    cluster_ip = svc.cluster_ip if svc.cluster_ip not in ("", "None") else ""
    if cluster_ip:
        if has_internal:
            out.nat_rules.append(f'-A {c.SERVICES} -m comment --comment "{name} cluster IP" {match} '
                                 f"-d {cluster_ip} --dport {svc.port} -j {internal_chain}")
        else:
            out.filter_rules.append(f"-A {c.SERVICES} -m comment --comment {internal_comment} {match} "
                                    f"-d {cluster_ip} --dport {svc.port} -j {internal_target}")
    for kind, addresses in (("external IP", svc.external_ips), ("loadbalancer IP", svc.load_balancer_ips)):
        for ip in addresses:
            if has_endpoints:
                out.nat_rules.append(f'-A {c.SERVICES} -m comment --comment "{name} {kind}" {match} '
                                     f"-d {ip} --dport {svc.port} -j {ext_chain}")
            if not has_external:
                out.filter_rules.append(f"-A {c.EXTERNAL_SERVICES} -m comment --comment {external_comment} "
                                        f"{match} -d {ip} --dport {svc.port} -j {external_target}")
    if svc.node_port:
        if has_endpoints:
            out.nat_rules.append(f"-A {c.NODEPORTS} -m comment --comment {_quote(name)} {match} "
                                 f"--dport {svc.node_port} -j {ext_chain}")
        if not has_external:
            out.filter_rules.append(f"-A {c.EXTERNAL_SERVICES} -m comment --comment {external_comment} "
                                    f"-m addrtype --dst-type LOCAL {match} --dport {svc.node_port} "
                                    f"-j {external_target}")

    # The service's own chains: written on a full sync, or when changed or missing.
    own = ([ext_chain] if uses_ext else []) + ([svc_chain] if uses_cluster else []) + \
        ([svl_chain] if uses_local else [])
    # every endpoint a chain of this service jumps to (upstream allLocallyReachableEndpoints): a Local
    # fallback may hold terminating endpoints of this node that the Cluster set does not
    endpoints = list(dict.fromkeys((ready if uses_cluster else []) + (local if uses_local else [])))
    sep_names = {e: endpoint_chain_name(svc.name, e.address) for e in endpoints}
    own += sep_names.values()
    active.update(own)
    if changed is not None and svc.name not in changed and existing_nat.issuperset(own):
        return
    out.nat_chains += [f":{chain} - [0:0]" for chain in own]
    rules = out.nat_rules
    if has_internal and cluster_ip:
        head = f'-A {internal_chain} -m comment --comment "{name} cluster IP" {match} -d {cluster_ip} ' \
               f"--dport {svc.port}"
        if node.masquerade_all:
            rules.append(f"{head} -j {c.MARK_MASQ}")
        elif node.cluster_cidr:
            rules.append(f"{head} ! -s {node.cluster_cidr} -j {c.MARK_MASQ}")
    if uses_ext:
        if not svc.external_policy_local:
            rules.append(f'-A {ext_chain} -m comment --comment "masquerade traffic for {name} external '
                         f'destinations" -j {c.MARK_MASQ}')
        else:
            if node.cluster_cidr:
                rules.append(f'-A {ext_chain} -m comment --comment "pod traffic for {name} external '
                             f'destinations" -s {node.cluster_cidr} -j {svc_chain}')
            rules.append(f'-A {ext_chain} -m comment --comment "masquerade LOCAL traffic for {name} external '
                         f'destinations" -m addrtype --src-type LOCAL -j {c.MARK_MASQ}')
            rules.append(f'-A {ext_chain} -m comment --comment "route LOCAL traffic for {name} external '
                         f'destinations" -m addrtype --src-type LOCAL -j {svc_chain}')
        if has_external:
            rules.append(f"-A {ext_chain} -j {external_policy_chain}")
    if uses_cluster:
        _write_balancing(rules, svc, svc_chain, ready, sep_names, large)
    if uses_local:
        _write_balancing(rules, svc, svl_chain, local, sep_names, large)
    comment = "" if large else f" -m comment --comment {_quote(name)}"
    for endpoint, sep in sep_names.items():
        affinity = f" -m recent --name {sep} --set" if svc.session_affinity_seconds else ""
        rules.append(f"-A {sep}{comment} -s {endpoint.ip} -j {c.MARK_MASQ}")
        rules.append(f"-A {sep}{comment}{affinity} {match} -j DNAT --to-destination {endpoint.address}")


def _write_balancing(rules: list[str], svc: ServicePortInfo, chain: str, endpoints: Sequence[EndpointInfo],
                     sep_names: Mapping[EndpointInfo, str], large: bool) -> None:
    """upstream writeServiceToEndpointRules: affinity checks first, then the 1/(n-i) random choice."""
    name = str(svc.name)
    if svc.session_affinity_seconds:
        for endpoint in endpoints:
            sep = sep_names[endpoint]
            comment = "" if large else f' -m comment --comment "{name} -> {endpoint.address}"'
            rules.append(f"-A {chain}{comment} -m recent --name {sep} --rcheck "
                         f"--seconds {svc.session_affinity_seconds} --reap -j {sep}")
    n = len(endpoints)
    for i, endpoint in enumerate(endpoints):
        comment = "" if large else f' -m comment --comment "{name} -> {endpoint.address}"'
        chance = f" -m statistic --mode random --probability {c.probability(n - i)}" if i < n - 1 else ""
        rules.append(f"-A {chain}{comment}{chance} -j {sep_names[endpoint]}")
