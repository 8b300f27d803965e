"""`slimkube proxy --cleanup`: remove every jump and chain the iptables proxier made, and nothing else.

Follows upstream's CleanupLeftovers (pkg/proxy/iptables/proxier.go): first the jumps from built-in chains
into the proxy's chains, then the chains themselves, flushed and deleted in one restore. Which chains are
ours is decided by name: the top-level chains the renderer writes (proxy/chains.py FILTER_CHAINS,
NAT_CHAINS and KUBE-FIREWALL) and the per-service prefixes (KUBE-SVC-, KUBE-SVL-, KUBE-EXT-, KUBE-FW-,
KUBE-SEP-, and the older KUBE-XLB-). The kubelet's KUBE-POD-FORWARD / KUBE-POD-MASQ and every non-KUBE
chain are left alone.

The jumps are found in the `-save` output of the built-in chains (any rule whose target is one of our
chains) rather than recomputed from a node config, so jumps written with other options — an older
version, another localhostNodePorts setting — are removed too. Running it twice is harmless: the
second run finds nothing and returns False.
"""

from __future__ import annotations

from control.util.iptables import Iptables
from proxy import chains as c
from proxy.tables import BUILTIN_CHAINS, TABLES, parse_chains, parse_rules

PROXY_CHAINS = frozenset(c.FILTER_CHAINS) | frozenset(c.NAT_CHAINS) | {c.KUBELET_FIREWALL}


def is_proxy_chain(chain: str) -> bool:
    return chain in PROXY_CHAINS or c.is_service_chain(chain)


def removal_text(chains: dict[str, list[str]]) -> str:
    """Restore text that flushes (by declaring) and deletes each chain; tables without chains are skipped."""
    return "".join(f"*{table}\n" + "".join(f":{chain} - [0:0]\n" for chain in names)
                   + "".join(f"-X {chain}\n" for chain in names) + "COMMIT\n"
                   for table, names in chains.items() if names)


def cleanup(iptables: Iptables) -> bool:
    """Remove the proxy's jumps and chains from filter and nat; True if anything was removed."""
    ours: dict[str, list[str]] = {}
    removed = False
    for table in TABLES:
        saved = iptables.save(table)
        ours[table] = sorted(chain for chain in parse_chains(saved) if is_proxy_chain(chain))
        for rule in parse_rules(saved, BUILTIN_CHAINS):
            if rule.target in ours[table]:
                iptables.delete_rule(table, rule.chain, rule.rule)
                removed = True
    if any(ours.values()):
        iptables.restore(removal_text(ours))
        removed = True
    return removed
