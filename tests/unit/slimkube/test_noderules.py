"""The host's node network rules of `up --nodes` (slimkube/noderules.py) on the in-memory iptables:
forwarding to and from the node bridge, the node network masqueraded only out of the uplink, jumps
ensured once however often applied, and `remove` leaving the tables as they were."""

from __future__ import annotations

import copy

from slimkube import noderules
from tests.support.fake_iptables import FakeIptables

CONFIG = noderules.NodeRulesConfig(bridge="slimnodes0", nodes_cidr="10.250.0.0/24", uplink="eth0")


def test_rules_forward_the_node_bridge_and_masquerade_only_out_of_the_uplink():
    iptables = FakeIptables()
    before = copy.deepcopy(iptables.tables)
    noderules.apply(iptables, CONFIG)
    noderules.apply(iptables, CONFIG)  # a second `up`: same rules, one jump each
    assert iptables.tables["filter"][noderules.FORWARD_CHAIN] == [
        ("-i", "slimnodes0", "-m", "comment", "--comment", "from the node network", "-j", "ACCEPT"),
        ("-o", "slimnodes0", "-m", "comment", "--comment", "to the node network", "-j", "ACCEPT")]
    assert iptables.tables["nat"][noderules.EGRESS_CHAIN] == [
        ("-s", "10.250.0.0/24", "-o", "eth0", "-m", "comment", "--comment", "node network to the world",
         "-j", "MASQUERADE")]
    assert [r[-1] for r in iptables.tables["filter"]["FORWARD"]] == [noderules.FORWARD_CHAIN]
    assert [r[-1] for r in iptables.tables["nat"]["POSTROUTING"]] == [noderules.EGRESS_CHAIN]
    noderules.remove(iptables)
    noderules.remove(iptables)
    assert iptables.tables == before


def test_no_uplink_no_masquerade():
    iptables = FakeIptables()
    noderules.apply(iptables, noderules.NodeRulesConfig(bridge="b", nodes_cidr="10.250.0.0/24", uplink=""))
    assert iptables.tables["nat"][noderules.EGRESS_CHAIN] == []
