"""The pod network backends for real, in network namespaces this test makes (nothing in the host's):
a "wire" namespace holding a bridge, two node namespaces on it (10.99.0.1 and .2), each with a "pod"
namespace behind a veth (10.244.N.2, its node side 10.244.N.1 as a pod bridge would be). Each node's
PodNetworkAgent (nodeagent/network/backends/) gets the two Node objects and must make the pods reach each
other by IP, with host-gw and with vxlan (the VXLAN device's MTU the uplink's − 50); a second agent (a
restart) changes nothing; a deleted node's entries go; an entry someone else made stays; a node on a
subnet that is not directly connected is refused by host-gw; `remove_all` (what `slimkube down` runs)
leaves nothing of ours."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from nodeagent.network.backends import desired as d
from nodeagent.network.backends.agent import PodNetworkAgent
from nodeagent.network.backends.netlink import ROUTE_PROTOCOL, NetlinkRoutes

pytestmark = pytest.mark.timeout(120)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def in_ns(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], check=check, capture_output=True, text=True)


class FakeClient:  # the agent's Node patch (annotations) goes nowhere here; the Node objects are made below
    def patch(self, path: str, body: dict, **_: object) -> dict:
        return {}


def node_object(name: str, cidr: str, address: str, agent: PodNetworkAgent | None) -> dict:
    annotations = d.node_annotations(agent.backend, public_ip=address,
                                     vtep_mac=agent.vxlan.mac if agent and agent.vxlan else "") if agent else {}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"podCIDR": cidr},
            "status": {"addresses": [{"type": "InternalIP", "address": address}]}}


@pytest.fixture
def cluster(netns: Callable[[str], str]) -> dict[str, str]:
    """Namespaces: wire (bridge), n1/n2 (nodes), p1/p2 (a pod of each)."""
    names = {key: netns(key) for key in ("wire", "n1", "n2", "p1", "p2")}
    ip("-n", names["wire"], "link", "add", "wirebr0", "type", "bridge")
    ip("-n", names["wire"], "link", "set", "wirebr0", "up")
    for i in (1, 2):
        node, pod = names[f"n{i}"], names[f"p{i}"]
        ip("-n", names["wire"], "link", "add", f"up{i}", "type", "veth", "peer", "name", "eth0", "netns", node)
        ip("-n", names["wire"], "link", "set", f"up{i}", "master", "wirebr0", "up")
        ip("-n", node, "addr", "add", f"10.99.0.{i}/24", "dev", "eth0")
        ip("-n", node, "link", "set", "eth0", "up")
        ip("-n", node, "link", "set", "lo", "up")
        wire_pod(node, pod, i)
    return names


def wire_pod(node: str, pod: str, i: int) -> None:
    """Node namespace `node` forwards and holds pod CIDR 10.244.i.0/24 on cbr0, with `pod` at 10.244.i.2."""
    in_ns(node, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    ip("-n", node, "link", "add", "cbr0", "type", "veth", "peer", "name", "eth0", "netns", pod)
    ip("-n", node, "addr", "add", f"10.244.{i}.1/24", "dev", "cbr0")
    ip("-n", node, "link", "set", "cbr0", "up")
    ip("-n", pod, "addr", "add", f"10.244.{i}.2/24", "dev", "eth0")
    ip("-n", pod, "link", "set", "eth0", "up")
    ip("-n", pod, "route", "add", "default", "via", f"10.244.{i}.1")


def agents(cluster: dict[str, str], backend: d.Backend,
           node_ip: Callable[[int], str] = lambda i: f"10.99.0.{i}") -> list[PodNetworkAgent]:
    """A set-up agent for nodes n1 and n2 of `cluster`, node i at `node_ip(i)` with pod CIDR 10.244.i.0/24."""
    made = [PodNetworkAgent(FakeClient(), NetlinkRoutes(netns=cluster[f"n{i}"]), node_name=f"n{i}", backend=backend,
                            node_ip=node_ip(i), pod_cidr=f"10.244.{i}.0/24") for i in (1, 2)]
    for agent in made:
        agent.setup()
    return made


def nodes_of(made: list[PodNetworkAgent]) -> list[dict]:
    return [node_object(a.node_name, a.pod_cidr, a.node_ip, a) for a in made]


def reaches(cluster: dict[str, str], src: str, dst_ip: str) -> bool:
    return in_ns(cluster[src], "busybox", "ping", "-c", "1", "-W", "2", dst_ip, check=False).returncode == 0


@pytest.mark.parametrize("backend", [d.Backend.HOST_GW, d.Backend.VXLAN])
def test_pods_of_two_nodes_reach_each_other_and_a_restart_changes_nothing(cluster, backend) -> None:
    assert not reaches(cluster, "p1", "10.244.2.2")  # nothing routes pods yet
    made = agents(cluster, backend)
    nodes = nodes_of(made)
    for agent in made:
        assert agent.reconcile(nodes).add
    assert reaches(cluster, "p1", "10.244.2.2") and reaches(cluster, "p2", "10.244.1.2")
    if backend is d.Backend.VXLAN:
        assert made[0].vxlan is not None and made[0].vxlan.mtu == 1450 and made[0].pod_mtu == 1450
        assert "vxlan id 1" in ip("-n", cluster["n1"], "-d", "link", "show", "flannel.1")
        assert "dstport 8472" in ip("-n", cluster["n1"], "-d", "link", "show", "flannel.1")
        assert "10.244.2.0/24 via 10.244.2.0 dev flannel.1" in ip("-n", cluster["n1"], "route")
    else:
        assert "10.244.2.0/24 via 10.99.0.2 dev eth0 proto 86" in ip("-n", cluster["n1"], "route")

    before = NetlinkRoutes(netns=cluster["n1"]).present("flannel.1")
    restarted = agents(cluster, backend)  # same devices, same MACs: nothing to change
    assert restarted[0].reconcile(nodes_of(restarted)) == d.Changes(d.Entries(), d.Entries())
    assert NetlinkRoutes(netns=cluster["n1"]).present("flannel.1") == before

    ip("-n", cluster["n1"], "route", "add", "10.123.0.0/16", "via", "10.99.0.2")  # someone else's route
    gone = restarted[0].reconcile([n for n in nodes_of(restarted) if n["metadata"]["name"] != "n2"])
    assert {r.dst for r in gone.remove.routes} == {"10.244.2.0/24"}
    assert not NetlinkRoutes(netns=cluster["n1"]).present("flannel.1")
    assert not reaches(cluster, "p1", "10.244.2.2")
    assert "10.123.0.0/16 via 10.99.0.2" in ip("-n", cluster["n1"], "route")  # not ours: untouched

    NetlinkRoutes(netns=cluster["n2"]).remove_all("flannel.1")
    routes = ip("-n", cluster["n2"], "route", "show", "proto", str(ROUTE_PROTOCOL))
    assert routes.strip() == "" and "flannel.1" not in ip("-n", cluster["n2"], "link")


def test_host_gw_refuses_a_node_that_is_not_directly_connected(cluster) -> None:
    agent = agents(cluster, d.Backend.HOST_GW)[0]
    far = node_object("far", "10.244.7.0/24", "10.98.0.7", None)
    want = agent.desired([far])
    assert not want.entries and [r.node for r in want.refused] == ["far"]
    assert "not on a directly connected subnet (10.244.1.0/24, 10.99.0.0/24)" in want.refused[0].reason
    agent.reconcile([far])
    assert "10.244.7.0" not in ip("-n", cluster["n1"], "route")
