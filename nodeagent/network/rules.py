"""The host iptables rules pod networking needs, rendered by pure functions.

Two chains of our own, each reached by one jump from a built-in chain:

- filter `KUBE-POD-FORWARD`, jumped to first thing in FORWARD: Docker sets FORWARD's policy to DROP, and
  with br_netfilter even frames bridged between two pods on `cbr0` traverse FORWARD, so pod
  traffic is accepted in and out of the bridge and to/from the cluster CIDR (pods of other nodes routed
  through this host). Upstream kube-proxy's KUBE-FORWARD chain (pkg/proxy/iptables/proxier.go) plays
  this part for kubenet and, like it, our jump is prepended to FORWARD.
- nat `KUBE-POD-MASQ`, jumped to from POSTROUTING: traffic from the pod CIDR to anything outside the
  cluster CIDR that is not a local address is masqueraded, as kubenet's "SNAT for outbound traffic from
  cluster" rule does (pkg/kubelet/dockershim/network/kubenet/kubenet_linux.go: addrtype not LOCAL and not
  the non-masquerade CIDR). Pod to pod keeps its source address.

The names differ from every chain upstream kube-proxy and the kubelet make (slimkube's proxy uses those),
and are configurable so tests run with their own. Chain contents are loaded with one
`iptables-restore --noflush` (declaring a chain in a restore flushes it, so a reload replaces the
contents exactly); jumps are ensured one by one (`-C`, else `-I`). `remove` deletes exactly those jumps
and chains, nothing else, for `slimkube down`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from control.util.iptables import JumpRule

MAX_CHAIN_NAME = 28  # XT_EXTENSION_MAXNAMELEN (29) less the terminating NUL
DEFAULT_FORWARD_CHAIN = "KUBE-POD-FORWARD"
DEFAULT_MASQ_CHAIN = "KUBE-POD-MASQ"

# Chains upstream's kube-proxy (iptables mode) and kubelet create: ours must never collide with them.
UPSTREAM_CHAINS = frozenset({
    "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ",
    "KUBE-MARK-DROP", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-FIREWALL", "KUBE-LOAD-BALANCER",
    "KUBE-KUBELET-CANARY", "KUBE-PROXY-CANARY", "KUBE-IPTABLES-HINT",
})
UPSTREAM_CHAIN_PREFIXES = ("KUBE-SVC-", "KUBE-SVL-", "KUBE-SEP-", "KUBE-FW-", "KUBE-XLB-", "KUBE-EXT-")


class IptablesClient(Protocol):
    """What applying the rules needs from iptables (control.util.iptables.Iptables is the real one)."""

    def restore(self, text: str) -> None: ...

    def has_rule(self, table: str, chain: str, rule: Sequence[str]) -> bool: ...

    def insert_rule(self, table: str, chain: str, rule: Sequence[str]) -> None: ...

    def delete_rule(self, table: str, chain: str, rule: Sequence[str]) -> None: ...


@dataclass(frozen=True)
class PodRulesConfig:
    bridge: str
    pod_cidr: str
    cluster_cidr: str
    forward_chain: str = DEFAULT_FORWARD_CHAIN
    masq_chain: str = DEFAULT_MASQ_CHAIN

    def __post_init__(self) -> None:
        for cidr in (self.pod_cidr, self.cluster_cidr):
            ipaddress.IPv4Network(cidr, strict=True)  # ValueError names the bad one
        if not ipaddress.IPv4Network(self.pod_cidr).subnet_of(ipaddress.IPv4Network(self.cluster_cidr)):
            raise ValueError(f"pod CIDR {self.pod_cidr} is not inside the cluster CIDR {self.cluster_cidr}")
        if self.forward_chain == self.masq_chain:
            raise ValueError("the forward and masquerade chains need different names")
        for chain in (self.forward_chain, self.masq_chain):
            if not chain.startswith("KUBE-") or len(chain) > MAX_CHAIN_NAME or not chain.isascii() or " " in chain:
                raise ValueError(f"chain {chain!r}: a KUBE-* name of at most {MAX_CHAIN_NAME} characters")
            if chain in UPSTREAM_CHAINS or chain.startswith(UPSTREAM_CHAIN_PREFIXES):
                raise ValueError(f"chain {chain!r} is one upstream's kube-proxy or kubelet uses")
        if not 0 < len(self.bridge) <= 15:
            raise ValueError(f"bridge {self.bridge!r}: an interface name of 1 to 15 characters")


def _comment(text: str) -> tuple[str, ...]:
    return ("-m", "comment", "--comment", text)


def _line(chain: str, rule: Sequence[str]) -> str:
    """One `-A` line in restore syntax: arguments with spaces are quoted."""
    return " ".join(["-A", chain, *(f'"{a}"' if " " in a else a for a in rule)])


def chain_rules(config: PodRulesConfig) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
    """(table, chain) → the chain's rules in order, argv form."""
    br, cluster, pods = config.bridge, config.cluster_cidr, config.pod_cidr
    forward = (
        ("-i", br, *_comment("from pods on the bridge"), "-j", "ACCEPT"),
        ("-o", br, *_comment("to pods on the bridge"), "-j", "ACCEPT"),
        ("-s", cluster, *_comment("from the cluster CIDR"), "-j", "ACCEPT"),
        ("-d", cluster, *_comment("to the cluster CIDR"), "-j", "ACCEPT"),
    )
    masq = (
        ("!", "-s", pods, "-j", "RETURN"),
        ("-d", cluster, *_comment("pod to pod keeps its address"), "-j", "RETURN"),
        ("-m", "addrtype", "--dst-type", "LOCAL", *_comment("to this host keeps its address"), "-j", "RETURN"),
        (*_comment("pods to outside the cluster CIDR"), "-j", "MASQUERADE"),
    )
    return {("filter", config.forward_chain): forward, ("nat", config.masq_chain): masq}


def jump_rules(config: PodRulesConfig) -> tuple[JumpRule, ...]:
    return (
        JumpRule("filter", "FORWARD", (*_comment("slimkube pod forwarding"), "-j", config.forward_chain)),
        JumpRule("nat", "POSTROUTING", (*_comment("slimkube pod masquerade"), "-j", config.masq_chain)),
    )


def render(config: PodRulesConfig) -> str:
    """iptables-restore text (for `--noflush`) that creates or replaces our chains' contents."""
    out: list[str] = []
    for table in ("filter", "nat"):
        chains = {chain: rules for (t, chain), rules in chain_rules(config).items() if t == table}
        out.append(f"*{table}")
        out += [f":{chain} - [0:0]" for chain in chains]
        out += [_line(chain, rule) for chain, rules in chains.items() for rule in rules]
        out.append("COMMIT")
    return "\n".join(out) + "\n"


def render_removal(config: PodRulesConfig) -> str:
    """iptables-restore text (for `--noflush`) that flushes and deletes our chains (jumps must be gone)."""
    out: list[str] = []
    for table in ("filter", "nat"):
        chains = [chain for (t, chain) in chain_rules(config) if t == table]
        out += [f"*{table}", *(f":{chain} - [0:0]" for chain in chains), *(f"-X {chain}" for chain in chains),
                "COMMIT"]
    return "\n".join(out) + "\n"


def apply(iptables: IptablesClient, config: PodRulesConfig) -> None:
    """Load the chains, then make sure each jump exists once. Safe to repeat (the periodic resync)."""
    iptables.restore(render(config))
    for jump in jump_rules(config):
        if not iptables.has_rule(jump.table, jump.chain, jump.rule):
            iptables.insert_rule(jump.table, jump.chain, jump.rule)


def remove(iptables: IptablesClient, config: PodRulesConfig) -> None:
    """Delete our jumps (every copy) and then our chains; nothing else is touched. Safe to repeat."""
    for jump in jump_rules(config):
        while iptables.has_rule(jump.table, jump.chain, jump.rule):
            iptables.delete_rule(jump.table, jump.chain, jump.rule)
    iptables.restore(render_removal(config))
