"""proxy/jumps.py's python-iptables path against real legacy tables, in throwaway network namespaces.

iptc acts on the calling thread's namespace, so every iptc call runs in a thread that entered the test's
namespace (tests/support/netns_thread.py); the CLI side runs through `ip netns exec`. Checked: ensuring twice
inserts nothing the second time; jumps inserted by `iptables -I` are recognised by iptc and the other way
round, while near misses (another comment, another target) are not; the order iptc leaves equals the CLI
path's (`iptables-legacy-save` of two namespaces compared); argv converted to iptc rules reads back as the
same argv; a Proxier on a legacy node uses the iptc path for its full syncs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence

import pytest

from control.util.iptables import Iptables, JumpRule, Mode, run_command
from proxy.jumps import CliJumps, IptcJumps, load_iptc, parse_rule
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig
from proxy.proxier import Proxier
from proxy.render import jump_rules
from tests.conftest import unavailable
from tests.support.netns_thread import run_in_netns
from tests.support.proxy_objects import NetnsRunner, endpoints, service

NODE = NodeConfig("n1", localhost_nodeports=True)  # 14 jumps, KUBE-FIREWALL's included
FOREIGN = ("-A OUTPUT -p tcp -m tcp --dport 9 -j ACCEPT", "-A POSTROUTING -o sktest0 -j RETURN")


@pytest.fixture
def iptc(root: None) -> object:
    if shutil.which("iptables-legacy-save") is None:
        unavailable("iptables-legacy", "not installed (python-iptables drives only the legacy backend)")
    module = load_iptc()
    if module is None:
        unavailable("python-iptables", "iptc does not load (libip4tc/libxtables missing?)")
    return module


def cli(ns: str) -> Iptables:
    return Iptables(mode=Mode.LEGACY, run=NetnsRunner(ns))


def prepare(ns: str, jumps: Sequence[JumpRule]) -> None:
    """The jumps' target chains declared, and foreign rules in the built-in chains the jumps must go above."""
    text = ""
    for table in ("filter", "nat"):
        chains = sorted({j.rule[-1] for j in jumps if j.table == table})
        foreign = [rule for rule in FOREIGN if table == "nat" or rule.startswith("-A OUTPUT")]
        text += f"*{table}\n" + "".join(f":{c} - [0:0]\n" for c in chains) + "".join(f"{r}\n" for r in foreign)
        text += "COMMIT\n"
    cli(ns).restore(text)


def rules(ns: str, table: str) -> list[str]:
    """The `-A` lines of a table, as `iptables-legacy-save` prints them."""
    return [line for line in cli(ns).save(table).splitlines() if line.startswith("-A ")]


def iptc_ensure(ns: str, iptc: object, jumps: Sequence[JumpRule]) -> tuple[JumpRule, ...]:
    return run_in_netns(ns, lambda: IptcJumps(iptc).ensure(jumps))


def test_iptc_leaves_what_the_cli_leaves_and_never_duplicates(netns: Callable[[str], str], iptc: object):
    by_cli, by_iptc = netns("cli"), netns("iptc")
    jumps = jump_rules(NODE)
    assert len(jumps) == 14
    for ns in (by_cli, by_iptc):
        prepare(ns, jumps)
    assert CliJumps(cli(by_cli)).ensure(jumps) == jumps
    assert iptc_ensure(by_iptc, iptc, jumps) == jumps
    assert iptc_ensure(by_iptc, iptc, jumps) == ()
    assert iptc_ensure(by_iptc, iptc, jumps) == ()
    for table in ("filter", "nat"):
        assert rules(by_iptc, table) == rules(by_cli, table)
    nat = rules(by_iptc, "nat")
    assert nat.index('-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES') \
        < nat.index(FOREIGN[0])
    # The CLI agrees that nothing is missing.
    assert CliJumps(cli(by_iptc)).ensure(jumps) == ()


def test_each_side_recognises_the_others_jumps_and_no_near_miss(netns: Callable[[str], str], iptc: object):
    ns = netns("mixed")
    jumps = jump_rules(NODE)
    prepare(ns, jumps)
    by_cli = jumps[::2]
    assert CliJumps(cli(ns)).ensure(by_cli) == by_cli
    # Near misses of jumps only iptc inserts: another comment; another target (python-iptables' own
    # Rule.__eq__ calls any two jumps to chains equal); the conntrack match missing; another ctstate;
    # the same matches in another order.
    comment = ("-m", "comment", "--comment")
    near = [("nat", "OUTPUT", (*comment, "kubernetes service portalz", "-j", "KUBE-SERVICES")),
            ("nat", "POSTROUTING", (*comment, "kubernetes postrouting rules", "-j", "KUBE-SERVICES")),
            ("filter", "FORWARD", (*comment, "kubernetes forwarding rules", "-j", "KUBE-FIREWALL")),
            ("filter", "FORWARD", (*comment, "kubernetes service portals", "-j", "KUBE-SERVICES")),
            ("filter", "OUTPUT", ("-m", "conntrack", "--ctstate", "ESTABLISHED", *comment,
                                  "kubernetes load balancer firewall", "-j", "KUBE-PROXY-FIREWALL")),
            ("filter", "FORWARD", (*comment, "kubernetes externally-visible service portals", "-m", "conntrack",
                                   "--ctstate", "NEW", "-j", "KUBE-EXTERNAL-SERVICES"))]
    for table, chain, rule in near:
        assert (table, chain, rule) not in {(j.table, j.chain, j.rule) for j in jumps}
        cli(ns).insert_rule(table, chain, rule)
    inserted = iptc_ensure(ns, iptc, jumps)
    assert inserted == tuple(j for j in jumps if j not in by_cli)
    assert CliJumps(cli(ns)).ensure(jumps) == ()
    assert iptc_ensure(ns, iptc, jumps) == ()
    for table in ("filter", "nat"):
        saved = rules(ns, table)
        for jump in jumps:
            if jump.table == table:
                assert sum(line == f"-A {jump.chain} {quoted(jump.rule)}" for line in saved) == 1, jump


def quoted(argv: Sequence[str]) -> str:
    return " ".join(f'"{arg}"' if " " in arg else arg for arg in argv)


@pytest.mark.parametrize("argv", [
    pytest.param(("-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "a b", "-j", "KUBE-SKT"),
                 id="conntrack-comment"),
    pytest.param(("-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "KUBE-SKT"), id="inverted"),
    pytest.param(("-m", "addrtype", "--dst-type", "LOCAL", "-j", "KUBE-SKT"), id="addrtype"),
    pytest.param(("-j", "KUBE-SKT"), id="target-only"),
])
def test_argv_converted_by_iptc_reads_back_as_the_same_argv(netns: Callable[[str], str], iptc: object,
                                                            argv: tuple[str, ...]):
    ns = netns("conv")
    cli(ns).restore("*nat\n:KUBE-SKT - [0:0]\n:KUBE-SKT-FROM - [0:0]\nCOMMIT\n")
    jump = JumpRule("nat", "KUBE-SKT-FROM", argv)
    assert iptc_ensure(ns, iptc, [jump]) == (jump,)
    assert rules(ns, "nat") == [f"-A KUBE-SKT-FROM {quoted(argv)}"]
    assert cli(ns).has_rule("nat", "KUBE-SKT-FROM", argv)

    def same_key_as_kernel() -> bool:
        ensurer = IptcJumps(iptc)
        table = iptc.Table("nat", autocommit=False)  # type: ignore[attr-defined]
        table.refresh()
        kernel = iptc.Chain(table, "KUBE-SKT-FROM").rules  # type: ignore[attr-defined]
        return [ensurer.key(rule) for rule in kernel] == [ensurer.key(ensurer.rule(parse_rule(argv)))]

    assert run_in_netns(ns, same_key_as_kernel)


def test_proxier_on_a_legacy_node_ensures_jumps_through_iptc(netns: Callable[[str], str], iptc: object):
    ns = netns("proxier")
    now = [0.0]

    def syncs() -> None:
        # Inside the namespace's thread: the default runner's commands run here too, as on a node.
        proxier = Proxier(node=NODE, iptables=Iptables(mode=Mode.LEGACY, run=run_command), metrics=ProxyMetrics(),
                          conntrack=None, clock=lambda: now[0])
        assert isinstance(proxier.jumps, IptcJumps)
        proxier.on_service_add(service("web"))
        proxier.on_endpoint_slice_add(endpoints("web"))
        proxier.set_initialized()
        proxier.sync()
        for _ in range(2):  # periodic full resyncs
            now[0] += proxier.sync_period
            proxier.sync()
        sample = proxier.metrics.registry.get_sample_value
        assert sample("kubeproxy_sync_full_proxy_rules_duration_seconds_count") == 3.0
        assert sample("kubeproxy_sync_proxy_rules_iptables_restore_failures_total") == 0.0

    run_in_netns(ns, syncs)
    nat, filter_ = cli(ns).save("nat"), cli(ns).save("filter")  # seen from outside, through `ip netns exec`
    assert "-j KUBE-SVC-" in nat
    for jump in jump_rules(NODE):  # every jump once, nothing duplicated by the resyncs
        text = nat if jump.table == "nat" else filter_
        assert text.count(f"-A {jump.chain} {quoted(jump.rule)}\n") == 1, jump
