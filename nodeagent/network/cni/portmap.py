"""The chains the `portmap` plugin leaves behind (containernetworking/plugins plugins/meta/portmap
portmap.go): per pod a `CNI-DN-<hash>` chain, removed by its DEL, and three shared nat chains it creates
on first use and never removes — `CNI-HOSTPORT-DNAT` (jumped to from PREROUTING and OUTPUT),
`CNI-HOSTPORT-SETMARK` and `CNI-HOSTPORT-MASQ` (jumped to from POSTROUTING). `slimkube down` (and the
tests) remove the shared ones once no pod's chain is left; `removal_plan` decides from `iptables-save -t
nat` text, `remove_shared_chains` acts.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

SHARED_CHAINS = ("CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ")
POD_CHAIN_PREFIX = "CNI-DN-"


class IptablesClient(Protocol):
    def save(self, table: str) -> str: ...

    def restore(self, text: str) -> None: ...

    def delete_rule(self, table: str, chain: str, rule: Sequence[str]) -> None: ...


@dataclass(frozen=True)
class RemovalPlan:
    jumps: tuple[tuple[str, tuple[str, ...]], ...]  # (built-in chain, rule) jumping to a shared chain
    chains: tuple[str, ...]


def removal_plan(saved_nat: str) -> RemovalPlan | None:
    """What to delete; None while some pod's ports are still forwarded (a CNI-DN- chain exists)."""
    declared = [line[1:].split()[0] for line in saved_nat.splitlines() if line.startswith(":")]
    if any(chain.startswith(POD_CHAIN_PREFIX) for chain in declared):
        return None
    jumps = []
    for line in saved_nat.splitlines():
        if not line.startswith("-A "):
            continue
        words = shlex.split(line)
        chain, rule = words[1], tuple(words[2:])
        if chain not in SHARED_CHAINS and any(rule[i] in ("-j", "--jump") and rule[i + 1] in SHARED_CHAINS
                                              for i in range(len(rule) - 1)):
            jumps.append((chain, rule))
    return RemovalPlan(jumps=tuple(jumps), chains=tuple(c for c in SHARED_CHAINS if c in declared))


def remove_shared_chains(iptables: IptablesClient) -> bool:
    """Remove the shared chains and their jumps if no pod uses them; False if some pod still does."""
    plan = removal_plan(iptables.save("nat"))
    if plan is None:
        return False
    for chain, rule in plan.jumps:
        iptables.delete_rule("nat", chain, rule)
    if plan.chains:  # declaring a chain in a restore flushes it; then none references another
        iptables.restore("*nat\n" + "".join(f":{c} - [0:0]\n" for c in plan.chains)
                         + "".join(f"-X {c}\n" for c in plan.chains) + "COMMIT\n")
    return True
