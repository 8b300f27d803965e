"""`slimkube up`'s plan (slimkube/upplan.py): flags and host facts in, the configurations of everything it
starts out, and each refusal named before anything starts."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from slimkube.multinode import Join
from slimkube.upplan import HostFacts, UpFlags, UpPlan, UpPlanError, gather_facts, kubelet_config_file, plan_up

FACTS = HostFacts(hostname="Debian", default_ip="192.0.2.7", kubelet_document=None, proxy_document=None)


def _plan(kubelet: dict[str, Any] | None = None, proxy: dict[str, Any] | None = None, **flags: Any) -> UpPlan:
    facts = dataclasses.replace(FACTS, kubelet_document=kubelet, proxy_document=proxy)
    return plan_up(UpFlags(data_dir="/var/lib/sk", **flags), facts)


def test_one_node_with_defaults():
    plan = _plan()
    assert plan.data_dir == "/var/lib/sk" and plan.disabled == frozenset() and plan.nodes is None
    kubelet = plan.kubelet
    assert (kubelet.node_name, kubelet.data_dir, kubelet.address, kubelet.port) == ("debian", "/var/lib/sk",
                                                                                    "0.0.0.0", 10250)
    # no pod CIDR: the node IPAM controller gives the Node one and the kubelet waits for it
    assert (kubelet.cluster_cidr, kubelet.pod_cidr, kubelet.node_ip) == ("10.244.0.0/16", "", "")
    assert kubelet.cluster_dns == ("10.96.0.10",) and kubelet.cluster_domain == "cluster.local"
    server = plan.server
    assert (server.data_dir, server.bind_address, server.port, server.datastore) == ("/var/lib/sk", "0.0.0.0", 6443,
                                                                                     "sqlite://")
    assert (server.service_cidr, server.cluster_cidr, server.advertise_address) == ("10.96.0.0/12",
                                                                                    "10.244.0.0/16", None)
    assert (plan.proxy.node_name, plan.proxy.cluster_cidr) == ("debian", "10.244.0.0/16")
    assert plan.serve_dns and plan.notes == ()


def test_the_plan_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _plan().serve_dns = False  # type: ignore[misc]


@pytest.mark.parametrize("flags,kubelet,expected", [
    pytest.param({"service_cidr": "10.100.0.0/16"}, None, {"cluster_dns": ("10.100.0.10",)},
                 id="cluster-dns-follows-the-service-cidr"),
    pytest.param({"cluster_dns": " 10.0.0.53, ,10.0.0.54"}, None, {"cluster_dns": ("10.0.0.53", "10.0.0.54")},
                 id="cluster-dns-flag"),
    pytest.param({}, {"clusterDNS": ["10.9.9.9"]}, {"cluster_dns": ("10.9.9.9",)}, id="cluster-dns-file"),
    pytest.param({"cluster_cidr": "10.50.0.0/16"}, None, {"cluster_cidr": "10.50.0.0/16", "pod_cidr": ""},
                 id="one-node-pod-cidr-from-the-node-ipam"),
    pytest.param({"cluster_cidr": "10.50.0.0/16", "node_count": 2}, None,
                 {"cluster_cidr": "10.50.0.0/16", "pod_cidr": ""}, id="nodes-pod-cidrs-from-the-node-ipam"),
    pytest.param({"pod_network": "host-gw"}, {"podNetwork": "none"}, {"pod_network": "host-gw"},
                 id="pod-network-flag-wins-over-the-file"),
    pytest.param({}, {"clusterCIDR": "10.60.0.0/16", "podCIDR": "10.60.7.0/24"},
                 {"cluster_cidr": "10.60.0.0/16", "pod_cidr": "10.60.7.0/24"}, id="cidrs-from-the-file"),
    pytest.param({"node_name": "flagged", "kubelet_port": 10555}, {"nodeName": "filed", "port": 10444},
                 {"node_name": "flagged", "port": 10555}, id="flags-win-over-the-file"),
    pytest.param({}, {"nodeName": "filed"}, {"node_name": "filed"}, id="file-wins-over-the-hostname"),
    pytest.param({"node_ip": "192.0.2.99"}, {"address": "192.0.2.99"}, {"address": "192.0.2.99"},
                 id="listening-on-its-internal-ip"),
    pytest.param({}, {"address": "::"}, {"address": "::"}, id="listening-on-a-wildcard"),
])
def test_kubelet_settings(flags, kubelet, expected):
    plan = _plan(kubelet, **flags)
    assert {name: getattr(plan.kubelet, name) for name in expected} == expected
    assert plan.notes == ()
    assert (plan.server.cluster_cidr, plan.proxy.cluster_cidr) == (plan.kubelet.cluster_cidr,) * 2


def test_a_kubelet_address_the_api_server_cannot_dial_becomes_its_internal_ip():
    plan = _plan({"address": "127.0.0.1"})
    assert plan.kubelet.address == "192.0.2.7"  # the host's default-route address, reported as InternalIP
    assert plan.notes == ("[up] kubelet address 127.0.0.1 is not the node's InternalIP 192.0.2.7, which the API "
                          "server dials: listening on 192.0.2.7",)


def test_the_proxy_reads_its_file_with_the_kubelets_name_and_cluster_cidr():
    plan = _plan({"nodeName": "n1", "clusterCIDR": "10.70.0.0/16"},
                 {"hostnameOverride": "ignored", "clusterCIDR": "10.1.0.0/16", "metricsBindAddress": "0.0.0.0:9"})
    assert (plan.proxy.node_name, plan.proxy.cluster_cidr, plan.proxy.metrics_bind_address) == (
        "n1", "10.70.0.0/16", "0.0.0.0:9")


def test_disabled_components_are_in_the_plan():
    assert _plan(disable="scheduler, endpoint").disabled == frozenset({"scheduler", "endpoint"})


def test_three_nodes_share_one_node_network():
    plan = _plan(node_count=3)
    assert plan.nodes is not None
    assert [(n.name, n.node_ip, n.data_dir) for n in plan.nodes.nodes] == [
        ("debian-2", "10.250.0.2", "/var/lib/sk/nodes/debian-2"),
        ("debian-3", "10.250.0.3", "/var/lib/sk/nodes/debian-3"),
    ]
    assert plan.kubelet.pod_cidr == ""  # every node's comes from the node IPAM controller
    assert plan.nodes.host_ip == "10.250.0.1"
    assert plan.kubelet.node_ip == "10.250.0.1" and plan.kubelet.address == "0.0.0.0"
    assert plan.server.advertise_address == "10.250.0.1"
    assert plan.node_join(api_port=6443, token="K10x::node:pw") == Join(
        server="https://10.250.0.1:6443", token="K10x::node:pw", cluster_cidr="10.244.0.0/16",
        cluster_dns="10.96.0.10", cluster_domain="cluster.local", serve_dns=True, pod_network="vxlan",
        network_plugin="builtin", cni_bin_dir="/usr/lib/cni")


@pytest.mark.parametrize(("pod_network", "noted"), [
    pytest.param("vxlan", False, id="vxlan"), pytest.param("host-gw", True, id="host-gw-refuses-across-subnets")])
def test_node_subnets_put_a_router_between_the_nodes(pod_network: str, noted: bool) -> None:
    plan = _plan(node_count=3, node_subnets=2, pod_network=pod_network)
    assert plan.nodes is not None and plan.nodes.router is not None
    assert [(n.name, n.node_ip, n.gateway) for n in plan.nodes.nodes] == [
        ("debian-2", "10.250.0.130", "10.250.0.129"), ("debian-3", "10.250.0.2", "10.250.0.1")]
    assert plan.kubelet.node_ip == plan.server.advertise_address == "10.250.0.1"
    assert any("host-gw needs the nodes on one L2 subnet" in note for note in plan.notes) is noted


def test_a_configured_node_ip_is_kept_with_several_nodes():
    plan = _plan(node_count=2, node_ip="192.0.2.50", bind_address="10.250.0.1", serve_dns=False)
    assert plan.kubelet.node_ip == "192.0.2.50" and plan.server.advertise_address == "10.250.0.1"
    assert plan.node_join(api_port=1, token="t").serve_dns is False


@pytest.mark.parametrize("flags,kubelet,proxy,message,flag", [
    pytest.param({"service_cidr": "bad"}, None, None, "does not appear to be", "--service-cidr", id="service-cidr"),
    pytest.param({"cluster_cidr": "10.244.0.1/16"}, None, None, "host bits set", "--cluster-cidr",
                 id="cluster-cidr"),
    pytest.param({"disable": "bogus"}, None, None, "unknown bogus", "--disable", id="disable"),
    pytest.param({"pod_cidr": "10.99.0.0/24"}, None, None, "not inside the cluster CIDR", None,
                 id="pod-cidr-outside-cluster"),
    pytest.param({}, {"podBrige": "x"}, None, "unknown field 'podBrige'", None, id="kubelet-file"),
    pytest.param({}, None, {"bogus": 1}, "unknown field 'bogus'", None, id="proxy-file"),
    pytest.param({"node_count": 3, "bind_address": "127.0.0.1"}, None, None, "reachable from the node namespaces",
                 None, id="nodes-need-a-reachable-server"),
    pytest.param({"node_count": 3, "nodes_cidr": "10.244.0.0/24"}, None, None, "overlaps the cluster CIDR", None,
                 id="nodes-cidr"),
    pytest.param({"node_subnets": 2}, None, None, "--node-subnets needs --nodes", "--node-subnets",
                 id="subnets-without-nodes"),
    pytest.param({"node_count": 3, "node_subnets": 4}, None, None, r"between 1 and --nodes \(3\), not 4", None,
                 id="more-subnets-than-nodes"),
])
def test_refusals_name_the_problem(flags, kubelet, proxy, message, flag):
    with pytest.raises(UpPlanError, match=message) as caught:
        _plan(kubelet, proxy, **flags)
    assert caught.value.flag == flag


def test_gather_facts_reads_the_config_files_of_the_data_dir(tmp_path):
    flags = UpFlags(data_dir=str(tmp_path))
    facts = gather_facts(flags)
    assert (facts.kubelet_document, facts.proxy_document) == (None, None) and facts.hostname
    (tmp_path / "kubelet.yaml").write_text("nodeName: a\n")
    (tmp_path / "kube-proxy.yaml").write_text("clusterCIDR: 10.1.0.0/16\n")
    facts = gather_facts(flags)
    assert (facts.kubelet_document, facts.proxy_document) == ({"nodeName": "a"}, {"clusterCIDR": "10.1.0.0/16"})
    other = tmp_path / "other.yaml"
    other.write_text("nodeName: b\n")
    assert gather_facts(dataclasses.replace(flags, config_file=str(other))).kubelet_document == {"nodeName": "b"}
    assert kubelet_config_file(str(tmp_path), None) == str(tmp_path / "kubelet.yaml")
    assert kubelet_config_file(str(tmp_path / "none"), None) is None
