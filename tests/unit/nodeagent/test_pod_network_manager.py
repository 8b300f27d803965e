"""The kubelet's pod-network glue with a fake netlink and iptables and the real file IPAM: addresses
follow sandboxes, failures give them back, start-up frees what died while the kubelet was down."""

from __future__ import annotations

import pytest

from nodeagent.network.ipam import LocalIPAM
from nodeagent.network.manager import NetworkConfig, PodNetworkManager
from nodeagent.network.podnet import PodInterface, PodNetworkError, netns_path, veth_name
from tests.support.fake_iptables import FakeIptables

CONFIG = NetworkConfig(pod_cidr="10.244.5.0/24", bridge="cbr0", veth_prefix="veth")


class FakeNetwork:
    """Records bridges and veths as the kernel would hold them."""

    def __init__(self, *, fail_setup: bool = False) -> None:
        self.bridges: dict[str, str] = {}
        self.veths: dict[str, str] = {}  # host veth → ip
        self.fail_setup = fail_setup

    def ensure_bridge(self, name: str, gateway_cidr: str) -> None:
        self.bridges[name] = gateway_cidr

    def setup_pod_network(self, pid_or_netns_path, *, ip, prefix_len, gateway, bridge, host_veth_name, mtu=1500):
        if self.fail_setup:
            raise PodNetworkError("namespace gone")
        assert bridge in self.bridges
        self.veths[host_veth_name] = ip
        return PodInterface(host_veth=host_veth_name, ip=ip, prefix_len=prefix_len, gateway=gateway, bridge=bridge,
                            mac="02:00:00:00:00:01")

    def teardown_pod_network(self, host_veth_name: str) -> bool:
        return self.veths.pop(host_veth_name, None) is not None


def make(tmp_path, network=None):
    network = network or FakeNetwork()
    ipt = FakeIptables()
    manager = PodNetworkManager(CONFIG, ipam=LocalIPAM(tmp_path / "ipam.json", CONFIG.pod_cidr), network=network,
                                iptables=ipt)
    return manager, network, ipt


def test_veth_names_are_deterministic_short_and_prefixed():
    name = veth_name("0123abcd" * 8, prefix="sktest")
    assert name == veth_name("0123abcd" * 8, prefix="sktest") and len(name) == 15 and name.startswith("sktest")
    assert veth_name("sandbox-a") != veth_name("sandbox-b")
    for bad in ("", "sktest-too-long", "bad-dash"):
        with pytest.raises(ValueError):
            veth_name("x", prefix=bad)


def test_netns_path_of_a_pid_or_a_path():
    assert netns_path(4242) == "/proc/4242/ns/net"
    assert netns_path("/run/netns/x") == "/run/netns/x"


def test_config_is_validated_up_front():
    with pytest.raises(ValueError):
        NetworkConfig(pod_cidr="10.244.5.0/24", forward_chain="KUBE-FORWARD")
    with pytest.raises(ValueError):
        NetworkConfig(pod_cidr="10.244.5.0/24", veth_prefix="far-too-long-prefix")
    assert (CONFIG.gateway, CONFIG.prefix_len) == ("10.244.5.1", 24)


def test_start_ensures_bridge_and_rules_and_frees_dead_sandboxes(tmp_path):
    manager, network, ipt = make(tmp_path)
    manager.start([])
    manager.attach("alive", "uid1", 100)
    manager.attach("died", "uid2", 101)
    restarted, _, _ = make(tmp_path, network)  # same IPAM file: a new kubelet process
    freed = restarted.start(["alive"])
    assert list(freed) == ["died"] and network.bridges == {"cbr0": "10.244.5.1/24"}
    assert len(ipt.jumps) == 2 and "KUBE-POD-FORWARD" in ipt.restores[0]


def test_attach_allocates_and_wires_detach_undoes_both(tmp_path):
    manager, network, _ = make(tmp_path)
    manager.start([])
    pod = manager.attach("sb1", "uid1", "/proc/1/ns/net")
    assert (pod.ip, pod.gateway, pod.prefix_len) == ("10.244.5.2", "10.244.5.1", 24)
    assert network.veths == {manager.host_veth("sb1"): "10.244.5.2"}
    assert manager.detach("sb1") == "10.244.5.2" and network.veths == {}
    assert manager.detach("sb1") is None  # idempotent


def test_a_failed_setup_releases_the_address(tmp_path):
    manager, _, _ = make(tmp_path, FakeNetwork(fail_setup=True))
    manager.start([])
    with pytest.raises(PodNetworkError):
        manager.attach("sb1", "uid1", 100)
    assert LocalIPAM(tmp_path / "ipam.json", CONFIG.pod_cidr).allocations() == {}


def test_remove_host_rules_deletes_the_jumps(tmp_path):
    manager, _, ipt = make(tmp_path)
    manager.start([])
    manager.remove_host_rules()
    assert ipt.jumps == set() and "-X KUBE-POD-MASQ" in ipt.restores[-1]
