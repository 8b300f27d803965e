"""The pod network backends' pure decisions (nodeagent/network/backends/desired.py): which routes, FDB and
neighbour entries each backend wants from the Node objects, host-gw's refusal of nodes that are not
directly connected, the diff against what is present (adds, removals of vanished or moved nodes), the
annotations a node publishes; and PodNetworkAgent (agent.py) over a fake netlink: setup publishes the
annotations, a reconciliation adds what is missing, removes what is no longer wanted and a second pass
(an agent restart) changes nothing."""

from __future__ import annotations

import json

import pytest

from nodeagent.network.backends import desired as d
from nodeagent.network.backends.agent import PodNetworkAgent
from nodeagent.network.backends.netlink import VxlanDevice


def node(name, cidr="", ip="", *, mac="", public_ip="") -> dict:
    annotations = {}
    if mac:
        annotations[d.BACKEND_DATA_ANNOTATION] = json.dumps({"VNI": 1, "VtepMAC": mac})
    if public_ip:
        annotations[d.PUBLIC_IP_ANNOTATION] = public_ip
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"podCIDR": cidr} if cidr else {},
            "status": {"addresses": [{"type": "Hostname", "address": name}]
                       + ([{"type": "InternalIP", "address": ip}] if ip else [])}}


NODES = [node("n1", "10.244.0.0/24", "10.250.0.1", mac="aa:00:00:00:00:01"),
         node("n2", "10.244.1.0/24", "10.250.0.2", mac="aa:00:00:00:00:02"),
         node("n3", "10.244.2.0/24", "10.251.0.3", mac="aa:00:00:00:00:03", public_ip="10.251.0.30"),
         node("no-cidr", "", "10.250.0.9"), node("no-ip", "10.244.9.0/24", "")]


def test_remote_nodes_are_the_others_with_a_cidr_and_an_address():
    remotes = d.remote_nodes(NODES, self_name="n1")
    assert [r.name for r in remotes] == ["n2", "n3"]
    assert remotes[1] == d.RemoteNode("n3", "10.244.2.0/24", "10.251.0.3", "10.251.0.30", "aa:00:00:00:00:03")
    assert remotes[0].public_ip == "10.250.0.2"  # no annotation: the InternalIP


@pytest.mark.parametrize("annotation,mac", [
    pytest.param('{"VNI":1,"VtepMAC":"aa:bb:cc:dd:ee:ff"}', "aa:bb:cc:dd:ee:ff", id="flannel's"),
    pytest.param("null", "", id="host-gw's"), pytest.param("{not json", "", id="garbage"),
    pytest.param('["a"]', "", id="not an object"),
])
def test_vtep_mac_of(annotation, mac):
    assert d.vtep_mac_of({"metadata": {"annotations": {d.BACKEND_DATA_ANNOTATION: annotation}}}) == mac


def test_host_gw_routes_via_internal_ips_and_refuses_nodes_not_directly_connected():
    want = d.desired(d.Backend.HOST_GW, d.remote_nodes(NODES, self_name="n1"), connected=["10.250.0.0/24"])
    assert want.entries.routes == {d.Route("10.244.1.0/24", "10.250.0.2")}
    assert not want.entries.neighbours and not want.entries.fdb
    (refusal,) = want.refused
    assert refusal.node == "n3" and "10.251.0.3 is not on a directly connected subnet (10.250.0.0/24)" in refusal.reason
    assert "--pod-network vxlan" in refusal.reason


def test_vxlan_entries_per_remote_node_across_subnets():
    want = d.desired(d.Backend.VXLAN, d.remote_nodes(NODES, self_name="n1"), device="flannel.1")
    assert want.refused == ()
    assert want.entries.routes == {d.Route("10.244.1.0/24", "10.244.1.0", "flannel.1", onlink=True),
                                   d.Route("10.244.2.0/24", "10.244.2.0", "flannel.1", onlink=True)}
    assert want.entries.neighbours == {d.Neighbour("10.244.1.0", "aa:00:00:00:00:02", "flannel.1"),
                                       d.Neighbour("10.244.2.0", "aa:00:00:00:00:03", "flannel.1")}
    assert want.entries.fdb == {d.FdbEntry("aa:00:00:00:00:02", "10.250.0.2", "flannel.1"),
                                d.FdbEntry("aa:00:00:00:00:03", "10.251.0.30", "flannel.1")}


def test_vxlan_skips_a_node_until_it_published_its_vtep_mac():
    remotes = d.remote_nodes([node("n1"), node("n2", "10.244.1.0/24", "10.250.0.2")], self_name="n1")
    assert not d.desired(d.Backend.VXLAN, remotes).entries


def test_none_wants_nothing():
    assert d.desired(d.Backend.NONE, d.remote_nodes(NODES, self_name="n1")) == d.Desired()


R1, R2 = d.Route("10.244.1.0/24", "10.250.0.2"), d.Route("10.244.2.0/24", "10.250.0.3")
R2_MOVED = d.Route("10.244.2.0/24", "10.250.0.33")
N1 = d.Neighbour("10.244.1.0", "aa:00:00:00:00:02", "flannel.1")
F1 = d.FdbEntry("aa:00:00:00:00:02", "10.250.0.2", "flannel.1")


@pytest.mark.parametrize("want,present,add,remove", [
    pytest.param(d.Entries(frozenset({R1, R2})), d.Entries(), d.Entries(frozenset({R1, R2})), d.Entries(),
                 id="fresh node: everything added"),
    pytest.param(d.Entries(frozenset({R1})), d.Entries(frozenset({R1, R2})), d.Entries(),
                 d.Entries(frozenset({R2})), id="node deleted: its route removed"),
    pytest.param(d.Entries(frozenset({R1, R2_MOVED})), d.Entries(frozenset({R1, R2})),
                 d.Entries(frozenset({R2_MOVED})), d.Entries(frozenset({R2})), id="node moved: old out, new in"),
    pytest.param(d.Entries(frozenset({R1}), frozenset({N1}), frozenset({F1})),
                 d.Entries(frozenset({R1}), frozenset({N1}), frozenset({F1})), d.Entries(), d.Entries(),
                 id="restart: nothing to do"),
    pytest.param(d.Entries(), d.Entries(frozenset({R1}), frozenset({N1}), frozenset({F1})), d.Entries(),
                 d.Entries(frozenset({R1}), frozenset({N1}), frozenset({F1})), id="last remote gone"),
])
def test_diff(want, present, add, remove):
    assert d.diff(want, present) == d.Changes(add=add, remove=remove)


def test_node_annotations_as_flannel():
    assert d.node_annotations(d.Backend.VXLAN, public_ip="10.250.0.1", vtep_mac="aa:bb:cc:dd:ee:ff") == {
        "flannel.alpha.coreos.com/backend-type": "vxlan",
        "flannel.alpha.coreos.com/backend-data": '{"VNI":1,"VtepMAC":"aa:bb:cc:dd:ee:ff"}',
        "flannel.alpha.coreos.com/public-ip": "10.250.0.1",
        "flannel.alpha.coreos.com/kube-subnet-manager": "true"}
    assert d.node_annotations(d.Backend.HOST_GW, public_ip="10.250.0.1")[d.BACKEND_DATA_ANNOTATION] == "null"
    assert d.node_annotations(d.Backend.NONE, public_ip="10.250.0.1") == {}


class FakeNetlink:
    def __init__(self, present: d.Entries | None = None) -> None:
        self.entries = present or d.Entries()
        self.applied: list[d.Changes] = []

    def connected(self) -> list[str]:
        return ["10.250.0.0/24"]

    def ensure_vxlan(self, name, *, public_ip, vtep):
        self.vxlan = (name, public_ip, vtep)
        return VxlanDevice(name=name, index=7, mac="aa:00:00:00:00:01", mtu=1450)

    def present(self, device):
        return self.entries

    def apply(self, changes):
        self.applied.append(changes)
        self.entries = d.Entries(
            (self.entries.routes - changes.remove.routes) | changes.add.routes,
            (self.entries.neighbours - changes.remove.neighbours) | changes.add.neighbours,
            (self.entries.fdb - changes.remove.fdb) | changes.add.fdb)


class FakeClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict]] = []

    def patch(self, path, body, **_):
        self.patches.append((path, body))
        return {}


def test_agent_setup_publishes_the_vtep_and_reconciles_to_a_fixed_point():
    someone_elses = d.Route("192.168.0.0/16", "10.250.0.254")  # never read as present, so never removed
    netlink, client = FakeNetlink(d.Entries(frozenset({R2}))), FakeClient()
    agent = PodNetworkAgent(client, netlink, node_name="n1", backend=d.Backend.VXLAN, node_ip="10.250.0.1",
                            pod_cidr="10.244.0.0/24")
    agent.setup()
    assert netlink.vxlan == ("flannel.1", "10.250.0.1", "10.244.0.0") and agent.pod_mtu == 1450
    (path, body), = client.patches
    assert path == "/api/v1/nodes/n1"
    assert json.loads(body["metadata"]["annotations"][d.BACKEND_DATA_ANNOTATION])["VtepMAC"] == "aa:00:00:00:00:01"
    changes = agent.reconcile(NODES)
    assert changes.remove.routes == {R2} and len(changes.add.routes) == 2 and len(changes.add.fdb) == 2
    assert someone_elses not in changes.remove.routes
    assert agent.reconcile(NODES) == d.Changes(d.Entries(), d.Entries()) and len(netlink.applied) == 1
    restarted = PodNetworkAgent(client, netlink, node_name="n1", backend=d.Backend.VXLAN, node_ip="10.250.0.1",
                                pod_cidr="10.244.0.0/24")
    assert restarted.reconcile(NODES) == d.Changes(d.Entries(), d.Entries())  # entries exactly as before
    gone = restarted.reconcile([n for n in NODES if n["metadata"]["name"] != "n3"])
    assert {r.dst for r in gone.remove.routes} == {"10.244.2.0/24"} and len(gone.remove.fdb) == 1


def test_agent_with_backend_none_touches_nothing():
    netlink, client = FakeNetlink(), FakeClient()
    agent = PodNetworkAgent(client, netlink, node_name="n1", backend=d.Backend.NONE, node_ip="10.250.0.1",
                            pod_cidr="10.244.0.0/24")
    agent.setup()
    assert client.patches == [] and agent.pod_mtu is None
