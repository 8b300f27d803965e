"""proxy/jumps.py without the kernel: argv → rule spec, the CLI ensurer on the fake iptables, which ensurer the
Proxier picks. The iptc path itself is exercised against real legacy tables in tests/integration/test_iptc_jumps.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from control.util.iptables import Iptables, JumpRule, Mode, Result, run_command
from proxy import jumps
from proxy.jumps import CliJumps, IptcJumps, MatchSpec, RuleSpec, parse_rule
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig
from proxy.proxier import Proxier
from proxy.render import jump_rules
from tests.support.fake_iptables import FakeIptables
from tests.support.proxy_objects import endpoints, service

COMMENT = ("-m", "comment", "--comment", "kubernetes service portals")


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param(("-j", "KUBE-FIREWALL"), RuleSpec((), "KUBE-FIREWALL"), id="target-only"),
    pytest.param((*COMMENT, "-j", "KUBE-SERVICES"),
                 RuleSpec((MatchSpec("comment", (("comment", "kubernetes service portals"),)),), "KUBE-SERVICES"),
                 id="comment"),
    pytest.param(("-m", "conntrack", "--ctstate", "NEW", *COMMENT, "-j", "KUBE-SERVICES"),
                 RuleSpec((MatchSpec("conntrack", (("ctstate", "NEW"),)),
                           MatchSpec("comment", (("comment", "kubernetes service portals"),))), "KUBE-SERVICES"),
                 id="conntrack-then-comment"),
    pytest.param(("-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED", "-j", "KUBE-X"),
                 RuleSpec((MatchSpec("conntrack", (("ctstate", "!RELATED,ESTABLISHED"),)),), "KUBE-X"),
                 id="inverted-option"),
    pytest.param(("-m", "addrtype", "--dst-type", "LOCAL", "--limit-iface-in", "x", "-j", "KUBE-NODEPORTS"),
                 RuleSpec((MatchSpec("addrtype", (("dst-type", "LOCAL"), ("limit-iface-in", "x"))),),
                          "KUBE-NODEPORTS"), id="two-options"),
])
def test_parse_rule(argv: tuple[str, ...], expected: RuleSpec):
    assert parse_rule(argv) == expected


@pytest.mark.parametrize("argv", [
    pytest.param(("-m", "comment", "--comment", "x"), id="no-target"),
    pytest.param(("-s", "10.0.0.1", "-j", "KUBE-X"), id="address"),
    pytest.param(("-p", "tcp", "-j", "KUBE-X"), id="protocol"),
    pytest.param(("-g", "KUBE-X"), id="goto"),
    pytest.param(("--comment", "x", "-j", "KUBE-X"), id="option-before-match"),
    pytest.param(("-j", "KUBE-X", "-m", "comment", "--comment", "x"), id="after-target"),
    pytest.param(("-m", "conntrack", "--ctstate"), id="missing-value"),
    pytest.param(("!", "-j", "KUBE-X"), id="inverted-target"),
])
def test_parse_rule_refuses_what_it_cannot_convert_exactly(argv: tuple[str, ...]):
    with pytest.raises(ValueError):
        parse_rule(argv)


def unparse(spec: RuleSpec) -> tuple[str, ...]:
    argv: list[str] = []
    for match in spec.matches:
        argv += ["-m", match.name]
        for option, value in match.options:
            argv += ["!", f"--{option}", value[1:]] if value.startswith("!") else [f"--{option}", value]
    return (*argv, "-j", spec.target)


@pytest.mark.parametrize("localhost", [True, False])
def test_every_rendered_jump_converts_without_loss(localhost: bool):
    jumps_ = jump_rules(NodeConfig("n1", localhost_nodeports=localhost))
    assert any(len(parse_rule(j.rule).matches) == 2 for j in jumps_)
    for jump in jumps_:
        assert unparse(parse_rule(jump.rule)) == jump.rule


def test_cli_jumps_insert_the_missing_ones_in_upstream_order():
    ipt = FakeIptables()
    for table in ("filter", "nat"):
        ipt.restore(f"*{table}\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\nCOMMIT\n")
    a = JumpRule("nat", "OUTPUT", (*COMMENT, "-j", "KUBE-A"))
    b = JumpRule("nat", "OUTPUT", ("-j", "KUBE-B"))
    ipt.insert_rule("nat", "OUTPUT", b.rule)
    ensurer = CliJumps(ipt)  # type: ignore[arg-type]
    assert ensurer.ensure([a, b]) == (a,)
    assert ensurer.ensure([a, b]) == ()
    assert ipt.tables["nat"]["OUTPUT"] == [a.rule, b.rule]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[JumpRule, ...]] = []

    def ensure(self, jumps: Sequence[JumpRule]) -> tuple[JumpRule, ...]:
        self.calls.append(tuple(jumps))
        return ()


def other_runner(argv: Sequence[str], *, stdin: str | None = None) -> Result:
    raise AssertionError("not run")


def test_choose(monkeypatch: pytest.MonkeyPatch):
    fake_iptc = object()
    monkeypatch.setattr(jumps, "load_iptc", lambda: fake_iptc)
    assert isinstance(jumps.choose(Iptables(mode=Mode.NFT)), CliJumps)
    # Commands run elsewhere (`ip netns exec`): iptc would act on this process's namespace instead.
    assert isinstance(jumps.choose(Iptables(mode=Mode.LEGACY, run=other_runner)), CliJumps)
    chosen = jumps.choose(Iptables(mode=Mode.LEGACY, run=run_command))
    assert isinstance(chosen, IptcJumps)
    monkeypatch.setattr(jumps, "load_iptc", lambda: None)
    assert isinstance(jumps.choose(Iptables(mode=Mode.LEGACY)), CliJumps)


def test_load_iptc_returns_none_when_it_cannot_import(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "iptc", None)  # `import iptc` raises ImportError
    assert jumps.load_iptc() is None


def test_proxier_ensures_jumps_through_its_ensurer_on_full_syncs_only():
    ipt, recorder = FakeIptables(), Recorder()
    proxier = Proxier(node=NodeConfig("n1"), iptables=ipt, metrics=ProxyMetrics(),  # type: ignore[arg-type]
                      conntrack=None, clock=lambda: 0.0, jumps=recorder)
    assert Proxier(node=NodeConfig("n1"), iptables=ipt, metrics=ProxyMetrics(),  # type: ignore[arg-type]
                   conntrack=None).jumps == CliJumps(ipt)  # type: ignore[arg-type]
    proxier.on_service_add(service("web"))
    proxier.on_endpoint_slice_add(endpoints("web"))
    proxier.set_initialized()
    proxier.sync()
    assert recorder.calls == [jump_rules(proxier.node)]
    # The jumps' target chains were declared before the ensurer ran.
    assert {j.rule[-1] for j in jump_rules(proxier.node) if j.table == "nat"} <= ipt.chains("nat")
    proxier.on_endpoint_slice_update(endpoints("web"), endpoints("web", ("10.244.1.9",)))
    proxier.sync()  # partial
    assert len(recorder.calls) == 1
