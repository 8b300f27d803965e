"""The pure parts of `up --nodes N`: the address plan, the daemons' command lines (slimkube/nodes.py)."""

from __future__ import annotations

import pytest

from slimkube import nodes


def three(**overrides):
    options = {"first_name": "host", "cluster_cidr": "10.244.0.0/16", "data_dir": "/d"}
    return nodes.plan(3, **{**options, **overrides})


def test_one_node_plans_no_namespaces():
    plan = nodes.plan(1, first_name="host", cluster_cidr="10.244.0.0/16", data_dir="/d")
    assert plan.nodes == () and plan.host_ip == "10.250.0.1"


def test_nodes_2_to_n_get_names_addresses_veths_and_data_dirs():
    plan = three()
    assert [(n.index, n.name, n.netns, n.node_ip, n.host_veth, n.data_dir) for n in plan.nodes] == [
        (2, "host-2", "host-2", "10.250.0.2", "slimnode2", "/d/nodes/host-2"),
        (3, "host-3", "host-3", "10.250.0.3", "slimnode3", "/d/nodes/host-3"),
    ]
    assert (plan.bridge, plan.host_ip, plan.prefixlen) == ("slimnodes0", "10.250.0.1", 24)


def test_node_addresses_follow_the_nodes_cidr():
    plan = nodes.plan(5, first_name="n", cluster_cidr="10.244.0.0/16", data_dir="/d", nodes_cidr="10.250.7.0/24")
    assert [n.node_ip for n in plan.nodes] == ["10.250.7.2", "10.250.7.3", "10.250.7.4", "10.250.7.5"]


@pytest.mark.parametrize("count,overrides,message", [
    pytest.param(0, {}, "at least 1", id="zero"),
    pytest.param(3, {"nodes_cidr": "10.250.0.0/31"}, "has room for", id="small-node-net"),
    pytest.param(3, {"nodes_cidr": "10.244.9.0/24"}, "overlaps the cluster CIDR", id="overlap"),
    pytest.param(3, {"nodes_cidr": "10.250.0.1/24"}, "--nodes-cidr", id="host-bits"),
    pytest.param(3, {"first_name": "a" * 252}, "not a valid DNS-1123", id="long-name"),
])
def test_plans_that_cannot_work_are_refused(count, overrides, message):
    options = {"first_name": "host", "cluster_cidr": "10.244.0.0/16", "data_dir": "/d", **overrides}
    with pytest.raises(nodes.PlanError, match=message):
        nodes.plan(count, **options)


def test_the_plan_round_trips_through_its_file_form():
    plan = three()
    assert nodes.NodesPlan.from_json(plan.to_json()) == plan


def test_agents_and_proxies_join_with_server_and_token_file_inside_their_namespace():
    node = three().nodes[0]
    agent = nodes.in_netns(node.netns, nodes.agent_argv(node, python="py", server="https://10.250.0.1:6443",
                                                        cluster_cidr="10.244.0.0/16",
                                                        config_file="/d/nodes/kubelet.yaml"))
    assert agent == ["ip", "netns", "exec", "host-2", "py", "-m", "slimkube.cli", "agent",
                     "--server", "https://10.250.0.1:6443", "--token-file", "/d/nodes/host-2/join-token",
                     "--node-name", "host-2",
                     "--node-ip", "10.250.0.2", "--cluster-cidr", "10.244.0.0/16",
                     "--data-dir", "/d/nodes/host-2", "--config", "/d/nodes/kubelet.yaml"]
    with_dns = nodes.agent_argv(node, python="py", server="https://s:1", cluster_cidr="10.244.0.0/16",
                                config_file=None, cluster_dns="10.100.0.10", cluster_domain="corp.k8s",
                                serve_dns=False)
    assert with_dns[-5:] == ["--cluster-dns", "10.100.0.10", "--cluster-domain", "corp.k8s", "--no-serve-dns"]
    backend = nodes.agent_argv(node, python="py", server="https://s:1", cluster_cidr="10.244.0.0/16",
                               config_file=None, pod_network="host-gw")
    assert "--pod-cidr" not in backend and backend[backend.index("--pod-network") + 1] == "host-gw"
    assert "--network-plugin" not in backend
    cni = nodes.agent_argv(node, python="py", server="https://s:1", cluster_cidr="10.244.0.0/16",
                           config_file=None, network_plugin="cni", cni_bin_dir="/opt/cni/bin")
    assert cni[cni.index("--network-plugin"):cni.index("--network-plugin") + 6] == [
        "--network-plugin", "cni", "--cni-conf-dir", "/d/nodes/host-2/cni/net.d", "--cni-bin-dir", "/opt/cni/bin"]
    proxy = nodes.proxy_argv(node, python="py", server="https://s:1", cluster_cidr="10.244.0.0/16",
                             config_file=None)
    assert proxy == ["py", "-m", "slimkube.cli", "proxy", "--server", "https://s:1",
                     "--token-file", "/d/nodes/host-2/join-token",
                     "--hostname-override", "host-2", "--cluster-cidr", "10.244.0.0/16",
                     "--data-dir", "/d/nodes/host-2"]


@pytest.mark.parametrize(("address", "internal_ip", "expected"), [
    pytest.param("127.0.0.1", "10.250.0.1", "10.250.0.1", id="loopback-hides-the-kubelet"),
    pytest.param("0.0.0.0", "10.250.0.1", "0.0.0.0", id="wildcard-kept"),
    pytest.param("::", "10.250.0.1", "::", id="v6-wildcard-kept"),
    pytest.param("10.250.0.1", "10.250.0.1", "10.250.0.1", id="already-the-internal-ip"),
    pytest.param("127.0.0.1", "127.0.0.1", "127.0.0.1", id="loopback-node"),
])
def test_kubelet_listens_where_it_advertises(address: str, internal_ip: str, expected: str) -> None:
    assert nodes.kubelet_listen_address(address, internal_ip) == expected
