"""Ensuring the jumps from built-in chains into ours: `iptables -C`/`-I` per rule, or python-iptables in-process.

Upstream (pkg/proxy/iptables/proxier.go `syncProxyRules`, the `iptablesJumpChains` loop) runs
`EnsureRule(Prepend, ...)` per jump: `iptables -C`, and `-I` when it is missing. Each legacy `-C` reads and
parses the whole table from the kernel, so with a large nat table the 14 checks of a full sync cost half as
much as the restore itself, and inserting them twice as much (figures below). python-iptables (`iptc`, ctypes
over libip4tc) drives only the legacy backend, and only in the calling thread's network namespace; where both
hold, `IptcJumps` reads each table once, compares every jump against its built-in chain's rules in memory,
inserts the missing ones at position 0 in the listed order (so the last listed ends up first, as with `-I`;
render.jump_rules) and commits each table that changed once.

Matching is exact: the wanted rule is built from the same argv through the same libxtables parsers the
`iptables` command uses, and a kernel rule matches when its address/interface fields, its matches in order
(name, revision, the extension's user data) and its target name are equal. python-iptables' own `Rule.__eq__`
is not used: it ignores match order and treats every standard target (any jump to a chain) as equal.

python-iptables caveats handled here: its `Table` objects are process-wide singletons whose handles stay bound
to the namespace they were opened in, and building a jump's target asks every cached table whether it has such
a chain (ip4tc `Target._is_standard_target`: it opens every table once, so empty mangle/raw/security tables
appear in a namespace that had none; and a freed handle there crashes the process), so each ensure re-reads
(refresh) all its tables first, with autocommit off, and never frees them; it takes no xtables lock, so the
whole read-compare-commit holds `/run/xtables.lock` (`XTABLES_LOCKFILE` overrides, as for iptables) as
`iptables -w` does.

`choose` takes the iptc path only on a legacy backend whose commands run in this process's namespace (the
default runner; tests that run the CLI through `ip netns exec` keep the CLI path, so iptc never touches the
host's tables behind their back), and only if iptc loads; otherwise the CLI path.

Measured (2026-11-23, this VM, legacy backend, in a throwaway netns holding 1,000 services × 10 endpoints =
33,735 nat rules; 14 jumps; median of 7, two runs): all present (the steady state of every full sync) CLI
188 ms, iptc 45-47 ms; all missing (first sync) CLI 708-731 ms, iptc 158-163 ms. Most of iptc's time is
reading the nat table once (and on insert, writing it back once); the CLI reads it once per `-C` and per `-I`.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from control.util.iptables import Iptables, IptablesError, JumpRule, Mode, run_command

log = logging.getLogger(__name__)

LOCK_WAIT = 60.0  # seconds for the xtables lock: `-w` alone waits for ever, a sync must end (it is retried)
_LOCK_POLL = 0.05
_iptc_lock = threading.Lock()  # python-iptables' table cache is process-wide: one user at a time


class JumpEnsurer(Protocol):
    def ensure(self, jumps: Sequence[JumpRule]) -> tuple[JumpRule, ...]:
        """Insert the missing jumps (in the order given, each at the chain's head); returns those inserted."""
        ...


@dataclass(frozen=True)
class CliJumps:
    """Upstream's way: one `-C`, and if missing one `-I`, per jump (two forks, each reading the table)."""

    iptables: Iptables

    def ensure(self, jumps: Sequence[JumpRule]) -> tuple[JumpRule, ...]:
        inserted = []
        for jump in jumps:
            if not self.iptables.has_rule(jump.table, jump.chain, jump.rule):
                self.iptables.insert_rule(jump.table, jump.chain, jump.rule)
                inserted.append(jump)
        return tuple(inserted)


@dataclass(frozen=True)
class MatchSpec:
    name: str
    options: tuple[tuple[str, str], ...]  # (option without dashes, value with a leading "!" when inverted)


@dataclass(frozen=True)
class RuleSpec:
    matches: tuple[MatchSpec, ...]
    target: str


def parse_rule(argv: Sequence[str]) -> RuleSpec:
    """The argv of a jump (`-m NAME --opt VALUE ... [! --opt VALUE] -j TARGET`) as matches and a target.

    Only what jump rules use: matches whose options each take one value, and a final `-j`. Anything else
    (addresses, protocols, `-g`, options without a value) is refused rather than guessed.
    """
    matches: list[MatchSpec] = []
    target = ""
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        inverted = arg == "!"
        if inverted:
            i += 1
            arg = args[i] if i < len(args) else ""
        if i + 1 >= len(args) or target:
            raise ValueError(f"cannot convert {list(argv)}: {arg!r} has no value or follows the target")
        value = args[i + 1]
        if arg == "-m" and not inverted:
            matches.append(MatchSpec(value, ()))
        elif arg == "-j" and not inverted:
            target = value
        elif arg.startswith("--") and matches:
            last = matches[-1]
            matches[-1] = MatchSpec(last.name, (*last.options, (arg[2:], ("!" if inverted else "") + value)))
        else:
            raise ValueError(f"cannot convert {list(argv)}: unsupported argument {arg!r}")
        i += 2
    if not target:
        raise ValueError(f"cannot convert {list(argv)}: no -j target")
    return RuleSpec(tuple(matches), target)


RuleKey = tuple[Any, ...]


class IptcJumps:
    """The jumps ensured through python-iptables, one read and at most one commit per table (legacy only)."""

    def __init__(self, iptc: Any, *, lock_path: str | None = None) -> None:
        self._iptc = iptc
        self._lock_path = lock_path or os.environ.get("XTABLES_LOCKFILE", "/run/xtables.lock")

    def rule(self, spec: RuleSpec) -> Any:
        """An iptc Rule from the spec, parsed by the same libxtables extensions as the `iptables` command."""
        rule = self._iptc.Rule()
        for match in spec.matches:
            created = rule.create_match(match.name)
            for option, value in match.options:
                created.set_parameter(option, value)
        rule.create_target(spec.target)
        return rule

    def key(self, rule: Any) -> RuleKey:
        """What makes two rules the same rule (see the module docstring); counters are not part of it."""
        size = ctypes.sizeof(self._iptc.ip4tc.xt_entry_match)
        matches = tuple((m.name, m.match.u.user.revision, bytes(m.match_buf[size:m.usersize])) for m in rule.matches)
        return (rule.src, rule.dst, rule.protocol, rule.in_interface, rule.out_interface, rule.fragment,
                matches, rule.target.name, rule.target.goto)

    def ensure(self, jumps: Sequence[JumpRule]) -> tuple[JumpRule, ...]:
        iptc = self._iptc
        specs = [(jump, parse_rule(jump.rule)) for jump in jumps]
        inserted: list[JumpRule] = []
        with _iptc_lock, self._xtables_lock():
            try:
                # Every table first: building a rule's target consults all cached tables (module docstring).
                tables = {name: iptc.Table(name, autocommit=False) for name in dict.fromkeys(j.table for j in jumps)}
                for table in tables.values():
                    table.refresh()
                for name, table in tables.items():
                    added = self._ensure_table(table, [(jump, spec) for jump, spec in specs if jump.table == name])
                    if added:
                        table.commit()
                    inserted += added
            except (iptc.IPTCError, iptc.XTablesError) as exc:
                raise IptablesError(f"python-iptables: {exc}") from exc
        return tuple(jump for jump in jumps if jump in inserted)  # in the order given, as CliJumps

    def _ensure_table(self, table: Any, specs: Sequence[tuple[JumpRule, RuleSpec]]) -> list[JumpRule]:
        """Insert the missing jumps into the table's cache (not committed); returns those inserted."""
        inserted = []
        present: dict[str, set[RuleKey]] = {}
        for jump, spec in specs:
            chain = self._iptc.Chain(table, jump.chain)
            if jump.chain not in present:
                present[jump.chain] = {self.key(rule) for rule in chain.rules}
            wanted = self.rule(spec)
            key = self.key(wanted)
            if key not in present[jump.chain]:
                chain.insert_rule(wanted, 0)
                present[jump.chain].add(key)
                inserted.append(jump)
        return inserted

    @contextmanager
    def _xtables_lock(self) -> Iterator[None]:
        """The lock every `iptables -w` takes, so no other writer's commit falls between our read and ours."""
        try:
            fd = os.open(self._lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError as exc:
            raise IptablesError(f"cannot open the xtables lock {self._lock_path}: {exc}") from exc
        try:
            deadline = time.monotonic() + LOCK_WAIT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise IptablesError(f"xtables lock {self._lock_path} held for {LOCK_WAIT:g}s") from None
                    time.sleep(_LOCK_POLL)
            yield
        finally:
            os.close(fd)  # releases the lock


def load_iptc() -> Any | None:
    """The iptc module, or None when it cannot load (not installed, or libip4tc/libxtables missing)."""
    try:
        import iptc
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError from ctypes, or iptc's XTablesError when libxtables fails
        log.info("python-iptables unavailable (%s): jump rules ensured with iptables -C/-I", exc)
        return None
    return iptc


def choose(iptables: Iptables) -> JumpEnsurer:
    """iptc on a legacy backend run in this process's namespace when it loads, else the CLI (module docstring)."""
    if iptables.mode is Mode.LEGACY and iptables.run is run_command:
        iptc = load_iptc()
        if iptc is not None:
            log.info("legacy backend: jump rules ensured in-process through python-iptables")
            return IptcJumps(iptc)
    return CliJumps(iptables)
