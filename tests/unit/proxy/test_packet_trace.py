"""The packet tracer (tests/support/packet_trace.py) on small handwritten rule sets, so the render tests
that rely on it rest on something checked."""

from __future__ import annotations

import pytest

from control.util.iptables import JumpRule
from tests.support.packet_trace import Netfilter, Packet, parse_rule, trace

JUMPS = (JumpRule("nat", "PREROUTING", ("-j", "T-SVC")), JumpRule("nat", "OUTPUT", ("-j", "T-SVC")),
         JumpRule("nat", "POSTROUTING", ("-j", "T-POST")), JumpRule("filter", "FORWARD", ("-j", "T-FILTER")),
         JumpRule("filter", "OUTPUT", ("-j", "T-FILTER")), JumpRule("filter", "INPUT", ("-j", "T-FILTER")))

RULES = """\
*filter
:T-FILTER - [0:0]
-A T-FILTER -m comment --comment "no endpoints" -m tcp -p tcp -d 10.96.0.9 --dport 80 -j REJECT
-A T-FILTER -m conntrack --ctstate INVALID -j DROP
COMMIT
*nat
:T-SVC - [0:0]
:T-POST - [0:0]
:T-MASQ - [0:0]
:T-LB - [0:0]
:T-EP1 - [0:0]
:T-EP2 - [0:0]
-A T-POST -m mark ! --mark 0x4000/0x4000 -j RETURN
-A T-POST -j MARK --xor-mark 0x4000
-A T-POST -j MASQUERADE --random-fully
-A T-MASQ -j MARK --or-mark 0x4000
-A T-SVC -m tcp -p tcp -d 10.96.0.1 --dport 80 -j T-LB
-A T-SVC -m udp -p udp -d 10.96.0.1 --dport 53 -j T-EP2
-A T-SVC -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j T-LB
-A T-LB ! -s 10.244.0.0/16 -j T-MASQ
-A T-LB -m statistic --mode random --probability 0.5000000000 -j T-EP1
-A T-LB -j T-EP2
-A T-EP1 -s 10.244.0.5 -j T-MASQ
-A T-EP1 -m tcp -p tcp -j DNAT --to-destination 10.244.0.5:8080
-A T-EP2 -p tcp -j DNAT --to-destination 10.244.1.6:8080
-A T-EP2 -p udp -j DNAT --to-destination 10.244.1.6:5353
COMMIT
"""


def run(packet: Packet):
    return trace(RULES, packet, jumps=JUMPS, node_ips=("192.168.1.10",))


def test_statistic_forks_to_every_endpoint() -> None:
    result = run(Packet("10.244.3.3", "10.96.0.1", 80))
    assert result.endpoints == {"10.244.0.5:8080", "10.244.1.6:8080"}
    assert result.verdicts == {"ACCEPT"}
    assert result.masqueraded is False


def test_source_outside_cidr_is_masqueraded() -> None:
    assert run(Packet("172.16.0.1", "10.96.0.1", 80)).masqueraded is True


def test_hairpin_masquerades_only_the_path_back_to_itself() -> None:
    by_dest = run(Packet("10.244.0.5", "10.96.0.1", 80)).masquerade_by_destination()
    assert by_dest == {"10.244.0.5:8080": True, "10.244.1.6:8080": False}


def test_protocol_and_port_must_match() -> None:
    assert run(Packet("10.244.3.3", "10.96.0.1", 53, "udp")).endpoints == {"10.244.1.6:5353"}
    untouched = run(Packet("10.244.3.3", "10.96.0.1", 81))
    assert untouched.endpoints == set() and untouched.verdicts == {"ACCEPT"}


def test_addrtype_local_uses_node_ips() -> None:
    assert run(Packet("8.8.8.8", "192.168.1.10", 30080)).endpoints == {"10.244.0.5:8080", "10.244.1.6:8080"}
    assert run(Packet("8.8.8.8", "192.168.1.11", 30080)).endpoints == set()


def test_filter_reject() -> None:
    assert run(Packet("10.244.3.3", "10.96.0.9", 80)).verdicts == {"REJECT"}
    assert run(Packet("10.244.3.3", "10.96.0.9", 80, local=True)).verdicts == {"REJECT"}


def test_restore_keeps_unnamed_chains_and_deletes_with_x() -> None:
    tables = Netfilter()
    tables.restore(RULES)
    with pytest.raises(ValueError, match="still referenced"):  # T-LB still jumps to it
        tables.restore("*nat\n:T-EP1 - [0:0]\n-X T-EP1\nCOMMIT\n")
    tables.restore("*nat\n:T-LB - [0:0]\n:T-EP1 - [0:0]\n-A T-LB -j T-EP2\n-X T-EP1\nCOMMIT\n")
    assert "T-EP1" not in tables.chains("nat")
    assert [r.target for r in tables.rules("nat", "T-LB")] == ["T-EP2"]
    assert len(tables.rules("nat", "T-SVC")) == 3  # untouched by the second load
    with pytest.raises(ValueError, match="still referenced"):
        tables.restore("*nat\n-X T-EP2\nCOMMIT\n")
    with pytest.raises(ValueError, match="no chain"):
        tables.restore("*nat\n-A T-NOPE -j ACCEPT\nCOMMIT\n")


def test_failed_restore_changes_nothing() -> None:
    tables = Netfilter()
    tables.restore(RULES)
    with pytest.raises(ValueError):
        tables.restore("*nat\n:T-SVC - [0:0]\n-A T-SVC -j T-MISSING\nCOMMIT\n")
    assert len(tables.rules("nat", "T-SVC")) == 3


def test_jumps_are_prepended_once() -> None:
    tables = Netfilter()
    tables.restore(RULES)
    tables.add_jumps(JUMPS)
    tables.add_jumps(JUMPS)
    assert [r.target for r in tables.rules("nat", "PREROUTING")] == ["T-SVC"]


@pytest.mark.parametrize("line", ["-A X -m owner --uid-owner 0 -j ACCEPT", "-A X --weird -j ACCEPT", "-I X -j Y"])
def test_unknown_syntax_is_an_error(line: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(line)


def test_unknown_target_is_an_error() -> None:
    with pytest.raises(ValueError):
        trace("*nat\n:T-SVC - [0:0]\n-A T-SVC -j SNAT --to-source 1.2.3.4\nCOMMIT\n", Packet("1.1.1.1", "2.2.2.2", 1),
              jumps=JUMPS[:1])
