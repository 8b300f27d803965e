"""The kube-proxy daemon wired together with fakes at its edges (API client, iptables runner, sysctl): no
rule is written before both informers have listed, the first sync renders what they listed, health and
metrics are served, stop ends the loop. The real thing is tests/integration/test_proxy_daemon.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest
import requests

from control.client.kubeconfig import ClientConfig
from control.util.iptables import Iptables, Mode, Result
from proxy.app import ROUTE_LOCALNET, ProcSysctl, ProxyServer, apply_kernel_settings
from proxy.chains import service_chain_name
from proxy.config import ConntrackConfig, ProxyConfig
from proxy.model import NodeConfig, ServicePortName
from tests.support.apiserver import free_port
from tests.support.fake_apiserver import Action, FakeAPIServer
from tests.support.polling import wait_for

SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "default", "resourceVersion": "5"},
           "spec": {"clusterIP": "10.96.0.20", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
ENDPOINTS = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": "web-abcde", "namespace": "default", "resourceVersion": "6",
                          "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.0.7"], "conditions": {"ready": True}}],
             "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}}
WAIT = 10.0


class API:
    """The shared fake API server holding `objects`, the proxy's client on it, and lists held until `release`
    is set (to hold the informers unsynced)."""

    def __init__(self, *objects: dict) -> None:
        self.server = FakeAPIServer(*objects)
        self.client = self.server.client("kube-proxy")
        self.release = threading.Event()
        self.server.prepend_reactor(self._hold)

    def _hold(self, action: Action) -> None:
        if action.verb == "list":
            self.release.wait()

    def delete_node(self) -> None:
        self.server.client("test").delete("/api/v1/nodes/w1")


class Recorder:
    """An iptables/conntrack runner that succeeds and keeps every restore's input."""

    def __init__(self) -> None:
        self.restores: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, argv: Sequence[str], *, stdin: str | None = None) -> Result:
        with self.lock:
            if "restore" in argv[0] and stdin is not None:
                self.restores.append(stdin)
        return Result(0, "", "")


class FakeSysctl:
    def __init__(self) -> None:
        self.written: dict[str, int] = {}

    def write(self, name: str, value: int) -> None:
        self.written[name] = value


@pytest.fixture
def daemon():
    api = API(SERVICE, ENDPOINTS, NODE)
    recorder, sysctl = Recorder(), FakeSysctl()
    config = ProxyConfig(hostname_override="w1", cluster_cidr="10.244.0.0/16", min_sync_period=0.0,
                         healthz_bind_address=f"127.0.0.1:{free_port()}",
                         metrics_bind_address=f"127.0.0.1:{free_port()}")
    server = ProxyServer(config, ClientConfig(server="http://127.0.0.1:1"), iptables=Iptables(Mode.NFT, recorder),
                         sysctl=sysctl, addresses=lambda: ["192.168.9.9"], client=api.client)
    yield server, api, recorder, sysctl
    server.stop()


def test_nothing_is_written_until_both_informers_listed_then_the_listed_service(daemon) -> None:
    server, api, recorder, sysctl = daemon
    server.start()
    assert server.node is not None and server.node.node_ips == ("10.0.0.5",)  # from the Node object
    assert sysctl.written[ROUTE_LOCALNET] == 1
    time.sleep(0.3)
    assert recorder.restores == []  # the lists are held back: not initialized, no sync
    api.release.set()
    chain = service_chain_name(ServicePortName("default", "web", "http", "TCP"))
    wait_for(lambda: any(f":{chain}" in text for text in recorder.restores), what="the service's chain", timeout=WAIT,
             interval=0.02)
    wait_for(lambda: server.health().last_updated is not None, what="a successful sync", timeout=WAIT, interval=0.02)
    base = f"http://127.0.0.1:{server.ports['healthz']}"
    assert requests.get(base + "/healthz", timeout=5).status_code == 200
    metrics = requests.get(f"http://127.0.0.1:{server.ports['metrics']}/metrics", timeout=5).text
    assert "kubeproxy_sync_proxy_rules_duration_seconds_count 1.0" in metrics


def test_stop_ends_the_loop_and_the_listeners(daemon) -> None:
    server, api, _, _ = daemon
    api.release.set()
    server.start()
    port = server.ports["healthz"]
    server.stop()
    assert api.client.closed
    assert not any(t.name == "proxier" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_without_a_node_object_the_host_addresses_are_the_node_ips(daemon) -> None:
    server, api, _, _ = daemon
    api.delete_node()
    api.release.set()
    server.start()
    assert server.node is not None and server.node.node_ips == ("192.168.9.9",)


def test_a_port_in_use_fails_start_before_any_informer_runs() -> None:
    api = API(NODE)
    api.release.set()
    taken = ProxyServer(ProxyConfig(hostname_override="w1", healthz_bind_address=f"127.0.0.1:{free_port()}",
                                    metrics_bind_address=""),
                        ClientConfig(server="http://127.0.0.1:1"), iptables=Iptables(Mode.NFT, Recorder()),
                        sysctl=FakeSysctl(), client=api.client)
    taken.start()
    try:
        clash = ProxyServer(taken.config, ClientConfig(server="http://127.0.0.1:1"),
                            iptables=Iptables(Mode.NFT, Recorder()), sysctl=FakeSysctl(), client=API(NODE).client)
        with pytest.raises(OSError):
            clash.start()
        assert clash.stop_event.is_set() and clash.proxier is not None
    finally:
        taken.stop()


def test_kernel_settings_route_localnet_and_conntrack() -> None:
    sysctl = FakeSysctl()
    apply_kernel_settings(NodeConfig("n", localhost_nodeports=False), ProxyConfig(conntrack=ConntrackConfig(
        max_per_core=0, tcp_established_timeout=0, tcp_close_wait_timeout=7200)), sysctl, cpus=4)
    assert sysctl.written == {"net/netfilter/nf_conntrack_tcp_timeout_close_wait": 7200}


def test_a_conntrack_setting_the_kernel_refuses_is_only_logged(tmp_path) -> None:
    (tmp_path / "net/ipv4/conf/all").mkdir(parents=True)
    (tmp_path / ROUTE_LOCALNET).write_text("0\n")
    sysctl = ProcSysctl(str(tmp_path))  # no net/netfilter directory: conntrack writes fail
    apply_kernel_settings(NodeConfig("n"), ProxyConfig(), sysctl, cpus=1)
    assert sysctl.read(ROUTE_LOCALNET) == 1
