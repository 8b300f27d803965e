"""The host's iptables rules for the node network of `slimkube up --nodes N`: what a router between the
node namespaces and the world does, in two chains of the project's own.

- filter `KUBE-NODES-FORWARD`, jumped to first thing in FORWARD: traffic from and to the node bridge is
  forwarded (Docker's FORWARD policy is DROP), so a node's pods reach addresses beyond this host;
- nat `KUBE-NODES-EGRESS`, jumped to from POSTROUTING: traffic from the node network leaving through the
  host's uplink (the default route's device) is masqueraded to the host's address, as a home router's
  NAT does for the hosts behind it; the nodes are private hosts the outside cannot route back to.

A pod's traffic to outside the cluster CIDR is first masqueraded to its node's address by the node's own
kubelet (nodeagent/network/rules.py KUBE-POD-MASQ, flannel's rule); pod → pod across nodes keeps the pod's
address throughout. Traffic between the node network and another interface of this host (another bridge,
a test's namespace) keeps the node's address.

Rendering is pure (`render`, `jump_rules`); `apply` and `remove` (for `slimkube down`) touch only these
chains and their jumps.
"""

from __future__ import annotations

from dataclasses import dataclass

from control.util.iptables import JumpRule
from nodeagent.network.rules import IptablesClient

FORWARD_CHAIN = "KUBE-NODES-FORWARD"
EGRESS_CHAIN = "KUBE-NODES-EGRESS"


@dataclass(frozen=True)
class NodeRulesConfig:
    bridge: str  # the node bridge
    nodes_cidr: str  # the node network
    uplink: str  # the default route's device; "" = none (no egress masquerade)


def _chains(config: NodeRulesConfig) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
    comment = ("-m", "comment", "--comment")
    forward = (("-i", config.bridge, *comment, "from the node network", "-j", "ACCEPT"),
               ("-o", config.bridge, *comment, "to the node network", "-j", "ACCEPT"))
    egress = ((("-s", config.nodes_cidr, "-o", config.uplink, *comment, "node network to the world",
                "-j", "MASQUERADE"),) if config.uplink else ())
    return {("filter", FORWARD_CHAIN): forward, ("nat", EGRESS_CHAIN): egress}


def _arg(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg


def render(config: NodeRulesConfig) -> str:
    """iptables-restore text (for `--noflush`) that creates or replaces the two chains' contents."""
    out: list[str] = []
    for table in ("filter", "nat"):
        chains = {chain: rules for (t, chain), rules in _chains(config).items() if t == table}
        out += [f"*{table}", *(f":{chain} - [0:0]" for chain in chains)]
        out += [" ".join(["-A", chain, *map(_arg, rule)]) for chain, rules in chains.items() for rule in rules]
        out.append("COMMIT")
    return "\n".join(out) + "\n"


def jump_rules() -> tuple[JumpRule, ...]:
    return (JumpRule("filter", "FORWARD", ("-m", "comment", "--comment", "slimkube node network", "-j",
                                           FORWARD_CHAIN)),
            JumpRule("nat", "POSTROUTING", ("-m", "comment", "--comment", "slimkube node network egress", "-j",
                                            EGRESS_CHAIN)))


def apply(iptables: IptablesClient, config: NodeRulesConfig) -> None:
    iptables.restore(render(config))
    for jump in jump_rules():
        if not iptables.has_rule(jump.table, jump.chain, jump.rule):
            iptables.insert_rule(jump.table, jump.chain, jump.rule)


def remove(iptables: IptablesClient) -> None:
    """Delete the jumps (every copy), then the chains; nothing else is touched. Safe to repeat."""
    for jump in jump_rules():
        while iptables.has_rule(jump.table, jump.chain, jump.rule):
            iptables.delete_rule(jump.table, jump.chain, jump.rule)
    iptables.restore(f"*filter\n:{FORWARD_CHAIN} - [0:0]\n-X {FORWARD_CHAIN}\nCOMMIT\n"
                     f"*nat\n:{EGRESS_CHAIN} - [0:0]\n-X {EGRESS_CHAIN}\nCOMMIT\n")
