"""--cleanup on an in-memory iptables: the proxy's jumps and chains go, the kubelet's and foreign ones stay."""

from __future__ import annotations

from proxy.cleanup import cleanup, is_proxy_chain
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig
from proxy.proxier import Proxier
from tests.support.fake_iptables import FakeIptables
from tests.support.proxy_objects import endpoints, service

KUBELET_JUMP = ("-m", "comment", "--comment", "slimkube pod forwarding", "-j", "KUBE-POD-FORWARD")


def test_chain_ownership_by_name():
    assert is_proxy_chain("KUBE-SERVICES") and is_proxy_chain("KUBE-SEP-ABC") and is_proxy_chain("KUBE-XLB-ABC")
    assert not is_proxy_chain("KUBE-POD-FORWARD") and not is_proxy_chain("KUBE-POD-MASQ")
    assert not is_proxy_chain("DOCKER") and not is_proxy_chain("KUBE-KUBELET-CANARY")


def test_cleanup_removes_only_the_proxys_jumps_and_chains_and_is_idempotent():
    ipt = FakeIptables()
    ipt.restore("*filter\n:KUBE-POD-FORWARD - [0:0]\n:DOCKER - [0:0]\n-A DOCKER -j RETURN\nCOMMIT\n"
                "*nat\n:KUBE-POD-MASQ - [0:0]\nCOMMIT\n")
    ipt.insert_rule("filter", "FORWARD", KUBELET_JUMP)
    proxier = Proxier(node=NodeConfig("n1"), iptables=ipt, metrics=ProxyMetrics(), conntrack=None)
    proxier.on_service_add(service())
    proxier.on_endpoint_slice_add(endpoints())
    proxier.set_initialized()
    proxier.sync()
    ipt.insert_rule("nat", "OUTPUT", ("-j", "KUBE-SERVICES"))  # a jump written with other options: found too
    assert len(ipt.chains("nat")) > 6

    assert cleanup(ipt) is True
    assert ipt.chains("filter") == {"INPUT", "FORWARD", "OUTPUT", "KUBE-POD-FORWARD", "DOCKER"}
    assert ipt.chains("nat") == {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "KUBE-POD-MASQ"}
    assert ipt.tables["filter"]["FORWARD"] == [KUBELET_JUMP]
    assert ipt.tables["filter"]["DOCKER"] == [("-j", "RETURN")]
    assert all(rules == [] for chain, rules in ipt.tables["nat"].items())
    assert cleanup(ipt) is False
