"""The Proxier against the real kernel, every iptables command run inside throwaway network namespaces
(`ip netns exec`), so the host's tables are never touched.

- Rules: a Proxier fed Service/Endpoints dicts writes the chains; a change rewrites only its service's
  chains (partial sync); a deleted service's chains are gone; jumps are not duplicated by full resyncs;
  cleanup leaves no proxy chain and keeps the kubelet's and a foreign chain.
- Traffic: a "client" namespace runs the proxy's rules, a "backend" namespace an HTTP server, joined by a
  veth pair; the service CIDR is routed to an empty bridge inside the client namespace (the safety
  net, tests/support/safety_net.py), so nothing leaves the namespaces. The cluster IP answers 200
  through the DNAT; once the endpoint
  is gone the connection is refused at once (REJECT), not left to time out.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from control.util import iptables as backend
from proxy.chains import endpoint_chain_name, service_chain_name
from proxy.cleanup import cleanup as proxy_cleanup
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig, ServicePortName
from proxy.proxier import Proxier
from tests.support.proxy_objects import NetnsRunner, endpoints, service

WEB = ServicePortName("default", "web", "http", "TCP")
API = ServicePortName("default", "api", "http", "TCP")
CLIENT_IP, BACKEND_IP, CLUSTER_IP = "10.250.77.1", "10.250.77.2", "10.96.77.10"


def sh(*argv: str, timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def in_ns(ns: str, *argv: str, timeout: float = 10) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *argv, timeout=timeout)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def mode(iptables: str) -> backend.Mode:
    """The host's backend: the namespace uses the same binaries a node would."""
    return backend.detect().mode


def make_proxier(ns: str, mode: backend.Mode, clock: Clock | None = None) -> tuple[Proxier, NetnsRunner]:
    run = NetnsRunner(ns)
    proxier = Proxier(node=NodeConfig("n1", cluster_cidr="10.250.77.0/24"),
                      iptables=backend.Iptables(mode=mode, run=run), metrics=ProxyMetrics(),
                      clock=clock or Clock())
    return proxier, run


def saved(proxier: Proxier, table: str = "nat") -> str:
    return proxier.iptables.save(table)


def chains(proxier: Proxier, table: str = "nat") -> set[str]:
    return {line[1:].split()[0] for line in saved(proxier, table).splitlines() if line.startswith(":")}


def test_sync_partial_rewrite_delete_and_cleanup(netns: Callable[[str], str], mode: backend.Mode):
    ns = netns("rules")
    clock = Clock()
    proxier, run = make_proxier(ns, mode, clock)
    proxier.on_service_add(service("web", ip="10.96.0.10"))
    proxier.on_service_add(service("api", ip="10.96.0.11"))
    proxier.on_endpoint_slice_add(endpoints("web", ("10.244.1.2",)))
    proxier.on_endpoint_slice_add(endpoints("api", ("10.244.1.3", "10.244.1.4")))
    proxier.set_initialized()
    proxier.sync()
    nat = chains(proxier)
    assert {service_chain_name(WEB), service_chain_name(API), endpoint_chain_name(API, "10.244.1.4:8080")} <= nat
    assert "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES" in saved(proxier)
    api_rules = [line for line in saved(proxier).splitlines() if service_chain_name(API) in line]

    # A change to web rewrites web's chains only; api's stay as they were.
    proxier.on_endpoint_slice_update(endpoints("web", ("10.244.1.2",)), endpoints("web", ("10.244.1.5",)))
    proxier.sync()
    assert f":{service_chain_name(API)} " not in run.restores[-1]
    nat = chains(proxier)
    assert endpoint_chain_name(WEB, "10.244.1.5:8080") in nat and endpoint_chain_name(WEB, "10.244.1.2:8080") not in nat
    assert [line for line in saved(proxier).splitlines() if service_chain_name(API) in line] == api_rules

    # A periodic full resync does not duplicate the jumps.
    clock.now += 30.0
    proxier.sync()
    assert f":{service_chain_name(API)} " in run.restores[-1]
    assert saved(proxier).count("-j KUBE-POSTROUTING") == 1
    assert saved(proxier, "filter").count("-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "
                                          "\"kubernetes service portals\" -j KUBE-SERVICES") == 1

    # A deleted service's chains are gone.
    proxier.on_service_delete(service("api", ip="10.96.0.11"))
    proxier.on_endpoint_slice_delete(endpoints("api", ("10.244.1.3", "10.244.1.4")))
    proxier.sync()
    nat = chains(proxier)
    assert not any(name.endswith(service_chain_name(API)[9:]) for name in nat)
    assert not {endpoint_chain_name(API, "10.244.1.3:8080"), endpoint_chain_name(API, "10.244.1.4:8080")} & nat

    # Cleanup: no proxy chain left; the kubelet's chain and a foreign chain with their jumps stay.
    proxier.iptables.restore("*filter\n:KUBE-POD-FORWARD - [0:0]\n:SKTEST-KEEP - [0:0]\n"
                             "-A SKTEST-KEEP -j RETURN\nCOMMIT\n")
    proxier.iptables.insert_rule("filter", "INPUT", ["-j", "SKTEST-KEEP"])
    assert proxy_cleanup(proxier.iptables) is True
    assert not [c for c in chains(proxier) if c.startswith("KUBE-")]
    assert {c for c in chains(proxier, "filter") if c.startswith(("KUBE-", "SKTEST"))} == {"KUBE-POD-FORWARD",
                                                                                          "SKTEST-KEEP"}
    assert "-A INPUT -j SKTEST-KEEP" in saved(proxier, "filter")
    assert "-A SKTEST-KEEP -j RETURN" in saved(proxier, "filter")
    assert proxy_cleanup(proxier.iptables) is False


@pytest.fixture
def wired(netns: Callable[[str], str], run_id: str, cleanup: Callable) -> tuple[str, str]:
    """Client and backend namespaces joined by a veth pair; the service CIDR routed to an empty bridge."""
    client, server = netns("cli"), netns("srv")
    veth = f"sktest{run_id[:6]}"
    steps = [
        ("ip", "link", "add", f"{veth}c", "netns", client, "type", "veth", "peer", "name", f"{veth}s",
         "netns", server),
        ("ip", "netns", "exec", client, "ip", "addr", "add", f"{CLIENT_IP}/24", "dev", f"{veth}c"),
        ("ip", "netns", "exec", server, "ip", "addr", "add", f"{BACKEND_IP}/24", "dev", f"{veth}s"),
        ("ip", "netns", "exec", client, "ip", "link", "set", f"{veth}c", "up"),
        ("ip", "netns", "exec", server, "ip", "link", "set", f"{veth}s", "up"),
        ("ip", "netns", "exec", client, "ip", "link", "set", "lo", "up"),
        ("ip", "netns", "exec", server, "ip", "link", "set", "lo", "up"),
        ("ip", "netns", "exec", client, "ip", "link", "add", "sktestsvc0", "type", "bridge"),
        ("ip", "netns", "exec", client, "ip", "link", "set", "sktestsvc0", "up"),
        ("ip", "netns", "exec", client, "ip", "route", "add", "10.96.0.0/12", "dev", "sktestsvc0"),
    ]
    for step in steps:
        done = sh(*step)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    return client, server


# Connect once with a 3 s timeout and print the outcome's name (REJECT gives ECONNREFUSED at once).
CONNECT = """import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def fetch(ns: str, url: str) -> subprocess.CompletedProcess:
    return in_ns(ns, "curl", "-sS", "--noproxy", "*", "-m", "3", url, timeout=10)


def test_cluster_ip_reaches_the_backend_and_is_refused_without_endpoints(
        wired: tuple[str, str], mode: backend.Mode, tmp_path, cleanup: Callable):
    client, server = wired
    (tmp_path / "index.html").write_text("hello from the backend\n")
    httpd = subprocess.Popen(["ip", "netns", "exec", server, sys.executable, "-m", "http.server", "8080",
                              "--bind", BACKEND_IP, "--directory", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cleanup(lambda: (httpd.kill(), httpd.wait(5)))
    deadline = time.monotonic() + 10
    while fetch(client, f"http://{BACKEND_IP}:8080/").returncode != 0:
        assert time.monotonic() < deadline, "the backend's HTTP server did not come up"
        time.sleep(0.1)

    proxier, _ = make_proxier(client, mode)
    web = service("web", ip=CLUSTER_IP, port=80)
    proxier.on_service_add(web)
    proxier.on_endpoint_slice_add(endpoints("web", (BACKEND_IP,), port=8080))
    proxier.set_initialized()
    proxier.sync()
    done = fetch(client, f"http://{CLUSTER_IP}/")
    assert done.returncode == 0 and done.stdout == "hello from the backend\n", done.stderr

    proxier.on_endpoint_slice_update(endpoints("web", (BACKEND_IP,), port=8080), endpoints("web", ()))
    proxier.sync()
    start = time.monotonic()
    probe = in_ns(client, sys.executable, "-c", CONNECT, CLUSTER_IP, "80")
    assert probe.stdout.strip() == "ConnectionRefusedError", probe.stdout + probe.stderr
    assert time.monotonic() - start < 2.0  # interpreter start-up included; a timeout would take 3 s
    assert f"{CLUSTER_IP}/32" in proxier.iptables.save("filter") and "-j REJECT" in proxier.iptables.save("filter")


def test_run_loop_applies_changes_and_stops(netns: Callable[[str], str], mode: backend.Mode):
    ns = netns("loop")
    run = NetnsRunner(ns)
    proxier = Proxier(node=NodeConfig("n1"), iptables=backend.Iptables(mode=mode, run=run), metrics=ProxyMetrics(),
                      min_sync_period=0.05, sync_period=30.0)
    stop = threading.Event()
    thread = threading.Thread(target=proxier.run, args=(stop,), daemon=True)
    thread.start()
    try:
        proxier.on_service_add(service("web", ip="10.96.0.10"))
        proxier.on_endpoint_slice_add(endpoints("web", ("10.244.1.2",)))
        proxier.set_initialized()
        wanted = endpoint_chain_name(WEB, "10.244.1.2:8080")
        deadline = time.monotonic() + 5
        while wanted not in chains(proxier) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert wanted in chains(proxier)
        for i in range(3, 8):  # a burst of changes coalesces into few syncs
            proxier.on_endpoint_slice_update(endpoints("web", (f"10.244.1.{i - 1}",)),
                                             endpoints("web", (f"10.244.1.{i}",)))
        wanted = endpoint_chain_name(WEB, "10.244.1.7:8080")
        while wanted not in chains(proxier) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert wanted in chains(proxier) and len(run.restores) <= 5
        assert proxier.healthy()[0]
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
