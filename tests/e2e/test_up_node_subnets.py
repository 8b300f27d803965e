"""The pod network of `slimkube up --nodes 3 --node-subnets 2`, nodes that share no L2: node 1 (this host)
and node 3 on subnet 0 (the node bridge), node 2 on subnet 1 behind the router namespace `up` makes.

With vxlan (the default), one `up` serves the module's tests in order: nodes on two subnets with distinct
pod CIDRs from the node IPAM controller (no node is told one); a Deployment spread over all three nodes
(required pod anti-affinity on the hostname) whose every pod reaches every other by IP with its own source
address, and the Service's ClusterIP and `web.default.svc.cluster.local` from every node; a server in a
namespace outside the cluster CIDR sees each node's own address; an agent restart leaves every node's
routes, FDB and neighbour entries exactly as they were (the agent logs no change); deleting a node (its
agent stopped, the Node deleted) removes its entries from the others. With host-gw, its own `up`: nodes on
one subnet reach each other's pods, the node on the other subnet is refused by every agent with the clear
error and gets no route. (host-gw on one subnet: tests/e2e/test_multinode.py.)

Safety: as tests/e2e/test_multinode.py (the node network, cluster CIDR and outside network clear of this
host's routes; the service CIDR routed to an empty bridge in every node's namespace before any packet to it).
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from control.client.rest import RESTClient
from tests.e2e.test_multinode import (
    WEB_SCRIPT,
    cli,
    fetch,
    outside_server,
    prepare_cluster,
    ready_since,
    remote_addr,
    start_up,
    web_pod,
)
from tests.e2e.test_up_down import UpProcess, wait_running
from tests.support.polling import wait_for

SUBNETS = 2
pytestmark = pytest.mark.timeout(240)


@dataclass
class Cluster:
    up: UpProcess
    client: RESTClient
    names: list[str]  # node names, this host's first
    addresses: dict[str, str]  # node name → InternalIP
    cidrs: dict[str, str]  # node name → spec.podCIDR
    data_dir: str
    run_id: str
    cluster_cidr: str
    vxlan_device: str  # node 1's, in this host's namespace (the others' are flannel.1 in theirs)


def start(tmp_path_factory: pytest.TempPathFactory, docker_api, pod_network: str, stack: ExitStack, *,
          network_plugin: str = "builtin") -> Cluster:
    """`up --nodes 3 --node-subnets 2` with the pod network backend and network plugin given (as
    prepare_cluster sets them) and the safety net, all removed when `stack` closes."""
    run_id = uuid.uuid4().hex[:8]
    actions: list[Callable[[], object]] = []
    stack.callback(lambda: [action() for action in reversed(actions)])
    prepared = prepare_cluster(tmp_path_factory.mktemp("subnets") / "up", run_id, docker_api, actions.append,
                               pod_network=pod_network, network_plugin=network_plugin)
    up, kubeconfig = start_up(prepared, stack, actions.append, "--node-subnets", str(SUBNETS))
    client = stack.enter_context(RESTClient.from_kubeconfig(kubeconfig))
    nodes = {n["metadata"]["name"]: n for n in client.get("/api/v1/nodes")["items"]}
    addresses = {name: next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
                 for name, node in nodes.items()}
    return Cluster(up=up, client=client, names=prepared["names"], addresses=addresses,
                   cidrs={name: node["spec"].get("podCIDR", "") for name, node in nodes.items()},
                   data_dir=prepared["data_dir"], run_id=run_id, cluster_cidr=prepared["cluster_cidr"],
                   vxlan_device=prepared["vxlan_device"])


def stop_and_down(cluster: Cluster) -> None:
    assert cluster.up.interrupt() == 0, "\n".join(cluster.up.lines)
    down = cli("down", "--data-dir", cluster.data_dir)
    assert down.returncode == 0, down.stderr
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{cluster.names[0]}-router" not in netns and not [n for n in cluster.names if n in netns], netns
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert "slimnode" not in links, links


@pytest.fixture(scope="module")
def vxlan(root, docker_api, images, iptables, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with ExitStack() as stack:
        cluster = start(tmp_path_factory, docker_api, "vxlan", stack)
        yield cluster
        stop_and_down(cluster)


def agent_log(cluster: Cluster, node: str) -> str:
    return Path(cluster.data_dir, "nodes", node, "agent.log").read_text(errors="replace")


def entries(cluster: Cluster, node: str) -> dict[str, list[str]]:
    """The pod network entries on `node`: routes of protocol 86 into the cluster CIDR, and its VXLAN
    device's FDB and neighbour entries."""
    if node == cluster.names[0]:
        enter, device = [], cluster.vxlan_device
    else:
        enter, device = ["ip", "netns", "exec", node], "flannel.1"

    def lines(*argv: str) -> list[str]:  # none when the device is absent (host-gw)
        done = subprocess.run([*enter, *argv], capture_output=True, text=True, check=False)
        return sorted(line.strip() for line in done.stdout.splitlines() if line.strip())

    cluster_net = ipaddress.ip_network(cluster.cluster_cidr)
    routes = [r for r in lines("ip", "route", "show", "proto", "86")
              if ipaddress.ip_network(r.split()[0]).subnet_of(cluster_net)]
    return {"routes": routes, "fdb": [f for f in lines("bridge", "fdb", "show", "dev", device) if " dst " in f],
            "neigh": [n for n in lines("ip", "neigh", "show", "dev", device) if "PERMANENT" in n]}


def test_nodes_on_two_subnets_behind_a_router_get_distinct_pod_cidrs(vxlan: Cluster) -> None:
    one, two, three = vxlan.names
    node_net = ipaddress.ip_network(vxlan.addresses[one]).supernet(new_prefix=24)
    subnet0, subnet1 = node_net.subnets(prefixlen_diff=1)
    assert [ipaddress.ip_address(vxlan.addresses[n]) in subnet0 for n in (one, two, three)] == [True, False, True]
    assert ipaddress.ip_address(vxlan.addresses[two]) in subnet1
    route = subprocess.run(["ip", "-n", three, "route", "get", vxlan.addresses[two]], capture_output=True,
                           text=True, check=True).stdout
    assert " via " in route, route  # no L2 between the subnets: through the router
    assert len(set(vxlan.cidrs.values())) == 3 and all(vxlan.cidrs.values()), vxlan.cidrs
    assert all(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network(vxlan.cluster_cidr))
               for c in vxlan.cidrs.values())
    assert "[up] router namespace" in "\n".join(vxlan.up.lines)


def web_deployment() -> dict:
    labels = {"app": "sktest-web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                             {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}},
                         "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                                         "command": ["sh", "-c", WEB_SCRIPT],
                                         "ports": [{"containerPort": 8080}]}]}}}}


def test_a_deployment_over_every_node_reaches_pods_service_and_dns_name(vxlan: Cluster, docker_api) -> None:
    client = vxlan.client
    client.create("/apis/apps/v1/namespaces/default/deployments", web_deployment())
    client.create("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "sktest-web"}, "ports": [{"port": 80, "targetPort": 8080}]}})

    def pods() -> list[dict]:
        return client.get("/api/v1/namespaces/default/pods", params={"labelSelector": "app=sktest-web"})["items"]

    wait_for(lambda: len(pods()) == 3, 30, "3 pods of the Deployment")
    running = [wait_running(client, f"/api/v1/namespaces/default/pods/{p['metadata']['name']}") for p in pods()]
    on = {p["spec"]["nodeName"]: p["metadata"]["name"] for p in running}
    assert sorted(on) == sorted(vxlan.names), on  # one on every node
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in running}
    for node, pod in on.items():
        assert ipaddress.ip_address(ips[pod]) in ipaddress.ip_network(vxlan.cidrs[node])

    for source in ips:  # pod → pod over both subnets, the server seeing the client pod's own address
        for target in ips:
            if source != target:
                wait_for(lambda s=source, t=target: fetch(docker_api, s, f"http://{ips[t]}:8080/") == t, 20,
                         f"{source} → {target}")
                seen = remote_addr(fetch(docker_api, source, f"http://{ips[target]}:8080/cgi-bin/ip"))
                assert seen == ips[source], (source, target, seen)

    cluster_ip = client.get("/api/v1/namespaces/default/services/web")["spec"]["clusterIP"]
    for node, source in on.items():  # the Service by address and by name from every node
        for url in (f"http://{cluster_ip}/", "http://web.default.svc.cluster.local/"):
            wait_for(lambda s=source, u=url: fetch(docker_api, s, u) in ips, 20, f"{url} from {source} on {node}")
        seen = set()  # every pod answers, across subnets, each seeing the client's own address
        for _ in range(30):
            seen.add(fetch(docker_api, source, f"http://{cluster_ip}/"))
            if seen >= set(ips):
                break
        assert seen >= set(ips), (source, seen)


def test_egress_beyond_the_cluster_cidr_leaves_with_the_node_address(vxlan: Cluster, docker_api) -> None:
    pods = {p["spec"]["nodeName"]: p["metadata"]["name"] for p in vxlan.client.get(
        "/api/v1/namespaces/default/pods", params={"labelSelector": "app=sktest-web"})["items"]}
    with outside_server(vxlan.run_id) as outside:
        for node, pod in pods.items():
            seen = remote_addr(fetch(docker_api, pod, f"http://{outside.address}:8080/cgi-bin/ip"))
            assert seen == (outside.gateway if node == vxlan.names[0] else vxlan.addresses[node]), (node, seen)


def test_an_agent_restart_leaves_the_entries_exactly_as_they_were(vxlan: Cluster) -> None:
    behind_router = vxlan.names[1]
    before = {node: entries(vxlan, node) for node in vxlan.names}
    for node, found in before.items():  # one route, FDB and neighbour entry per other node
        assert [len(found[kind]) for kind in ("routes", "fdb", "neigh")] == [2, 2, 2], (node, found)
    log_before = len(agent_log(vxlan, behind_router))
    restarted = datetime.now(UTC)
    assert cli("node", "stop", behind_router, "--data-dir", vxlan.data_dir).returncode == 0
    vxlan.up.wait_for(f"[node {behind_router}] kubelet stopped")
    assert cli("node", "start", behind_router, "--data-dir", vxlan.data_dir).returncode == 0
    wait_for(lambda: ready_since(vxlan.client, behind_router, restarted), 60, f"{behind_router} Ready again")
    wait_for(lambda: "pod network vxlan: device" in agent_log(vxlan, behind_router)[log_before:], 20,
             "the restarted agent's backend")
    time.sleep(3)  # its first reconcile follows the backend's start at once
    assert {node: entries(vxlan, node) for node in vxlan.names} == before
    assert "pod network vxlan: +" not in agent_log(vxlan, behind_router)[log_before:]


def test_a_deleted_node_leaves_no_entries_on_the_others(vxlan: Cluster) -> None:
    one, two, three = vxlan.names
    gone_cidr = vxlan.cidrs[three]
    for node in (one, two):
        assert any(r.startswith(gone_cidr) for r in entries(vxlan, node)["routes"])
    assert cli("node", "stop", three, "--data-dir", vxlan.data_dir).returncode == 0
    vxlan.client.delete(f"/api/v1/nodes/{three}")

    vtep = gone_cidr.split("/")[0]  # its VTEP address: its pod CIDR's network address

    def gone() -> bool:
        return not [line for node in (one, two) for kind, lines in entries(vxlan, node).items() for line in lines
                    if line.startswith(f"{gone_cidr} ") or line.startswith(f"{vtep} ")
                    or f"dst {vxlan.addresses[three]} " in f"{line} "]

    wait_for(gone, 30, lambda: f"{three}'s entries removed: {[entries(vxlan, n) for n in (one, two)]}")
    for node in (one, two):  # the remaining pair keeps its entries
        assert [len(found) for found in entries(vxlan, node).values()] == [1, 1, 1]


def test_host_gw_refuses_the_node_on_the_other_subnet(root, docker_api, images, iptables,
                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    with ExitStack() as stack:
        cluster = start(tmp_path_factory, docker_api, "host-gw", stack)
        one, two, three = cluster.names
        assert "host-gw needs the nodes on one L2 subnet" in "\n".join(cluster.up.lines)
        for pod, node in (("hgw-1", one), ("hgw-2", two), ("hgw-3", three)):
            cluster.client.create("/api/v1/namespaces/default/pods", web_pod(pod, node))
        ips = {pod: wait_running(cluster.client, f"/api/v1/namespaces/default/pods/{pod}")["status"]["podIP"]
               for pod in ("hgw-1", "hgw-2", "hgw-3")}
        wait_for(lambda: fetch(docker_api, "hgw-1", f"http://{ips['hgw-3']}:8080/") == "hgw-3", 20,
                 "hgw-1 → hgw-3 on one subnet")
        wait_for(lambda: fetch(docker_api, "hgw-3", f"http://{ips['hgw-1']}:8080/") == "hgw-1", 20,
                 "hgw-3 → hgw-1 on one subnet")
        refusal = (f"host-gw: node {two}'s InternalIP {cluster.addresses[two]} is not on a directly connected "
                   f"subnet")
        wait_for(lambda: refusal in agent_log(cluster, three), 20, f"{three} refusing {two}")
        assert f"host-gw: node {three}'s InternalIP" in agent_log(cluster, two)
        for node in (one, three):
            assert not [r for r in entries(cluster, node)["routes"] if r.startswith(cluster.cidrs[two])]
        assert fetch(docker_api, "hgw-1", f"http://{ips['hgw-2']}:8080/") == ""
        stop_and_down(cluster)
