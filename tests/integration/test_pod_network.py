"""Pod networking against the real kernel, dockerd and iptables: a bridge and chains of this test's own
(`sktest<run>`, KUBE-SKTEST-<run>-*), a real pause container (wired through /proc/PID/ns/net) and a plain
network namespace as the two sandboxes. Traffic goes only between the namespaces, containers and links
this test made, and to the host's own addresses on them; everything is removed at teardown.

The sandbox tests run with both `--network-plugin` modes (the `network` fixture): the built-in
bridge/veth/IPAM, and Debian's CNI plugins (/usr/lib/cni) through the default configuration list on the
same bridge, with its host-local store, cache and configuration directory under the test's tmp_path. The
portmap plugin's shared CNI-HOSTPORT-* chains are removed at teardown."""

from __future__ import annotations

import json
import random
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import docker.errors
import pytest

from control.util import iptables as iptables_backend
from nodeagent.network import rules
from nodeagent.network.bridge import delete_bridge, ensure_bridge
from nodeagent.network.cni.default import ensure_default
from nodeagent.network.cni.podnet import CNIPodNetwork
from nodeagent.network.cni.portmap import remove_shared_chains
from nodeagent.network.ipam import LocalIPAM
from nodeagent.network.manager import NetworkConfig, PodNetworkManager
from nodeagent.network.podnet import NetlinkPodNetwork, PodInterface
from nodeagent.network.sandbox import BuiltinNetwork, CNINetwork, SandboxNetwork
from tests.support.hostnet import free_pod_cidr

PAUSE, BUSYBOX = "slimkube/pause:1", "slimkube/busybox:1"
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # ignore http_proxy: pod IPs are local


def run(*argv: str, timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def in_netns(path: str, *argv: str, timeout: float = 10) -> subprocess.CompletedProcess:
    """Run a host binary (busybox-static) inside the network namespace at `path` (netns file or /proc/PID)."""
    return run("nsenter", f"--net={path}", *argv, timeout=timeout)


def ping(path: str, address: str) -> subprocess.CompletedProcess:
    return in_netns(path, "busybox", "ping", "-c", "1", "-W", "2", address)


def saved_tables(ipt: iptables_backend.Iptables) -> str:
    """filter + nat as iptables-save prints them, without counters and comment lines."""
    text = ipt.save("filter") + ipt.save("nat")
    return "\n".join(re.sub(r"\[\d+:\d+\]", "[0:0]", line) for line in text.splitlines() if not line.startswith("#"))


def links() -> set[str]:
    out = run("ip", "-j", "link").stdout
    return {link["ifname"] for link in json.loads(out)}


@pytest.fixture
def detected(iptables: str) -> iptables_backend.Iptables:
    return iptables_backend.detect()


@pytest.fixture
def config(root, run_id: str) -> NetworkConfig:
    return NetworkConfig(pod_cidr=free_pod_cidr(), cluster_cidr="10.244.0.0/16", bridge=f"sktest{run_id}",
                         veth_prefix="sktest", forward_chain=f"KUBE-SKTEST-{run_id}-FWD",
                         masq_chain=f"KUBE-SKTEST-{run_id}-MASQ")


@pytest.fixture
def manager(config, detected, tmp_path, cleanup) -> PodNetworkManager:
    """Bridge and chains of this test, set up; removed (chains first) at teardown even on failure."""
    manager = PodNetworkManager(config, ipam=LocalIPAM(tmp_path / "ipam.json", config.pod_cidr),
                                network=NetlinkPodNetwork(), iptables=detected)
    cleanup(lambda: delete_bridge(config.bridge))
    cleanup(manager.remove_host_rules)
    manager.start([])
    return manager


@pytest.fixture(params=["builtin", "cni"])
def network(request, config, detected, tmp_path, cleanup) -> SandboxNetwork:
    return sandbox_network(request.param, config, detected, tmp_path, cleanup)


@pytest.fixture
def cni_network(config, detected, tmp_path, cleanup) -> CNINetwork:
    network = sandbox_network("cni", config, detected, tmp_path, cleanup)
    assert isinstance(network, CNINetwork)
    return network


def sandbox_network(mode: str, config: NetworkConfig, detected, tmp_path: Path, cleanup) -> SandboxNetwork:
    """The sandbox network of one `--network-plugin` mode on this test's bridge and chains; its host
    rules, bridge (and for CNI portmap's shared chains) removed at teardown even on failure."""
    cleanup(lambda: delete_bridge(config.bridge))
    cleanup(lambda: rules.remove(detected, config.rules))
    if mode == "builtin":
        ipam = LocalIPAM(tmp_path / "ipam.json", config.pod_cidr)
        sandboxes: SandboxNetwork = BuiltinNetwork(
            PodNetworkManager(config, ipam=ipam, network=NetlinkPodNetwork(), iptables=detected), ipam)
    else:
        cleanup(lambda: remove_shared_chains(detected))
        sandboxes = CNINetwork(cni_pods(config, tmp_path), iptables=detected, host_rules=config.rules)
    sandboxes.start([])
    return sandboxes


def cni_pods(config: NetworkConfig, tmp_path: Path) -> CNIPodNetwork:
    """CNI mode's half as a (re)started kubelet makes it: the default list, the plugins Debian installs.
    A sandbox's namespace is the one its ADD was given (the test's namespaces outlive their attachments)."""
    ensure_default(str(tmp_path / "net.d"), pod_cidr=config.pod_cidr, bridge=config.bridge, mtu=config.mtu,
                   ipam_dir=str(tmp_path / "networks"))
    pods = CNIPodNetwork(conf_dir=str(tmp_path / "net.d"), bin_dirs=["/usr/lib/cni"], cache_dir=str(tmp_path / "cni"),
                         netns_of=lambda sandbox_id: next((a.netns for a in pods.cache.attachments(sandbox_id)), ""))
    return pods


def pod(sandbox_id: str, *host_ports: int) -> dict:
    return {"metadata": {"name": f"pod-{sandbox_id}", "namespace": "default", "uid": f"uid-{sandbox_id}"},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080, "hostPort": port}
                                                            for port in host_ports]}]}}


@pytest.fixture
def pause_sandbox(docker_api, images, container_labels, cleanup):
    """Start a pause container with network_mode none, as the kubelet does; returns (id, pid)."""

    def make() -> tuple[str, int]:
        created = docker_api.create_container(PAUSE, labels=container_labels,
                                              host_config=docker_api.create_host_config(network_mode="none"))
        cleanup(removal(docker_api, created["Id"]))
        docker_api.start(created["Id"])
        return created["Id"], docker_api.inspect_container(created["Id"])["State"]["Pid"]

    return make


def removal(api, container_id: str):
    """Undo action: force-remove a container, tolerating one that is gone or being removed already (the
    session's label sweep of a concurrent run may get there first)."""

    def undo() -> None:
        try:
            api.remove_container(container_id, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:
                raise

    return undo


def wired(network: SandboxNetwork, sandbox_id: str, netns: int | str, cleanup, *host_ports: int) -> PodInterface:
    cleanup(lambda: network.detach(sandbox_id))
    return network.attach(sandbox_id, pod(sandbox_id, *host_ports), netns)


def serve(docker_api, container_labels, pause_id: str, text: str, cleanup) -> None:
    """An app container joined to the sandbox's namespace serving `text` on port 8080, as a pod's do."""
    server = docker_api.create_container(
        BUSYBOX, labels=container_labels, command=["sh", "-c", f"mkdir -p /www && echo {text} > "
                                                   "/www/index.html && exec httpd -f -p 8080 -h /www"],
        host_config=docker_api.create_host_config(network_mode=f"container:{pause_id}"))
    cleanup(removal(docker_api, server["Id"]))
    docker_api.start(server["Id"])


def fetch(url: str, *, timeout: float = 10) -> str:
    deadline, body = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            with NO_PROXY.open(url, timeout=2) as response:  # host → pod, never via a proxy
                return response.read().decode()
        except OSError:
            time.sleep(0.1)
    return body


def test_two_sandboxes_reach_each_other_their_gateway_and_the_host_reaches_them(
        network, config, pause_sandbox, netns, docker_api, container_labels, run_id, cleanup):
    pause_id, pid = pause_sandbox()
    ns_path = f"/run/netns/{netns('pod')}"
    a = wired(network, pause_id, pid, cleanup)
    b = wired(network, "netns-sandbox", ns_path, cleanup)
    a_ns = f"/proc/{pid}/ns/net"
    assert a.ip != b.ip and a.gateway == b.gateway == config.gateway

    for pod in (a, b):  # the host end: on our bridge, hairpin on, up (built-in: named from the sandbox id)
        sysfs = Path("/sys/class/net") / pod.host_veth
        if isinstance(network, BuiltinNetwork):
            assert pod.host_veth.startswith("sktest") and len(pod.host_veth) == 15
        assert pod.bridge == config.bridge and (sysfs / "master").resolve().name == config.bridge
        assert (sysfs / "brport" / "hairpin_mode").read_text().strip() == "1"
        # administratively up (IFF_UP); operstate follows the carrier asynchronously (the kernel's link
        # watch can lag up to a second), so it is not what setup promises
        assert int((sysfs / "flags").read_text(), 16) & 0x1
    inside = json.loads(in_netns(a_ns, "ip", "-j", "-4", "addr", "show", "eth0").stdout)
    assert [(i["local"], i["prefixlen"]) for i in inside[0]["addr_info"]] == [(a.ip, 24)]
    assert f"default via {config.gateway} dev eth0" in in_netns(a_ns, "ip", "route").stdout
    assert in_netns(a_ns, "busybox", "ping", "-c", "1", "-W", "2", "127.0.0.1").returncode == 0  # lo is up

    for result in (ping(ns_path, a.ip), ping(a_ns, b.ip), ping(a_ns, config.gateway)):
        assert result.returncode == 0, result.stdout + result.stderr

    serve(docker_api, container_labels, pause_id, f"hello-{run_id}", cleanup)
    assert fetch(f"http://{a.ip}:8080/").strip() == f"hello-{run_id}"
    fetched = in_netns(ns_path, "timeout", "3", "busybox", "wget", "-qO-", f"http://{a.ip}:8080/")  # pod → pod TCP
    assert fetched.stdout.strip() == f"hello-{run_id}", fetched.stderr


def test_traffic_leaving_the_cluster_cidr_is_masqueraded(network, config, detected, netns, link_name, cleanup):
    """An "outside" namespace with no route back to the pod CIDR answers a pod only when the host
    masquerades the pod's packets to its own address on the link."""
    pod_ns = f"/run/netns/{netns('pod')}"
    pod = wired(network, "masq-sandbox", pod_ns, cleanup)
    outside, host_end = netns("out"), link_name("o")
    third = random.randrange(1, 255)
    host_addr, outside_addr = f"169.254.{third}.1", f"169.254.{third}.2"
    for argv in (["ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", outside],
                 ["ip", "addr", "add", f"{host_addr}/30", "dev", host_end],
                 ["ip", "link", "set", host_end, "up"],
                 ["ip", "-n", outside, "addr", "add", f"{outside_addr}/30", "dev", "eth0"],
                 ["ip", "-n", outside, "link", "set", "eth0", "up"]):
        subprocess.run(argv, check=True, capture_output=True)

    def masqueraded_packets() -> int:
        listed = run(f"iptables-{detected.mode.value}", "-w", "-t", "nat", "-L", config.masq_chain, "-v", "-n", "-x")
        (line,) = [row for row in listed.stdout.splitlines() if "MASQUERADE" in row]
        return int(line.split()[0])

    before = masqueraded_packets()
    result = ping(pod_ns, outside_addr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert masqueraded_packets() > before
    assert run("ip", "-n", outside, "route", "get", pod.ip).returncode != 0  # no way back but the masquerade

    neighbour = wired(network, "masq-neighbour", f"/run/netns/{netns('pod2')}", cleanup)
    counted = masqueraded_packets()
    assert ping(pod_ns, neighbour.ip).returncode == 0
    assert masqueraded_packets() == counted  # pod to pod keeps the pod's address


def test_teardown_leaves_no_links_and_addresses_survive_a_restart(manager, config, netns, tmp_path, cleanup):
    one = netns("one")
    first = manager.attach("sandbox-1", "uid-sandbox-1", f"/run/netns/{one}")
    cleanup(lambda: manager.detach("sandbox-1"))
    second = manager.attach("sandbox-2", "uid-sandbox-2", f"/run/netns/{netns('two')}")
    cleanup(lambda: manager.detach("sandbox-2"))

    restarted = LocalIPAM(tmp_path / "ipam.json", config.pod_cidr)  # a new kubelet process on the same file
    assert restarted.allocate("sandbox-1", "uid-sandbox-1") == first.ip
    assert restarted.allocate("sandbox-3", "uid-3") not in (first.ip, second.ip)
    assert set(restarted.reconcile({"sandbox-1", "sandbox-2"})) == {"sandbox-3"}

    assert manager.detach("sandbox-1") == first.ip
    assert manager.detach("sandbox-1") is None  # idempotent
    assert first.host_veth not in links() and second.host_veth in links()
    assert "eth0" not in run("ip", "-n", one, "link").stdout  # the peer went with the host end
    manager.detach("sandbox-2")
    assert not {first.host_veth, second.host_veth} & links()
    assert LocalIPAM(tmp_path / "ipam.json", config.pod_cidr).allocations() == {}


def nat_chains(detected: iptables_backend.Iptables, prefix: str) -> list[str]:
    return [line[1:].split()[0] for line in detected.save("nat").splitlines() if line.startswith(f":{prefix}")]


def test_cni_hostport_and_nothing_left_after_deletion_across_a_restart(
        cni_network, config, detected, pause_sandbox, netns, docker_api, container_labels, run_id, tmp_path, cleanup):
    """CNI mode: a hostPort reaches the pod through portmap; a restarted kubelet (a new CNI network over the
    same cache) knows the running sandbox's address, releases the one whose sandbox went while it was
    down, and a DEL of the rest leaves no veth, address in host-local's store, cache record or portmap chain."""
    network = cni_network
    host_port = random.randrange(30000, 32000)
    pause_id, pid = pause_sandbox()
    served = network.attach(pause_id, pod(pause_id, host_port), pid)
    cleanup(lambda: network.detach(pause_id))
    gone = wired(network, "gone-sandbox", f"/run/netns/{netns('gone')}", cleanup)
    serve(docker_api, container_labels, pause_id, f"hostport-{run_id}", cleanup)
    assert fetch(f"http://{config.gateway}:{host_port}/").strip() == f"hostport-{run_id}"  # node address → DNAT
    assert nat_chains(detected, "CNI-DN-")
    store = tmp_path / "networks" / "slimkube"
    assert {served.ip, gone.ip} <= {p.name for p in store.iterdir()}

    restarted = CNINetwork(cni_pods(config, tmp_path), iptables=detected, host_rules=config.rules)
    assert restarted.start([pause_id]) == {pause_id: served.ip}
    assert gone.ip not in {p.name for p in store.iterdir()} and gone.host_veth not in links()
    assert fetch(f"http://{config.gateway}:{host_port}/").strip() == f"hostport-{run_id}"
    assert restarted.detach(pause_id) == served.ip
    assert served.ip not in {p.name for p in store.iterdir()}
    assert served.host_veth not in links() and "eth0" not in in_netns(f"/proc/{pid}/ns/net", "ip", "link").stdout
    assert list((tmp_path / "cni" / "results").iterdir()) == []
    assert nat_chains(detected, "CNI-DN-") == []
    assert remove_shared_chains(detected) and nat_chains(detected, "CNI-") == []


def test_rules_applied_then_removed_leave_iptables_as_before(config, detected, cleanup):
    before = saved_tables(detected)
    cleanup(lambda: rules.remove(detected, config.rules))
    rules.apply(detected, config.rules)
    rules.apply(detected, config.rules)  # a resync must not duplicate anything
    during = saved_tables(detected)
    for jump in rules.jump_rules(config.rules):
        assert detected.has_rule(jump.table, jump.chain, jump.rule)
    assert during.count(f"-j {config.forward_chain}") == 1 and during.count(f"-j {config.masq_chain}") == 1
    assert re.search(rf"^-A FORWARD .*-j {config.forward_chain}$", during, re.MULTILINE)
    assert during.splitlines().index(f":{config.forward_chain} - [0:0]") > 0
    first_forward = next(line for line in during.splitlines() if line.startswith("-A FORWARD"))
    assert first_forward.endswith(f"-j {config.forward_chain}")  # ahead of Docker's DOCKER-USER/DROP path
    rules.remove(detected, config.rules)
    rules.remove(detected, config.rules)  # `slimkube down` twice is fine
    assert saved_tables(detected) == before


def test_ensure_bridge_is_idempotent_and_resets_what_it_owns(config, cleanup):
    cleanup(lambda: delete_bridge(config.bridge))
    gateway = f"{config.gateway}/{config.prefix_len}"
    first = ensure_bridge(config.bridge, gateway)
    subprocess.run(["ip", "link", "set", config.bridge, "promisc", "on"], check=True)
    assert ensure_bridge(config.bridge, gateway) == first
    shown = json.loads(run("ip", "-j", "-4", "addr", "show", config.bridge).stdout)[0]
    assert [(i["local"], i["prefixlen"]) for i in shown["addr_info"]] == [(config.gateway, config.prefix_len)]
    assert "PROMISC" not in shown["flags"] and "UP" in shown["flags"]
    assert Path(f"/proc/sys/net/ipv4/conf/{config.bridge}/route_localnet").read_text().strip() == "1"
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "1"
    assert delete_bridge(config.bridge) and not delete_bridge(config.bridge)
    assert config.bridge not in links()
