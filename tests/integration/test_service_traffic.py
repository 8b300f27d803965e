"""Services with real traffic on this host: a real API server (in a thread) with
its controller manager (the endpoints and EndpointSlice controllers, as `slimkube server` runs them), a
real kubelet on Docker with its own bridge and pod CIDR, and the proxy (proxy/app.py ProxyServer, as
`slimkube proxy` runs it) writing the host's iptables with the backend in use.

Before any packet goes to a service IP, the test's service CIDR (one no route on the host overlaps) is
routed to an empty `sktest…` bridge (tests/support/safety_net.py): a virtual IP without a
rule then only ARPs on an empty bridge and nothing leaves the machine.

Busybox httpd pods each serve their own name, so the answer says which backend took the request.
Checked: two backends behind a ClusterIP share 200 requests from the host and from a third pod (each
≥ 20 %); with ClientIP affinity every request reaches one backend; a NodePort answers on the node's
address and on 127.0.0.1 (route_localnet); a service without endpoints is refused at once (REJECT, not
a timeout); deleting a service removes its KUBE-SVC/KUBE-SEP chains; a proxy stopped and replaced by a
new one on the same host does not interrupt traffic; a pod reaches itself through its own service
(hairpin). One stack serves the whole module; at the end the proxy's cleanup removes every KUBE-* chain
it made (checked), the pods are deleted and the kubelet's bridge, chains and the safety net go, even on
failure.

The proxy's kernel settings (route_localnet on `all`, conntrack limits) are recorded, not written: the
host's global sysctls are not a test's to change. The proxy and the endpoints controller use upstream's
fixed chain and object names, so this module must not run beside another proxy on the same host; it
refuses to start where a KUBE-SERVICES chain already exists.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import docker.errors
import pytest

from control.client.errors import NotFound
from control.client.kubeconfig import load_kubeconfig
from control.client.rest import RESTClient
from control.util.iptables import Iptables, detect
from nodeagent.config import KubeletConfig
from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.kubelet import Kubelet
from nodeagent.network.bridge import delete_bridge
from nodeagent.node_status import default_ip
from proxy.app import ProxyServer, run_cleanup
from proxy.cleanup import is_proxy_chain
from proxy.config import ProxyConfig
from proxy.model import ServicePortName
from proxy.render import endpoint_chain_name, service_chain_name
from proxy.tables import BUILTIN_CHAINS, TABLES, parse_chains, parse_rules
from slimkube.controlplane import start_controller_manager
from tests.conftest import TEST_LABEL
from tests.support.apiserver import ThreadServer
from tests.support.hostnet import free_pod_cidr
from tests.support.polling import wait_for
from tests.support.safety_net import free_service_cidr, routed_to, service_cidr_net

NAMESPACE = "default"
WEB = {"app": "sktest-web"}
REQUESTS = 200
MIN_SHARE = 0.2


def http_get(host: str, port: int, *, timeout: float = 2.0) -> str:
    """One request on a fresh connection (so each one is load-balanced anew); the body, stripped."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        body = response.read().decode().strip()
        if response.status != 200:
            raise OSError(f"HTTP {response.status} from {host}:{port}")
        return body
    finally:
        conn.close()


def try_get(host: str, port: int) -> str | None:
    try:
        return http_get(host, port)
    except OSError:
        return None


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", script],
            **extra}


def httpd(pod: str) -> dict[str, Any]:
    """A container serving `pod` (its pod's name) on :8080, so an answer names its backend."""
    return container("httpd", f"mkdir -p /www && echo {pod} > /www/index.html && exec httpd -f -p 8080 -h /www",
                     ports=[{"containerPort": 8080, "name": "http"}])


def client_loop(url: str, count: int) -> str:
    """A shell loop of `count` requests, one answer (or FAIL) per line, then DONE. busybox `wget -T`
    segfaults, so `timeout` bounds each request."""
    return (f"for i in $(seq {count}); do timeout 3 wget -qO- {url} || echo FAIL; done; echo DONE; "
            "exec sleep 3600")


class RecordingSysctl:
    """Takes the proxy's kernel settings without writing them: the host's global route_localnet and
    conntrack limits are not a test's to change. NodePorts on 127.0.0.1 still work because the kubelet
    sets route_localnet on its own bridge (nodeagent/network/bridge.py), which the kernel ORs with `all`."""

    def __init__(self) -> None:
        self.written: dict[str, int] = {}

    def write(self, name: str, value: int) -> None:
        self.written[name] = value


class ProxyUnderTest:
    """`slimkube proxy` in this process (proxy/app.py ProxyServer) with health and metrics on free ports of
    127.0.0.1. `stop` ends it and leaves its rules in place, as upstream's kube-proxy does, so `start`
    again is a restarted proxy finding its own chains."""

    def __init__(self, kubeconfig: str, config: ProxyConfig, iptables: Iptables) -> None:
        self.kubeconfig = kubeconfig
        self.config = config
        self.iptables = iptables
        self.sysctl = RecordingSysctl()
        self.server: ProxyServer | None = None

    def start(self) -> None:
        self.server = ProxyServer(self.config, load_kubeconfig(self.kubeconfig), iptables=self.iptables,
                                  sysctl=self.sysctl)
        self.server.start()

    def healthz(self) -> int:
        assert self.server is not None
        port = self.server.ports["healthz"]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        finally:
            conn.close()

    def last_sync(self) -> float:
        """When the running proxy last synced its rules (0: not yet)."""
        assert self.server is not None
        sample = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
        return self.server.metrics.registry.get_sample_value(sample) or 0.0

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def cleanup(self) -> None:
        """`slimkube proxy --cleanup`, then a check that no chain of the proxy and no jump to one is left
        (the kubelet's own KUBE-SKTEST-* chains are not the proxy's and stay until the kubelet's teardown)."""
        run_cleanup(self.iptables)
        left = []
        for table in TABLES:
            saved = self.iptables.save(table)
            left += [f"{table} chain {c}" for c in parse_chains(saved) if is_proxy_chain(c)]
            left += [f"{table} {r.chain} jump {r.target}" for r in parse_rules(saved, BUILTIN_CHAINS)
                     if is_proxy_chain(r.target)]
        assert not left, f"the proxy's cleanup left {left}"


@dataclass
class Stack:
    client: RESTClient
    docker_api: Any
    iptables: Iptables
    node_name: str
    node_ip: str
    service_cidr: str
    proxy: ProxyUnderTest

    # ---- pods ----

    def create_pod(self, name: str, containers: list[dict], labels: dict[str, str] | None = None) -> None:
        self.client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"nodeName": self.node_name, "terminationGracePeriodSeconds": 1, "containers": containers}})

    def pod(self, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        except NotFound:
            return None

    def wait_running(self, name: str, timeout: float = 30) -> dict[str, Any]:
        def running() -> dict[str, Any] | None:
            pod = self.pod(name) or {}
            status = pod.get("status") or {}
            ready = status.get("containerStatuses") or [{}]
            return pod if status.get("phase") == "Running" and all(s.get("ready") for s in ready) else None

        return wait_for(running, timeout, lambda: f"pod {name} Running: {(self.pod(name) or {}).get('status')}")

    def logs(self, pod: str, container_name: str) -> str:
        statuses = {s["name"]: s for s in (self.pod(pod) or {}).get("status", {}).get("containerStatuses") or []}
        cid = (statuses.get(container_name) or {}).get("containerID", "").removeprefix("docker://")
        try:
            return self.docker_api.logs(cid).decode(errors="replace") if cid else ""
        except docker.errors.APIError as exc:  # gone or going (a restart the status does not show yet)
            if exc.status_code not in (404, 409):
                raise
            return ""

    def delete_pod(self, name: str) -> None:
        try:
            self.client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", grace_period_seconds=1)
        except NotFound:
            pass

    # ---- services ----

    def create_service(self, name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
                         **spec}}
        service = self.client.create(f"/api/v1/namespaces/{NAMESPACE}/services", body)
        ip = service["spec"]["clusterIP"]
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(self.service_cidr), (ip, self.service_cidr)
        assert routed_to(ip).startswith("sktestsvc"), f"{ip} must be routed to the safety net before any traffic"
        return service

    def delete_service(self, name: str) -> None:
        try:
            self.client.delete(f"/api/v1/namespaces/{NAMESPACE}/services/{name}")
        except NotFound:
            pass

    def endpoint_ips(self, name: str) -> set[str]:
        """The ready addresses of the Service's EndpointSlices (what the proxy reads)."""
        slices = self.client.list(f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices",
                                  params={"labelSelector": f"kubernetes.io/service-name={name}"})["items"]
        return {e["addresses"][0] for s in slices for e in s.get("endpoints") or []
                if (e.get("conditions") or {}).get("ready") is not False}

    def rules_for(self, ip: str) -> str:
        """The proxy's rules that name `ip`, for failure messages."""
        return "\n".join(line for table in ("filter", "nat") for line in self.iptables.save(table).splitlines()
                         if ip in line) or f"(no rule names {ip})"

    def nat_chains(self) -> set[str]:
        return {line[1:].split()[0] for line in self.iptables.save("nat").splitlines() if line.startswith(":")}

    def client_pod_answers(self, name: str, url: str, count: int, timeout: float = 40) -> list[str]:
        """Run `count` requests to `url` from a new pod and return its answers, one per request (read from
        the container's log: there is no `kubectl exec`)."""
        self.create_pod(name, [container("client", client_loop(url, count))])
        log = wait_for(lambda: (text := self.logs(name, "client")) and "DONE" in text and text, timeout,
                       lambda: f"client pod {name} done: {self.logs(name, 'client')[-500:]!r} "
                               f"{(self.pod(name) or {}).get('status')}")
        self.delete_pod(name)
        return [line for line in log.splitlines() if line and line != "DONE"]


def remove_pods(client: RESTClient) -> None:
    """Delete every pod of the module through the API and give the kubelet a moment to kill them; the
    fixture then removes whatever containers remain by label."""
    for pod in client.list(f"/api/v1/namespaces/{NAMESPACE}/pods").get("items") or []:
        try:
            client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}", grace_period_seconds=1)
        except NotFound:
            pass
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and client.list(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]:
        time.sleep(0.2)


def no_other_proxy(ipt: Iptables, timeout: float = 20) -> None:
    """The proxy's chain names are fixed (upstream's), and its cleanup removes them: refuse to run on a host
    where another proxy's KUBE-SERVICES already exists rather than take it over and delete it at the end."""
    deadline = time.monotonic() + timeout
    while ipt.has_chain("nat", "KUBE-SERVICES") or ipt.has_chain("filter", "KUBE-SERVICES"):
        if time.monotonic() > deadline:
            pytest.fail("this host already has a kube-proxy's KUBE-SERVICES chain; the test's proxy would take "
                        "it over and its cleanup would delete it", pytrace=False)
        time.sleep(0.2)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, docker_api, images, iptables) -> Iterator[Stack]:
    rid = uuid.uuid4().hex[:6]
    pod_cidr = free_pod_cidr()
    service_cidr = free_service_cidr(avoid=("10.244.0.0/16",))
    node_ip = default_ip()
    config = KubeletConfig(
        node_name=f"sktest-{rid}", node_ip=node_ip, address="127.0.0.1", port=0,
        data_dir=str(tmp_path_factory.mktemp("kubelet")), pod_cidr=pod_cidr, pod_bridge=f"sktest{rid}",
        pod_network="none", veth_prefix="sktest", pod_forward_chain=f"KUBE-SKTEST-{rid}-FWD",
        pod_masquerade_chain=f"KUBE-SKTEST-{rid}-MASQ",
        sync_frequency=5.0, node_status_update_frequency=5.0, pleg_relist_period=0.25)
    ipt = detect()
    no_other_proxy(ipt)
    with ExitStack() as undo:  # callbacks run last-in first-out, each even when an earlier one raised
        undo.enter_context(service_cidr_net(service_cidr, f"sktestsvc{rid}"))
        server = ThreadServer(str(tmp_path_factory.mktemp("apiserver")), service_cidr=service_cidr,
                              cluster_cidr="10.244.0.0/16")
        endpoint = server.start()
        undo.callback(server.stop)
        undo.callback(start_controller_manager(server.server).stop)  # as `slimkube server` runs them
        client = RESTClient.from_kubeconfig(endpoint.kubeconfig)
        undo.callback(client.close)
        undo.callback(delete_bridge, config.pod_bridge)
        undo.callback(remove_containers, docker_api, rid)
        kubelet = Kubelet(config, client, extra_labels={TEST_LABEL: rid}, oom_score_adj=None)
        undo.callback(remove_host_rules, kubelet)
        undo.callback(kubelet.stop)
        proxy = ProxyUnderTest(endpoint.kubeconfig, ProxyConfig(
            hostname_override=config.node_name, cluster_cidr=pod_cidr, healthz_bind_address="127.0.0.1:0",
            metrics_bind_address="127.0.0.1:0", min_sync_period=0.5), ipt)
        undo.callback(proxy.cleanup)
        undo.callback(proxy.stop)
        undo.callback(remove_pods, client)
        kubelet.start()
        proxy.start()
        yield Stack(client, docker_api, ipt, config.node_name, node_ip, service_cidr, proxy)


def remove_containers(docker_api: Any, rid: str) -> None:
    for entry in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={rid}"}):
        docker_api.remove_container(entry["Id"], force=True)


def remove_host_rules(kubelet: Kubelet) -> None:
    if kubelet.parts is not None:
        kubelet.parts.network.manager.remove_host_rules()


@pytest.fixture(scope="module")
def web(stack: Stack) -> dict[str, Any]:
    """Two httpd pods `web-a`, `web-b` behind the ClusterIP service `web`, answering through the proxy."""
    for name in ("web-a", "web-b"):
        stack.create_pod(name, [httpd(name)], WEB)
    ips = {stack.wait_running(name)["status"]["podIP"] for name in ("web-a", "web-b")}
    service = stack.create_service("web", WEB)
    wait_for(lambda: stack.endpoint_ips("web") == ips, 15, lambda: f"endpoints of web = {ips} "
                                                                   f"(have {stack.endpoint_ips('web')})")
    ip = service["spec"]["clusterIP"]
    wait_for(lambda: try_get(ip, 80), 15, lambda: f"web answering at {ip}:80; rules:\n{stack.rules_for(ip)}")
    return service


def assert_shared(answers: list[str], backends: set[str]) -> None:
    counts = Counter(answers)
    assert set(counts) == backends, counts
    assert sum(counts.values()) == REQUESTS, counts
    assert all(n >= MIN_SHARE * REQUESTS for n in counts.values()), counts


def test_cluster_ip_spreads_requests_from_the_host_and_from_a_pod(stack: Stack, web: dict) -> None:
    ip = web["spec"]["clusterIP"]
    assert_shared([http_get(ip, 80) for _ in range(REQUESTS)], {"web-a", "web-b"})
    assert_shared(stack.client_pod_answers("client", f"http://{ip}:80/", REQUESTS), {"web-a", "web-b"})


def test_client_ip_affinity_sends_every_request_to_one_backend(stack: Stack, web: dict) -> None:
    sticky = stack.create_service("sticky", WEB, sessionAffinity="ClientIP",
                                  sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    ip = sticky["spec"]["clusterIP"]
    wait_for(lambda: try_get(ip, 80), 15, lambda: f"sticky answering at {ip}:80; rules:\n{stack.rules_for(ip)}")
    from_host = Counter(http_get(ip, 80) for _ in range(50))
    assert len(from_host) == 1 and set(from_host) <= {"web-a", "web-b"}, from_host
    from_pod = Counter(stack.client_pod_answers("sticky-client", f"http://{ip}:80/", 50))
    assert len(from_pod) == 1 and set(from_pod) <= {"web-a", "web-b"}, from_pod
    stack.delete_service("sticky")


def test_node_port_answers_on_the_node_address_and_on_localhost(stack: Stack, web: dict) -> None:
    service = stack.create_service("web-np", WEB, type="NodePort")
    port = service["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    assert stack.proxy.server is not None and stack.proxy.server.node is not None
    assert stack.proxy.server.node.node_ips == (stack.node_ip,)  # the Node's InternalIP, as upstream reads it
    on_node = wait_for(lambda: try_get(stack.node_ip, port), 15, f"NodePort {port} on {stack.node_ip}")
    assert on_node in {"web-a", "web-b"}
    assert stack.proxy.sysctl.written.get("net/ipv4/conf/all/route_localnet") == 1
    on_localhost = wait_for(lambda: try_get("127.0.0.1", port), 5, f"NodePort {port} on 127.0.0.1")
    assert on_localhost in {"web-a", "web-b"}
    stack.delete_service("web-np")


def test_service_without_endpoints_is_refused_at_once(stack: Stack, web: dict) -> None:
    """Once the proxy has written the service's REJECT (filter table), every connection is refused at once;
    without the rule it would time out on the safety net's empty bridge."""
    service = stack.create_service("empty", {"app": "sktest-nobody"})
    ip = service["spec"]["clusterIP"]

    def rejected() -> bool:
        return any(f"-d {ip}/32" in line and "-j REJECT" in line for line in stack.iptables.save("filter").splitlines())

    wait_for(rejected, 15, f"the proxy's REJECT for {ip} in filter")
    for _ in range(3):
        started = time.monotonic()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ip, 80), timeout=3).close()
        assert time.monotonic() - started < 1.0
    stack.delete_service("empty")


def test_deleting_a_service_removes_its_chains(stack: Stack, web: dict) -> None:
    service = stack.create_service("doomed", WEB)
    ip = service["spec"]["clusterIP"]
    name = ServicePortName(NAMESPACE, "doomed", "http", "TCP")
    endpoints = wait_for(lambda: len(found := stack.endpoint_ips("doomed")) == 2 and found, 15, "endpoints of doomed")
    chains = {service_chain_name(name)} | {endpoint_chain_name(name, f"{a}:8080") for a in endpoints}
    wait_for(lambda: chains <= stack.nat_chains(), 15, lambda: f"{chains} in nat ({stack.nat_chains()})")
    assert try_get(ip, 80) in {"web-a", "web-b"}
    stack.delete_service("doomed")
    wait_for(lambda: not chains & stack.nat_chains(), 15, lambda: f"{chains & stack.nat_chains()} gone from nat")
    assert service_chain_name(ServicePortName(NAMESPACE, "web", "http", "TCP")) in stack.nat_chains()


def test_restarting_the_proxy_does_not_interrupt_traffic(stack: Stack, web: dict) -> None:
    """Requests from the host never stop: before, while no proxy runs (the rules stay in the kernel), during
    the new proxy's start and first full sync (which rewrites every chain in place), and after it."""
    ip = web["spec"]["clusterIP"]
    answers: list[str | None] = []
    done = threading.Event()

    def hammer() -> None:
        while not done.is_set():
            answers.append(try_get(ip, 80))
            time.sleep(0.01)

    worker = threading.Thread(target=hammer, daemon=True)
    worker.start()
    try:
        wait_for(lambda: len(answers) >= 20, 10, "requests before the restart")
        stack.proxy.stop()
        stopped = len(answers)
        wait_for(lambda: len(answers) >= stopped + 20, 10, "requests while no proxy runs")
        stack.proxy.start()
        wait_for(lambda: stack.proxy.last_sync() > 0, 15, "the new proxy's first sync")
        synced = len(answers)
        assert stack.proxy.healthz() == 200
        wait_for(lambda: len(answers) >= synced + 50, 15, "requests after the new proxy's first sync")
    finally:
        done.set()
        worker.join(timeout=5)
    assert answers and None not in answers, Counter(answers)
    assert set(answers) == {"web-a", "web-b"}, Counter(answers)


def test_a_pod_reaches_itself_through_its_own_service(stack: Stack, web: dict) -> None:
    """Hairpin: the service's only backend is the asking pod, so the DNAT'd packet goes back out the port it
    came in (hairpin mode on the bridge port) and must be masqueraded (`-s podIP -j KUBE-MARK-MASQ`), or
    the pod would answer itself directly, from its own address instead of the service's."""
    service = stack.create_service("self", {"app": "sktest-self"})
    url = f"http://{service['spec']['clusterIP']}:80/"
    loop = f"while true; do timeout 3 wget -qO- {url} || echo FAIL; sleep 0.2; done"
    stack.create_pod("self", [httpd("self"), container("client", loop)], {"app": "sktest-self"})
    pod = stack.wait_running("self")
    wait_for(lambda: stack.endpoint_ips("self") == {pod["status"]["podIP"]}, 15, "endpoints of self")
    wait_for(lambda: "self" in stack.logs("self", "client").split(), 20,
             lambda: f"the pod answering itself through its service: {stack.logs('self', 'client')[-300:]!r}")
    stack.delete_pod("self")
    stack.delete_service("self")
