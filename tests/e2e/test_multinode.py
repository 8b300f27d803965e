"""`slimkube up --nodes 3` on one host as a user runs it: node 1 in the host's
namespace, nodes 2 and 3 each in a network namespace with their own `slimkube agent` and `slimkube proxy`
processes, joined with `--server URL --token TOKEN` (the CA checked against the token).
One `up` per pod network backend (vxlan, host-gw; and vxlan with `--network-plugin cni`, Debian's plugins
making the pods' interfaces) serves the whole test, in steps: three Ready nodes with
distinct pod CIDRs from the node IPAM controller (no node is told one) and flannel's annotations; pods
pinned to each node (spec.nodeName, so each node is reached for sure) reach each other across nodes through
the agents' own backend (`up` routes no pods), and a server pod sees the client pod's own address; a server
in a namespace outside the cluster CIDR, made by the test and routing back only via this host, sees the
client's node address (egress masquerade); a ClusterIP Service whose only pod is on node 3 answers from
a pod on every node, and its NodePort on every node's address; the `kubernetes` Service answers from a pod
on every node; `node stop` of node 2 → its Lease expires and, `up` running with a short
`--node-monitor-grace-period`, the node lifecycle controller sets it Ready=Unknown with the unreachable
NoExecute taint, while its pod keeps running and is not evicted (the API server's default toleration is
300 s); `node start` → Ready again without the taints, its pod adopted (same container, restartCount
unchanged); each pod's hostPort answers on its node's address; Ctrl-C, then `down` leaves no namespace,
link, chain (portmap's CNI-* included), container or CNI attachment.
Safety: every address traffic goes to was made by `up` or this test (pod IPs, node IPs on the node
network, the outside namespace, the service CIDR); before any packet to a service IP the test's service
CIDR is routed to an empty bridge in the host's namespace and in each node's (tests/support/safety_net.py).
The node network, the cluster CIDR (a /22) and the outside namespace's network are chosen clear of this
host's routes; node 1's VXLAN device has the test's own name and sits on the test's node bridge.
"""

from __future__ import annotations

import ipaddress
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from control.client.rest import RESTClient
from control.util.iptables import detect
from nodeagent.network import rules
from nodeagent.network.cni.portmap import remove_shared_chains
from proxy.app import run_cleanup
from slimkube import noderules
from slimkube.nodes import BRIDGE, HOST_VETH_PREFIX
from tests.e2e.test_up_down import ROOT, UpProcess, assert_adopted, node_containers, wait_running, write_up_config
from tests.support.apiserver import free_port
from tests.support.hostnet import free_block
from tests.support.polling import wait_for
from tests.support.safety_net import free_service_cidr, service_cidr_net
from tests.support.substrate import delete_link

NODES = 3
LEASE_SECONDS = 6
GRACE_SECONDS = 10  # up --node-monitor-grace-period (upstream's 40 s would only make the test slower)
pytestmark = pytest.mark.timeout(300)  # + the grace period and the taints going, ~30 s


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slimkube.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def app_container(docker_api, pod: str) -> str:
    (found,) = docker_api.containers(filters={"label": [f"io.kubernetes.pod.name={pod}",
                                                        "io.kubernetes.container.name=app"]})
    return found["Id"]


def run_in(docker_api, pod: str, *command: str) -> tuple[int, str]:
    exec_id = docker_api.exec_create(app_container(docker_api, pod), list(command))["Id"]
    output = docker_api.exec_start(exec_id).decode(errors="replace")
    return docker_api.exec_inspect(exec_id)["ExitCode"], output


def fetch(docker_api, pod: str, url: str) -> str:
    """GET `url` from inside `pod` (busybox wget; `timeout` because its -T is broken), "" on failure."""
    code, output = run_in(docker_api, pod, "timeout", "3", "wget", "-qO-", url)
    return output.strip() if code == 0 else ""


def host_fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.read().decode().strip()
    except OSError:
        return ""


# busybox httpd serving its host name at / and, at /cgi-bin/ip, the address the request came from
WEB_SCRIPT = ("mkdir -p /www/cgi-bin && hostname > /www/index.html && "
              "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho $REMOTE_ADDR\\n' > /www/cgi-bin/ip && "
              "chmod +x /www/cgi-bin/ip && exec httpd -f -p 8080 -h /www")


def remote_addr(text: str) -> str:
    """The client address busybox httpd's CGI reports (an IPv4-mapped IPv6 address in brackets) as IPv4."""
    return text.strip().strip("[]").removeprefix("::ffff:")


def web_pod(name: str, node: str, host_port: int | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "sktest-web", "pod": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                "command": ["sh", "-c", WEB_SCRIPT],
                "ports": [{"containerPort": 8080, **({"hostPort": host_port} if host_port else {})}]}]}}


@dataclass(frozen=True)
class Outside:
    address: str  # the server's
    gateway: str  # this host's address on the server's link: what node 1's (the host's) pods are seen as


@contextmanager
def outside_server(run_id: str) -> Iterator[Outside]:
    """A namespace `sktest-<run>-out` behind a veth from this host (a /24 clear of its routes, outside every
    cluster CIDR), routing back only via this host, serving WEB_SCRIPT's /cgi-bin/ip with busybox httpd:
    without masquerade a pod's packets would get no answer. Removed on exit."""
    net, name, link = free_block("10.249", range(0, 250), 1), f"sktest-{run_id}-out", f"sktest{run_id[:6]}o"
    gateway, address = f"10.249.{net}.1", f"10.249.{net}.2"
    www = Path(tempfile.mkdtemp(prefix="sktest-www-"))
    (www / "cgi-bin").mkdir()
    script = www / "cgi-bin" / "ip"
    script.write_text("#!/bin/sh\necho Content-Type: text/plain\necho\necho $REMOTE_ADDR\n")
    script.chmod(0o755)
    server: subprocess.Popen | None = None
    try:
        for argv in (["netns", "add", name], ["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns",
                                               name],
                     ["addr", "add", f"{gateway}/24", "dev", link], ["link", "set", link, "up"],
                     ["-n", name, "addr", "add", f"{address}/24", "dev", "eth0"],
                     ["-n", name, "link", "set", "eth0", "up"], ["-n", name, "link", "set", "lo", "up"],
                     ["-n", name, "route", "add", "default", "via", gateway]):
            subprocess.run(["ip", *argv], check=True, capture_output=True)
        server = subprocess.Popen(["ip", "netns", "exec", name, "busybox", "httpd", "-f", "-p", "8080", "-h", str(www)])
        wait_for(lambda: remote_addr(host_fetch(f"http://{address}:8080/cgi-bin/ip")) == gateway, 10,
                 "the outside server")
        yield Outside(address=address, gateway=gateway)
    finally:
        if server is not None:
            server.kill()
            server.wait(10)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        delete_link(link)
        shutil.rmtree(www, ignore_errors=True)


def lease_expired(client: RESTClient, node: str) -> bool:
    spec = client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")["spec"]
    renewed = datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00"))
    return (datetime.now(UTC) - renewed).total_seconds() > spec["leaseDurationSeconds"]


def ready_status(client: RESTClient, node: str) -> tuple[str, str | None, list[tuple[str, str]]]:
    """The node's Ready status and reason, and its taints as (key, effect)."""
    found = client.get(f"/api/v1/nodes/{node}")
    ready = next(c for c in found["status"]["conditions"] if c["type"] == "Ready")
    taints = sorted((t["key"], t["effect"]) for t in found.get("spec", {}).get("taints") or ())
    return ready["status"], ready.get("reason"), taints


def ready_since(client: RESTClient, node: str, since: datetime) -> bool:
    conditions = client.get(f"/api/v1/nodes/{node}").get("status", {}).get("conditions") or []
    for condition in conditions:
        if condition["type"] == "Ready" and condition["status"] == "True":
            beat = datetime.fromisoformat(condition["lastHeartbeatTime"].replace("Z", "+00:00"))
            return beat >= since.replace(microsecond=0)
    return False


def prepare_cluster(data_dir: Path, run_id: str, docker_api,
                    register: Callable[[Callable[[], object]], object], *, pod_network: str = "vxlan",
                    network_plugin: str = "builtin") -> dict:
    """A data dir for `up --nodes 3`: node 1's kubelet.yaml names the test's node, bridge, chains, VXLAN
    device, backend and a /22 cluster CIDR clear of this host's routes, out of which the node IPAM controller
    gives every node its /24; DIR/nodes/kubelet.yaml gives nodes 2..3 a short Lease.
    Everything `up` may make is removed by the action given to `register`, even when the test fails."""
    (data_dir / "nodes").mkdir(parents=True)
    first = free_block("10.244", range(100, 252, 4), 4)  # a /22 clear of this host's routes: the cluster CIDR
    nodes_net = free_block("10.250", range(0, 250), 1)
    settings, pod_rules = write_up_config(data_dir, run_id, pod_cidr=None, cluster_cidr=f"10.244.{first}.0/22",
                                          pod_network=pod_network, network_plugin=network_plugin)
    (data_dir / "nodes" / "kubelet.yaml").write_text(yaml.safe_dump({
        "nodeStatusUpdateFrequency": "2s", "nodeLeaseDurationSeconds": LEASE_SECONDS}))
    name = settings["nodeName"]
    names = [name] + [f"{name}-{i}" for i in range(2, NODES + 1)]

    def remove_everything() -> None:  # what `down` should have done, for a test that failed before it
        for node in names:
            for cid in node_containers(docker_api, node):
                docker_api.remove_container(cid, force=True, v=True)
        for netns in names[1:] + [f"{name}-router"]:  # the router of `--node-subnets`, if made
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        for link in [f"{HOST_VETH_PREFIX}{i}" for i in [*range(2, NODES + 1), "r"]] + [
                BRIDGE, settings["podBridge"], settings["vxlanDevice"]]:
            delete_link(link)
        rules.remove(detect(), pod_rules)
        remove_shared_chains(detect())  # the portmap plugin's, in CNI mode
        noderules.remove(detect())
        run_cleanup(detect())

    register(remove_everything)
    return {"data_dir": str(data_dir), "names": names, "nodes_cidr": f"10.250.{nodes_net}.0/24",
            "service_cidr": free_service_cidr(), "run_id": run_id, "cluster_cidr": settings["clusterCIDR"],
            "vxlan_device": settings["vxlanDevice"]}


def start_up(prepared: dict, stack: ExitStack, register: Callable[[Callable[[], object]], object],
             *flags: str) -> tuple[UpProcess, str]:
    """`up --nodes 3` on a prepare_cluster data dir with its node network, service CIDR and `flags`, until
    `[up] ready`; then the safety net in this host's namespace and every node's, left when `stack` closes.
    `up`'s kill goes to `register`. Returns the process and its kubeconfig."""
    up = UpProcess(prepared["data_dir"], free_port(), "--nodes", str(NODES), "--nodes-cidr", prepared["nodes_cidr"],
                   "--service-cidr", prepared["service_cidr"], *flags, bind_address="0.0.0.0")
    register(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    bridge = f"sktestsvc{prepared['run_id'][:6]}"
    stack.enter_context(service_cidr_net(prepared["service_cidr"], bridge))
    for node in prepared["names"][1:]:
        stack.enter_context(service_cidr_net(prepared["service_cidr"], bridge, netns=node))
    return up, kubeconfig


@pytest.fixture
def cluster(request, root, docker_api, images, iptables, run_id: str, tmp_path: Path, cleanup: Callable) -> dict:
    """prepare_cluster for one test, removed at its teardown; the pod network backend is vxlan and the
    network plugin the built-in one unless the test parametrizes this fixture (indirect) with
    "BACKEND" or "BACKEND+cni"."""
    pod_network, _, network_plugin = getattr(request, "param", "vxlan").partition("+")
    return {**prepare_cluster(tmp_path / "up", run_id, docker_api, cleanup, pod_network=pod_network,
                              network_plugin=network_plugin or "builtin"),
            "pod_network": pod_network}


@pytest.mark.parametrize("cluster", ["vxlan", "host-gw", "vxlan+cni"], indirect=True)
def test_up_three_nodes_traffic_across_nodes_node_stop_start_and_down(cluster: dict, docker_api,
                                                                     cleanup: Callable) -> None:
    data_dir, names, run_id = cluster["data_dir"], cluster["names"], cluster["run_id"]
    nodes_net = ipaddress.ip_network(cluster["nodes_cidr"])
    host_ip = str(next(nodes_net.hosts()))
    up = UpProcess(data_dir, free_port(), "--nodes", str(NODES), "--nodes-cidr", cluster["nodes_cidr"],
                   "--service-cidr", cluster["service_cidr"], "--node-monitor-grace-period", f"{GRACE_SECONDS}s",
                   bind_address="0.0.0.0")
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    for node in names[1:]:  # joined as a worker does: the CA fetched, checked against the token, kept
        assert up.wait_for(f"[node {node}] [agent] API server https://{host_ip}:")
        assert Path(data_dir, "nodes", node, "agent", "server-ca.crt").exists()

    with RESTClient.from_kubeconfig(kubeconfig) as client, ExitStack() as nets:
        nodes = {n["metadata"]["name"]: n for n in client.get("/api/v1/nodes")["items"]}
        assert set(nodes) == set(names)
        addresses = {}
        for name, node in nodes.items():
            conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
            assert conditions["Ready"] == "True", (name, conditions)
            addresses[name] = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert addresses == {name: str(list(nodes_net.hosts())[i]) for i, name in enumerate(names)}

        # the safety net, before any packet to a service IP: host namespace and every node namespace
        nets.enter_context(service_cidr_net(cluster["service_cidr"], f"sktestsvc{run_id[:6]}"))
        for node in names[1:]:
            nets.enter_context(service_cidr_net(cluster["service_cidr"], f"sktestsvc{run_id[:6]}", netns=node))

        pods = {f"web-{i + 1}": node for i, node in enumerate(names)}
        host_port = random.randrange(20000, 29000)  # below the NodePort range
        for pod, node in pods.items():
            client.create("/api/v1/namespaces/default/pods", web_pod(pod, node, host_port))
        running = {pod: wait_running(client, f"/api/v1/namespaces/default/pods/{pod}") for pod in pods}
        ips = {pod: p["status"]["podIP"] for pod, p in running.items()}
        for pod, node in pods.items():  # each pod has an address from its own node's pod CIDR
            assert ipaddress.ip_address(ips[pod]) in ipaddress.ip_network(nodes[node]["spec"]["podCIDR"])

        cidrs = {name: node["spec"]["podCIDR"] for name, node in nodes.items()}  # node IPAM's, one each
        assert len(set(cidrs.values())) == NODES, cidrs
        assert all(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network(cluster["cluster_cidr"]))
                   for c in cidrs.values()), cidrs
        for name, node in nodes.items():  # each agent published its backend as flannel does
            annotations = node["metadata"].get("annotations") or {}
            assert annotations.get("flannel.alpha.coreos.com/backend-type") == cluster["pod_network"], annotations
            assert annotations.get("flannel.alpha.coreos.com/public-ip") == addresses[name], annotations

        for source in pods:  # pod → pod, across every pair of nodes, through the nodes' own backend
            for target in pods:
                if source != target:
                    wait_for(lambda s=source, t=target: fetch(docker_api, s, f"http://{ips[t]}:8080/") == t, 20,
                             f"{source} → {target}")
                    seen = remote_addr(fetch(docker_api, source, f"http://{ips[target]}:8080/cgi-bin/ip"))
                    assert seen == ips[source], (source, target, seen)  # no NAT between pods

        outside = nets.enter_context(outside_server(run_id))  # a host beyond the cluster CIDR: sees node addresses
        for source, node in pods.items():
            seen = remote_addr(fetch(docker_api, source, f"http://{outside.address}:8080/cgi-bin/ip"))
            expected = outside.gateway if node == names[0] else addresses[node]
            assert seen == expected, (source, node, seen)

        client.create("/api/v1/namespaces/default/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "sktest-web3"},
            "spec": {"type": "NodePort", "selector": {"pod": "web-3"},
                     "ports": [{"port": 80, "targetPort": 8080}]}})
        service = client.get("/api/v1/namespaces/default/services/sktest-web3")
        cluster_ip, node_port = service["spec"]["clusterIP"], service["spec"]["ports"][0]["nodePort"]
        for source in pods:  # pod → ClusterIP → the pod on node 3, from every node
            wait_for(lambda s=source: fetch(docker_api, s, f"http://{cluster_ip}/") == "web-3", 20,
                     f"ClusterIP {cluster_ip} from {source}")
        for node, address in addresses.items():  # NodePort on every node's address
            wait_for(lambda a=address: host_fetch(f"http://{a}:{node_port}/") == "web-3", 20,
                     f"NodePort {node_port} on {node} ({address})")

        for pod, node in pods.items():  # each pod's hostPort on its node's address (CNI mode: portmap)
            wait_for(lambda a=addresses[node], p=pod: host_fetch(f"http://{a}:{host_port}/") == p, 20,
                     f"hostPort {host_port} on {node} ({addresses[node]})")

        api_ip = str(next(ipaddress.ip_network(cluster["service_cidr"]).hosts()))
        for source in pods:  # the `kubernetes` Service from a pod on every node (TLS handshake: nc connects)
            wait_for(lambda s=source: run_in(docker_api, s, "sh", "-c", f"echo | timeout 3 nc {api_ip} 443")[0] == 0,
                     20, f"the kubernetes Service {api_ip}:443 from {source}")

        # node stop: the kubelet goes, its pod stays, its Lease runs out, the node goes Ready=Unknown and is
        # tainted unreachable, its pod not evicted (300 s default toleration); node start: Ready, untainted,
        # pod adopted
        stopped_node = names[1]
        before = client.get("/api/v1/namespaces/default/pods/web-2")
        containers = node_containers(docker_api, stopped_node)
        done = cli("node", "stop", stopped_node, "--data-dir", data_dir)
        assert done.returncode == 0 and "kubelet stopped" in done.stderr, done.stderr
        assert up.wait_for(f"[node {stopped_node}] kubelet stopped by `slimkube node stop`")
        wait_for(lambda: lease_expired(client, stopped_node), LEASE_SECONDS + 10, f"{stopped_node}'s Lease to expire")
        unreachable = ("Unknown", "NodeStatusUnknown", [("node.kubernetes.io/unreachable", "NoExecute"),
                                                        ("node.kubernetes.io/unreachable", "NoSchedule")])
        wait_for(lambda: ready_status(client, stopped_node) == unreachable, GRACE_SECONDS + 20,
                 lambda: f"{stopped_node} Ready=Unknown and tainted unreachable: {ready_status(client, stopped_node)}")
        assert not client.get("/api/v1/namespaces/default/pods/web-2")["metadata"].get("deletionTimestamp")
        assert set(node_containers(docker_api, stopped_node)) == set(containers)
        assert fetch(docker_api, "web-1", f"http://{ips['web-2']}:8080/") == "web-2"

        restarted = datetime.now(UTC)
        done = cli("node", "start", stopped_node, "--data-dir", data_dir)
        assert done.returncode == 0 and "kubelet started" in done.stderr, done.stderr
        wait_for(lambda: ready_since(client, stopped_node, restarted), 30, f"{stopped_node} Ready again")
        wait_for(lambda: ready_status(client, stopped_node)[2] == [], 20,
                 lambda: f"{stopped_node}'s taints removed: {ready_status(client, stopped_node)}")
        assert not client.get("/api/v1/namespaces/default/pods/web-2")["metadata"].get("deletionTimestamp")
        assert not lease_expired(client, stopped_node)
        assert_adopted(client, before, docker_api, stopped_node, containers)

    assert up.interrupt() == 0, "\n".join(up.lines)
    started = time.monotonic()
    down = cli("down", "--data-dir", data_dir)
    assert down.returncode == 0, down.stderr
    assert time.monotonic() - started < 60
    for node in names:
        assert node_containers(docker_api, node) == {}
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [n for n in names if n in netns], netns
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert HOST_VETH_PREFIX not in links and f"sktest{run_id}" not in links, links
    assert cluster["vxlan_device"] not in links, links
    assert subprocess.run(["ip", "route", "show", "proto", "86"], capture_output=True, text=True).stdout == ""
    iptables = detect()
    assert not iptables.has_chain("filter", f"KUBE-SKTEST-{run_id}-FWD")
    assert not iptables.has_chain("nat", "KUBE-SERVICES")
    assert not iptables.has_chain("filter", "KUBE-NODES-FORWARD") and not iptables.has_chain("nat", "KUBE-NODES-EGRESS")
    assert not [line for line in iptables.save("nat").splitlines() if line.startswith((":CNI-", ":KUBE-HP"))]
    for node_dir in [Path(data_dir)] + [Path(data_dir, "nodes", node) for node in names[1:]]:
        assert not (node_dir / "kubelet" / "cni").exists()  # CNI mode: every attachment DELeted, store gone


def processes_of(data_dir: str) -> dict[int, str]:
    """pid → command line of every live process whose command line names `data_dir` (zombies left out)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().decode(errors="replace").replace("\0", " ")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if data_dir in argv and state != "Z":
            found[int(entry)] = argv
    return found


def test_kill_9_of_up_leaves_no_node_process(cluster: dict, cleanup: Callable) -> None:
    """A `kill -9` of `up --nodes 3` gives it no chance to stop its nodes' agents and proxies: each must
    stop on its own (the parent-death signal), whichever of `up`'s threads started it."""
    data_dir = cluster["data_dir"]
    with ExitStack() as nets:
        up, _ = start_up(cluster, nets, cleanup)  # ready: every agent Ready, every proxy synced once
        children = {pid: argv for pid, argv in processes_of(data_dir).items() if pid != up.proc.pid}
        assert len(children) == 2 * (NODES - 1), children  # an agent and a proxy per node
        up.kill()
        wait_for(lambda: not processes_of(data_dir), 20, lambda: f"no process of `up` left: {processes_of(data_dir)}")
