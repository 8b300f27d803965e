"""A small packet tracer over iptables-restore text, for testing what rendered rules *do*.

Modelled on upstream's packet-flow tests (kubernetes pkg/proxy/iptables/proxier_test.go `tracePacket` /
`runPacketFlowTests`): a packet is given by source, destination, protocol and port and by whether it
arrives from outside (nat PREROUTING) or is generated on the node (nat OUTPUT); the tracer walks the
built-in chains' jumps (`render.jump_rules`) into the loaded chains and reports every way the packet can
end: DNATed to which endpoint, masqueraded or not, or REJECTed/DROPped in filter.

`Netfilter` keeps tables the way the kernel does across `iptables-restore --noflush` loads: a `:CHAIN`
line creates or flushes a chain, `-A` appends, `-X` deletes (refused while referenced), chains not named
are left alone. So a full sync followed by a partial one is traced on their combined result.

Matches understood: -s/-d (CIDR, `!`), -p, --dport, -m addrtype --src-type/--dst-type LOCAL (the node's
addresses and 127.0.0.0/8), -m mark [!] --mark V/M, -m conntrack [!] --ctstate (the first packet is NEW,
plus DNAT once translated), -m comment, -m tcp/udp/sctp. `-m statistic` and `-m recent --rcheck` are
treated as "may or may not match": the trace forks, so the endpoints found are every endpoint the rules
can choose (the random choice and the affinity memory are the kernel's). Targets: jumps, RETURN, ACCEPT,
DROP, REJECT, DNAT, MARK --or-mark/--xor-mark/--set-xmark, MASQUERADE. The forms `iptables-save` prints
back (`-d IP/32`, `--set-xmark`, `--mask`/`--rsource` on recent) are read too, so what the kernel holds
can be traced as well as what was rendered. Anything else raises, so a rule the tracer does
not understand fails the test instead of being skipped.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from control.util.iptables import JumpRule

BUILTIN = {"filter": ("INPUT", "FORWARD", "OUTPUT"), "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING")}
TERMINAL = {"ACCEPT", "DROP", "REJECT", "DNAT", "MASQUERADE"}
_MAYBE = object()


@dataclass(frozen=True)
class Packet:
    src: str
    dst: str
    dport: int
    protocol: str = "tcp"
    local: bool = False  # generated on the node (OUTPUT) instead of arriving from outside (PREROUTING)


@dataclass(frozen=True)
class Outcome:
    verdict: str           # ACCEPT | DROP | REJECT
    destination: str       # "ip:port" the packet leaves with (after DNAT, if any)
    dnat: bool
    masquerade: bool


@dataclass(frozen=True)
class Trace:
    outcomes: frozenset[Outcome]

    @property
    def verdicts(self) -> frozenset[str]:
        return frozenset(o.verdict for o in self.outcomes)

    @property
    def endpoints(self) -> frozenset[str]:
        """The endpoints (ip:port) the packet may be DNATed to and accepted."""
        return frozenset(o.destination for o in self.outcomes if o.dnat and o.verdict == "ACCEPT")

    @property
    def masqueraded(self) -> bool:
        """Whether the accepted packet is masqueraded; every path must agree."""
        values = {o.masquerade for o in self.outcomes if o.verdict == "ACCEPT"}
        if len(values) != 1:
            raise AssertionError(f"masquerade differs between paths or nothing accepted: {self.outcomes}")
        return values.pop()

    def masquerade_by_destination(self) -> dict[str, bool]:
        """destination → masqueraded, for traces where it depends on the endpoint chosen (hairpin)."""
        result: dict[str, bool] = {}
        for outcome in self.outcomes:
            if outcome.verdict == "ACCEPT":
                if result.setdefault(outcome.destination, outcome.masquerade) != outcome.masquerade:
                    raise AssertionError(f"masquerade differs for {outcome.destination}: {self.outcomes}")
        return result


@dataclass(frozen=True)
class Rule:
    """One parsed `-A` rule: the matches the tracer knows, and the target with its options."""

    chain: str
    argv: tuple[str, ...]
    matches: tuple[tuple[str, bool, str], ...]  # (kind, negated, value)
    target: str
    target_args: tuple[str, ...]


_VALUE_OPTIONS = {"-s": "src", "--source": "src", "-d": "dst", "--destination": "dst", "-p": "proto",
                  "--protocol": "proto", "--dport": "dport", "--dst-type": "dst-type", "--src-type": "src-type",
                  "--mark": "mark", "--ctstate": "ctstate", "--comment": None, "--mode": None,
                  "--probability": "statistic", "--name": None, "--seconds": None, "--mask": None}
_FLAG_OPTIONS = {"--rcheck": "rcheck", "--reap": None, "--set": None, "--rsource": None}
_MODULES = {"comment", "tcp", "udp", "sctp", "addrtype", "mark", "conntrack", "statistic", "recent"}


def parse_rule(line: str) -> Rule:
    argv = shlex.split(line)
    if len(argv) < 2 or argv[0] != "-A":
        raise ValueError(f"not an -A rule: {line}")
    chain, rest = argv[1], argv[2:]
    matches: list[tuple[str, bool, str]] = []
    i, negate = 0, False
    while i < len(rest):
        arg = rest[i]
        if arg == "!":
            negate = True
            i += 1
            continue
        if arg == "-m":
            if rest[i + 1] not in _MODULES:
                raise ValueError(f"unknown match module {rest[i + 1]!r} in: {line}")
            i += 2
        elif arg in ("-j", "--jump"):
            return Rule(chain, tuple(argv), tuple(matches), rest[i + 1], tuple(rest[i + 2:]))
        elif arg in _VALUE_OPTIONS:
            kind = _VALUE_OPTIONS[arg]
            if kind is not None:
                matches.append((kind, negate, rest[i + 1]))
            i += 2
        elif arg in _FLAG_OPTIONS:
            kind = _FLAG_OPTIONS[arg]
            if kind is not None:
                matches.append((kind, negate, ""))
            i += 1
        else:
            raise ValueError(f"unknown option {arg!r} in: {line}")
        negate = False
    return Rule(chain, tuple(argv), tuple(matches), "", ())  # no target: counts only


@dataclass
class _State:
    src: str
    dst: str
    dport: int
    proto: str
    mark: int = 0
    dnat: bool = False
    masquerade: bool = False


@dataclass
class Netfilter:
    """The filter and nat tables as the kernel would hold them after a sequence of restores."""

    node_ips: Sequence[str] = ()
    tables: dict[str, dict[str, list[Rule]]] = field(default_factory=lambda: {
        table: {chain: [] for chain in chains} for table, chains in BUILTIN.items()})

    def restore(self, text: str) -> None:
        """Apply one `iptables-restore --noflush` input; raises ValueError as restore would fail."""
        table: dict[str, list[Rule]] | None = None
        staged: dict[str, dict[str, list[Rule]]] = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("*"):
                name = line[1:]
                staged[name] = {chain: list(rules) for chain, rules in self.tables[name].items()}
                table = staged[name]
            elif table is None:
                raise ValueError(f"line {number}: outside a table: {line}")
            elif line == "COMMIT":
                table = None
            elif line.startswith(":"):
                table[line[1:].split()[0]] = []
            elif line.startswith("-A "):
                rule = parse_rule(line)
                if rule.chain not in table:
                    raise ValueError(f"line {number}: no chain {rule.chain}")
                if rule.target and rule.target not in TERMINAL | {"RETURN", "MARK"} and rule.target not in table:
                    raise ValueError(f"line {number}: no chain/target {rule.target}")
                table[rule.chain].append(rule)
            elif line.startswith("-X "):
                chain = line.split()[1]
                if chain not in table:
                    raise ValueError(f"line {number}: no chain {chain} to delete")
                if any(r.target == chain for rules in table.values() for r in rules):
                    raise ValueError(f"line {number}: chain {chain} is still referenced")
                del table[chain]
            else:
                raise ValueError(f"line {number}: unsupported: {line}")
        if table is not None:
            raise ValueError("missing COMMIT")
        self.tables.update(staged)

    def add_jumps(self, jumps: Iterable[JumpRule]) -> None:
        """Ensure each jump as the proxier does (`-C`, else `-I`): later ones end up first."""
        for jump in jumps:
            rule = parse_rule(" ".join(["-A", jump.chain, *(shlex.quote(a) for a in jump.rule)]))
            rules = self.tables[jump.table][jump.chain]
            if all(r.argv != rule.argv for r in rules):
                rules.insert(0, rule)

    def chains(self, table: str) -> frozenset[str]:
        return frozenset(self.tables[table]) - frozenset(BUILTIN[table])

    def rules(self, table: str, chain: str) -> list[Rule]:
        return list(self.tables[table][chain])

    def trace(self, packet: Packet) -> Trace:
        start = _State(packet.src, packet.dst, packet.dport, packet.protocol.lower())
        outcomes: set[Outcome] = set()
        for state, verdict in self._walk("nat", "OUTPUT" if packet.local else "PREROUTING", start):
            if verdict in ("DROP", "REJECT"):
                outcomes.add(self._outcome(state, verdict))
                continue
            if packet.local:
                hook = "OUTPUT"
            else:
                hook = "INPUT" if self._is_local(state.dst) else "FORWARD"
            for state2, verdict2 in self._walk("filter", hook, state):
                if verdict2 in ("DROP", "REJECT"):
                    outcomes.add(self._outcome(state2, verdict2))
                    continue
                for state3, verdict3 in self._walk("nat", "POSTROUTING", state2):
                    outcomes.add(self._outcome(state3, "ACCEPT" if verdict3 not in ("DROP", "REJECT") else verdict3))
        return Trace(frozenset(outcomes))

    @staticmethod
    def _outcome(state: _State, verdict: str) -> Outcome:
        return Outcome(verdict, f"{state.dst}:{state.dport}", state.dnat, state.masquerade)

    def _is_local(self, ip: str) -> bool:
        return ip in self.node_ips or ipaddress.ip_address(ip).is_loopback

    def _walk(self, table: str, chain: str, state: _State, start: int = 0,
              depth: int = 0) -> list[tuple[_State, str | None]]:
        """Every (state, verdict) the packet can leave `chain` with; verdict None means it fell through."""
        if depth > 32:
            raise ValueError(f"jump loop at {table}/{chain}")
        rules = self.tables[table][chain]
        results: list[tuple[_State, str | None]] = []
        for index in range(start, len(rules)):
            rule = rules[index]
            matched = self._match(rule, state, table)
            if matched is False:
                continue
            if matched is _MAYBE:
                results += self._walk(table, chain, state, index + 1, depth)
            target = rule.target
            if not target:
                continue
            if target in self.tables[table] and target not in BUILTIN[table]:
                for after, verdict in self._walk(table, target, state, 0, depth + 1):
                    if verdict in (None, "RETURN"):
                        results += self._walk(table, chain, after, index + 1, depth)
                    else:
                        results.append((after, verdict))
                return results
            if target == "MARK":
                state = replace(state, mark=_apply_mark(state.mark, rule.target_args))
                continue
            if target == "RETURN":
                return results + [(state, "RETURN")]
            if target == "DNAT":
                host, port = _option(rule, "--to-destination").rsplit(":", 1)
                return results + [(replace(state, dst=host, dport=int(port), dnat=True), "ACCEPT")]
            if target == "MASQUERADE":
                return results + [(replace(state, masquerade=True), "ACCEPT")]
            if target in ("ACCEPT", "DROP", "REJECT"):
                return results + [(state, target)]
            raise ValueError(f"unknown target {target!r}: {' '.join(rule.argv)}")
        return results + [(state, None)]

    def _match(self, rule: Rule, state: _State, table: str) -> object:
        maybe = False
        for kind, negated, value in rule.matches:
            if kind in ("statistic", "rcheck"):
                maybe = True
                continue
            if kind == "src":
                ok = ipaddress.ip_address(state.src) in ipaddress.ip_network(value, strict=False)
            elif kind == "dst":
                ok = ipaddress.ip_address(state.dst) in ipaddress.ip_network(value, strict=False)
            elif kind == "proto":
                ok = state.proto == value.lower()
            elif kind == "dport":
                ok = state.dport == int(value)
            elif kind in ("dst-type", "src-type"):
                if value != "LOCAL":
                    raise ValueError(f"addrtype {value} not supported: {' '.join(rule.argv)}")
                ok = self._is_local(state.dst if kind == "dst-type" else state.src)
            elif kind == "mark":
                mark, _, mask = value.partition("/")
                ok = state.mark & int(mask or "0xffffffff", 0) == int(mark, 0)
            elif kind == "ctstate":
                states = {"NEW"} | ({"DNAT"} if state.dnat else set())
                ok = bool(states & set(value.split(",")))
            else:
                raise ValueError(f"unknown match {kind}")
            if ok == negated:
                return False
        return _MAYBE if maybe else True


def _option(rule: Rule, name: str) -> str:
    args = list(rule.target_args)
    return args[args.index(name) + 1]


def _apply_mark(mark: int, args: Sequence[str]) -> int:
    op = args[0]
    if op == "--or-mark":
        return mark | int(args[1], 0)
    if op == "--xor-mark":
        return mark ^ int(args[1], 0)
    if op == "--set-xmark":
        new, _, mask = args[1].partition("/")
        return (mark & ~int(mask or "0xffffffff", 0)) ^ int(new, 0)
    raise ValueError(f"MARK {op} not supported")


def trace(text: str, packet: Packet, *, jumps: Iterable[JumpRule], node_ips: Sequence[str] = ()) -> Trace:
    """Load `text` into empty tables, add the jumps, and trace one packet."""
    tables = Netfilter(node_ips=tuple(node_ips))
    tables.restore(text)
    tables.add_jumps(jumps)
    return tables.trace(packet)
