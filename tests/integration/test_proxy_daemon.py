"""`slimkube proxy` as an operator runs it, against a real API server and the host's real iptables:
a Service and an Endpoints object made by hand become KUBE-SVC/KUBE-SEP chains named with
upstream's hash in the nat table of the backend in use; /healthz answers 200 and /metrics counts syncs;
deleting the Service removes its chains; SIGTERM stops the daemon and leaves the rules; `--cleanup` removes
every proxy chain and jump but no other KUBE-* chain (one standing in for the kubelet's KUBE-POD-*).

The daemon's config keeps the host's kernel settings as they are (localhostNodePorts off, conntrack
fields 0); those writes are checked inside a throwaway network namespace instead. No traffic is sent to
service IPs here (tests/integration/test_service_traffic.py does that). Whatever happens, the teardown
kills the daemon by PID and runs the proxy's cleanup, so no KUBE-* chain outlives the test.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import yaml

from control.util.iptables import Iptables, detect
from proxy.app import run_cleanup
from proxy.cleanup import is_proxy_chain
from proxy.tables import parse_chains
from tests.support.apiserver import Endpoint, free_port, running_server
from tests.support.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0


def upstream_hash(text: str) -> str:
    """pkg/proxy/iptables/proxier.go portProtoHash: base32(sha256(text))[:16], computed here independently."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:16]


def chains(iptables: Iptables, table: str) -> frozenset[str]:
    return parse_chains(iptables.save(table))


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("proxy-api"))) as endpoint:
        yield endpoint


@pytest.fixture
def host_iptables(root, iptables: str, cleanup: Callable) -> Iptables:
    """The backend in use; the proxy's chains are removed at teardown whatever the test did."""
    backend = detect()
    cleanup(lambda: run_cleanup(backend))
    return backend


class ProxyProcess:
    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "slimkube.cli", "proxy", *args], cwd=ROOT,
                                         stdout=log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)  # by PID: the child this test started
            self.proc.wait(timeout=10)


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_services_become_chains_health_metrics_sigterm_and_cleanup(
        api: Endpoint, host_iptables: Iptables, run_id: str, tmp_path: Path, cleanup: Callable) -> None:
    healthz, metrics = free_port(), free_port()
    config = tmp_path / "kube-proxy.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "hostnameOverride": f"sktest-{run_id}", "clusterCIDR": "10.244.0.0/16",
        "healthzBindAddress": f"127.0.0.1:{healthz}", "metricsBindAddress": f"127.0.0.1:{metrics}",
        "iptables": {"minSyncPeriod": "100ms", "localhostNodePorts": False},
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }))
    bystander = f"KUBE-SKTEST-{run_id}"  # a KUBE-* chain that is not the proxy's, like the kubelet's KUBE-POD-*
    host_iptables.restore(f"*filter\n:{bystander} - [0:0]\nCOMMIT\n")
    cleanup(lambda: host_iptables.restore(f"*filter\n:{bystander} - [0:0]\n-X {bystander}\nCOMMIT\n"))

    proxy = ProxyProcess(["--kubeconfig", api.kubeconfig, "--config", str(config)], tmp_path / "proxy.log")
    cleanup(proxy.kill)

    def synced() -> float:
        assert proxy.proc.poll() is None, proxy.log()
        try:
            text = requests.get(f"http://127.0.0.1:{metrics}/metrics", timeout=2).text
        except requests.ConnectionError:
            return 0.0
        return metric(text, "kubeproxy_sync_proxy_rules_duration_seconds_count")

    wait_for(synced, what="a first sync", timeout=WAIT)
    health = requests.get(f"http://127.0.0.1:{healthz}/healthz", timeout=5)
    assert health.status_code == 200 and set(health.json()) == {"lastUpdated", "currentTime"}
    assert requests.get(f"http://127.0.0.1:{healthz}/livez", timeout=5).status_code == 200

    name = f"sktest-{run_id}"
    service = api.request("POST", "/api/v1/namespaces/default/services", json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}})
    assert service.status_code == 201, service.text
    cleanup(lambda: api.request("DELETE", f"/api/v1/namespaces/default/services/{name}"))
    endpoints = api.request("POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", json={
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": name}}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.7"]}, {"addresses": ["10.244.0.8"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
    assert endpoints.status_code == 201, endpoints.text
    cleanup(lambda: api.request("DELETE", f"/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/{name}"))

    port_name = f"default/{name}:http"
    svc_chain = "KUBE-SVC-" + upstream_hash(port_name + "tcp")
    sep_chains = {"KUBE-SEP-" + upstream_hash(port_name + "tcp" + f"10.244.0.{i}:8080") for i in (7, 8)}
    wait_for(lambda: {svc_chain, *sep_chains} <= chains(host_iptables, "nat"), what=f"{svc_chain} and its endpoints",
             timeout=WAIT)
    nat = host_iptables.save("nat")
    cluster_ip = service.json()["spec"]["clusterIP"]
    assert f"-d {cluster_ip}/32 -p tcp -m comment --comment \"{port_name} cluster IP\"" in nat
    assert "--probability 0.5000000000" in nat
    assert {"KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"} <= chains(host_iptables, "nat")
    assert synced() > 1
    metrics_text = requests.get(f"http://127.0.0.1:{metrics}/metrics", timeout=5).text
    assert metric(metrics_text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") > time.time() - 60

    assert api.request("DELETE", f"/api/v1/namespaces/default/services/{name}").status_code == 200
    wait_for(lambda: not ({svc_chain, *sep_chains} & chains(host_iptables, "nat")), what=f"{svc_chain} removed",
             timeout=WAIT)

    proxy.proc.send_signal(signal.SIGTERM)
    assert proxy.proc.wait(timeout=WAIT) == 0, proxy.log()
    assert "KUBE-SERVICES" in chains(host_iptables, "nat")  # the rules stay while the proxy is down

    done = subprocess.run([sys.executable, "-m", "slimkube.cli", "proxy", "--cleanup"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "proxy rules removed" in done.stderr
    for table in ("filter", "nat"):
        assert not [chain for chain in chains(host_iptables, table) if is_proxy_chain(chain)], table
    assert bystander in chains(host_iptables, "filter")
    again = subprocess.run([sys.executable, "-m", "slimkube.cli", "proxy", "--cleanup"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "proxy rules absent" in again.stderr


def test_kernel_settings_are_written_in_the_proxys_network_namespace(netns: Callable[[str], str]) -> None:
    """route_localnet and the conntrack timeouts, written by the daemon's own code inside a namespace (these
    sysctls are per network namespace), so the host's values are not changed."""
    namespace = netns("sysctl")
    code = ("from proxy.app import ProcSysctl, apply_kernel_settings\n"
            "from proxy.config import ConntrackConfig, ProxyConfig\n"
            "from proxy.model import NodeConfig\n"
            "apply_kernel_settings(NodeConfig('n'), ProxyConfig(conntrack=ConntrackConfig(max_per_core=0, "
            "tcp_established_timeout=7200, tcp_close_wait_timeout=1800)), ProcSysctl(), cpus=1)\n")
    subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", code], cwd=ROOT, check=True,
                   timeout=60)

    def read(name: str) -> str:
        return subprocess.run(["ip", "netns", "exec", namespace, "cat", f"/proc/sys/{name}"], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert read("net/ipv4/conf/all/route_localnet") == "1"
    assert read("net/netfilter/nf_conntrack_tcp_timeout_established") == "7200"
    assert read("net/netfilter/nf_conntrack_tcp_timeout_close_wait") == "1800"
