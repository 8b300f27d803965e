"""An in-memory iptables for unit tests of the proxy and the kubelet's pod rules: restore/save/has_rule/
insert_rule/delete_rule with the kernel's semantics that matter here (a restore applies all or nothing;
declaring a chain flushes it; `-X` deletes an empty chain no rule jumps to; `--noflush` leaves undeclared
chains alone), plus a record of every call and hooks to make the next restores fail."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from control.util.iptables import IptablesError, Mode

BUILTIN = {"filter": ("INPUT", "FORWARD", "OUTPUT"), "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING")}


class FakeIptables:
    mode = Mode.NFT

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[tuple[str, ...]]]] = {
            table: {chain: [] for chain in chains} for table, chains in BUILTIN.items()}
        self.calls: list[tuple[str, ...]] = []
        self.restores: list[str] = []
        self.fail_restores: list[str] = []  # error messages: each failing restore pops one

    def run(self, argv: Sequence[str], *, stdin: str | None = None) -> object:  # never used: no real commands
        raise AssertionError(f"FakeIptables ran {argv}")

    def restore(self, text: str) -> None:
        self.calls.append(("restore",))
        self.restores.append(text)
        if self.fail_restores:
            raise IptablesError(self.fail_restores.pop(0))
        tables = {t: {c: list(r) for c, r in chains.items()} for t, chains in self.tables.items()}
        table = None
        for line in text.splitlines():
            if line.startswith("*"):
                table = tables[line[1:]]
            elif line.startswith(":"):
                table[line[1:].split()[0]] = []
            elif line.startswith("-A "):
                args = shlex.split(line)
                if args[1] not in table:
                    raise IptablesError(f"restore: chain {args[1]} does not exist")
                table[args[1]].append(tuple(args[2:]))
            elif line.startswith("-X "):
                chain = line.split()[1]
                if table.get(chain) or any(chain in rule for rules in table.values() for rule in rules):
                    raise IptablesError(f"restore: chain {chain} is not empty or still referenced")
                table.pop(chain, None)
        self.tables = tables

    def save(self, table: str) -> str:
        self.calls.append(("save", table))
        chains = self.tables[table]
        lines = [f"*{table}"] + [f":{chain} {'ACCEPT' if chain in BUILTIN[table] else '-'} [0:0]" for chain in chains]
        for chain, rules in chains.items():
            lines += [shlex.join(["-A", chain, *rule]) for rule in rules]
        return "\n".join([*lines, "COMMIT"]) + "\n"

    def has_rule(self, table: str, chain: str, rule: Sequence[str]) -> bool:
        self.calls.append(("has_rule", table, chain))
        return tuple(rule) in self.tables[table].get(chain, [])

    def insert_rule(self, table: str, chain: str, rule: Sequence[str]) -> None:
        self.calls.append(("insert_rule", table, chain))
        target = rule[-1]
        if target not in self.tables[table]:
            raise IptablesError(f"insert: no chain/target {target}")
        self.tables[table][chain].insert(0, tuple(rule))

    def delete_rule(self, table: str, chain: str, rule: Sequence[str]) -> None:
        self.calls.append(("delete_rule", table, chain))
        self.tables[table][chain].remove(tuple(rule))

    def chains(self, table: str) -> set[str]:
        return set(self.tables[table])

    @property
    def jumps(self) -> set[tuple[str, str, tuple[str, ...]]]:
        """(table, built-in chain, rule) of every rule in a built-in chain: the jumps into our chains."""
        return {(table, chain, rule) for table, chains in self.tables.items() for chain, rules in chains.items()
                if chain in BUILTIN[table] for rule in rules}
