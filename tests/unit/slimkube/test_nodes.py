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


def test_node_subnets_spread_nodes_round_robin_behind_a_router():
    plan = nodes.plan(5, first_name="h", cluster_cidr="10.244.0.0/16", data_dir="/d", subnets=2)
    assert (plan.host_ip, plan.prefixlen, plan.nodes_cidr) == ("10.250.0.1", 25, "10.250.0.0/24")
    assert plan.router == nodes.RouterSpec(netns="h-router", host_veth="slimnoder", address="10.250.0.126",
                                           subnets=(nodes.Subnet(index=1, cidr="10.250.0.128/25", bridge="subnet1",
                                                                 gateway="10.250.0.129"),))
    assert [(n.name, n.subnet, n.node_ip, n.prefixlen, n.gateway, n.bridge_netns, n.bridge, n.via_router)
            for n in plan.nodes] == [
        ("h-2", 1, "10.250.0.130", 25, "10.250.0.129", "h-router", "subnet1", ""),
        ("h-3", 0, "10.250.0.2", 25, "10.250.0.1", "", "slimnodes0", "10.250.0.126"),
        ("h-4", 1, "10.250.0.131", 25, "10.250.0.129", "h-router", "subnet1", ""),
        ("h-5", 0, "10.250.0.3", 25, "10.250.0.1", "", "slimnodes0", "10.250.0.126"),
    ]
    assert nodes.NodesPlan.from_json(plan.to_json()) == plan


def test_three_subnets_take_the_first_three_quarters():
    plan = nodes.plan(3, first_name="h", cluster_cidr="10.244.0.0/16", data_dir="/d", subnets=3)
    assert plan.router is not None
    assert [(s.cidr, s.gateway) for s in plan.router.subnets] == [("10.250.0.64/26", "10.250.0.65"),
                                                                  ("10.250.0.128/26", "10.250.0.129")]
    assert [(n.node_ip, n.gateway) for n in plan.nodes] == [("10.250.0.66", "10.250.0.65"),
                                                            ("10.250.0.130", "10.250.0.129")]


def test_one_subnet_is_the_plain_node_bridge():
    plan = three()
    assert plan.router is None and {(n.gateway, n.bridge_netns, n.via_router) for n in plan.nodes} == {
        ("10.250.0.1", "", "")}


def test_a_plan_file_from_before_subnets_still_reads():
    document = three().to_json()
    del document["router"], document["prefixLength"]
    for node in document["nodes"]:
        for key in ("prefixLength", "gateway", "subnet", "bridgeNetns", "bridge", "viaRouter"):
            del node[key]
    assert nodes.NodesPlan.from_json(document) == three()


@pytest.mark.parametrize("count,subnets,cidr,message", [
    pytest.param(3, 4, "10.250.0.0/24", "between 1 and --nodes", id="more-subnets-than-nodes"),
    pytest.param(3, 0, "10.250.0.0/24", "between 1 and --nodes", id="zero"),
    pytest.param(4, 4, "10.250.0.0/29", "too small for 4 subnets", id="too-small"),
    pytest.param(12, 2, "10.250.0.0/28", "room for 4 nodes on subnet 10.250.0.0/29, not 5", id="full-subnet"),
])
def test_subnet_plans_that_cannot_work_are_refused(count, subnets, cidr, message):
    with pytest.raises(nodes.PlanError, match=message):
        nodes.plan(count, first_name="h", cluster_cidr="10.244.0.0/16", data_dir="/d", nodes_cidr=cidr,
                   subnets=subnets)
