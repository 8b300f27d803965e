"""What the kernel holds now: the KUBE-* chains of a table, and the rules of built-in chains that jump to them.

The renderer needs the chains that exist (to delete stale per-service chains with `-X`, and in a partial
sync to write the ones missing); upstream's proxier reads them from `iptables-save` output
(pkg/util/iptables/save_restore.go GetChainsFromTable: the `:CHAIN` header lines). `parse_chains` does
that on the backend's own `-save` output, which works for both backends and inside a network namespace
(the Iptables runner may wrap commands in `ip netns exec`).

A sync reads them only when it must (a full sync: the first one, the periodic one, after a failure); a
partial sync takes the chains the last successful restore left, as upstream reads `iptables-save` only
once per syncPeriod in large clusters. python-iptables (`iptc`, legacy backend only, this process's
namespace only) was measured as a reader and is not used: listing 11,004 chains of a 1,000 services × 10
endpoints nat table took 86-112 ms through iptc against 92-112 ms for `iptables-legacy-save` plus parsing
(same run, same namespace), so it saves nothing where it matters and would be a second, legacy-only path.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from control.util.iptables import Iptables

TABLES = ("filter", "nat")
BUILTIN_CHAINS = frozenset({"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"})


def parse_chains(saved: str, *, prefix: str = "KUBE-") -> frozenset[str]:
    """Chain names declared (`:NAME POLICY [p:b]`) in one table's `-save` output that start with `prefix`."""
    return frozenset(line[1:].split(" ", 1)[0] for line in saved.splitlines()
                     if line.startswith(":" + prefix))


@dataclass(frozen=True)
class SavedRule:
    chain: str
    rule: tuple[str, ...]  # argv after `-A CHAIN`, as `iptables -D CHAIN ...` takes it

    @property
    def target(self) -> str:
        args = self.rule
        for flag in ("-j", "-g"):
            if flag in args and args.index(flag) + 1 < len(args):
                return args[args.index(flag) + 1]
        return ""


def parse_rules(saved: str, chains: Iterable[str]) -> list[SavedRule]:
    """The `-A` lines of the given chains, split as the shell would (save output quotes comments)."""
    wanted = frozenset(chains)
    rules = []
    for line in saved.splitlines():
        if line.startswith("-A "):
            args = shlex.split(line)
            if args[1] in wanted:
                rules.append(SavedRule(args[1], tuple(args[2:])))
    return rules


def existing_chains(iptables: Iptables) -> dict[str, frozenset[str]]:
    """table → the KUBE-* chains it holds now, from `<backend>-save -t TABLE` (any backend, any runner)."""
    return {table: parse_chains(iptables.save(table)) for table in TABLES}
