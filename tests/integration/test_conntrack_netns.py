"""Stale UDP conntrack entries against the real kernel, inside throwaway network namespaces.

A client namespace runs the proxy's rules (iptables and conntrack both through `ip netns exec`); a UDP
datagram to the service's cluster IP is DNAT'd to a backend in a second namespace and leaves a conntrack
entry whose reply source is that backend. When the endpoint is replaced, the sync deletes exactly the
entries through the old backend, so the client's next datagrams are NAT'd afresh (the DNS-to-dead-pod bug).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from control.util import iptables as backend
from proxy.conntrack import Conntrack, Flow
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig
from proxy.proxier import Proxier
from tests.support.proxy_objects import NetnsRunner, endpoints, service

CLIENT_IP, OLD_BACKEND, NEW_BACKEND, CLUSTER_IP = "10.250.78.1", "10.250.78.2", "10.250.78.3", "10.96.78.53"
DNS = dict(name="dns", namespace="kube-system", protocol="UDP", port_name="dns")
SEND = "import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); " \
       "s.bind(('', int(sys.argv[3]))); s.sendto(b'query', (sys.argv[1], int(sys.argv[2])))"


def sh(*argv: str) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, f"{argv}: {done.stderr}"


@pytest.fixture
def wired(netns: Callable[[str], str], run_id: str, iptables: str) -> tuple[str, str]:
    client, server = netns("ctc"), netns("cts")
    veth = f"sktest{run_id[:6]}"
    sh("ip", "link", "add", f"{veth}c", "netns", client, "type", "veth", "peer", "name", f"{veth}s", "netns", server)
    sh("ip", "-n", client, "addr", "add", f"{CLIENT_IP}/24", "dev", f"{veth}c")
    for address in (OLD_BACKEND, NEW_BACKEND):
        sh("ip", "-n", server, "addr", "add", f"{address}/24", "dev", f"{veth}s")
    for ns, link in ((client, f"{veth}c"), (server, f"{veth}s"), (client, "lo"), (server, "lo")):
        sh("ip", "-n", ns, "link", "set", link, "up")
    sh("ip", "-n", client, "link", "add", "sktestsvc0", "type", "bridge")
    sh("ip", "-n", client, "link", "set", "sktestsvc0", "up")
    sh("ip", "-n", client, "route", "add", "10.96.0.0/12", "dev", "sktestsvc0")
    return client, server


def entries(conntrack: Conntrack) -> list[str]:
    return [line for line in conntrack.list_entries("-p", "udp").splitlines() if f"dst={CLUSTER_IP}" in line]


def test_entries_through_a_removed_udp_endpoint_are_deleted(wired: tuple[str, str]):
    client, _ = wired
    run = NetnsRunner(client)
    conntrack = Conntrack(run=run)
    proxier = Proxier(node=NodeConfig("n1", cluster_cidr="10.250.78.0/24"),
                      iptables=backend.Iptables(mode=backend.detect().mode, run=run), metrics=ProxyMetrics(),
                      conntrack=conntrack)
    proxier.on_service_add(service(ip=CLUSTER_IP, port=53, **DNS))
    proxier.on_endpoint_slice_add(endpoints(ips=(OLD_BACKEND,), port=53, **DNS))
    proxier.set_initialized()
    proxier.sync()

    sh("ip", "netns", "exec", client, sys.executable, "-c", SEND, CLUSTER_IP, "53", "40053")
    sh("ip", "netns", "exec", client, sys.executable, "-c", SEND, CLUSTER_IP, "53", "40054")
    before = entries(conntrack)
    assert len(before) == 2 and all(f"src={OLD_BACKEND}" in line for line in before), before

    proxier.on_endpoint_slice_update(endpoints(ips=(OLD_BACKEND,), port=53, **DNS),
                                endpoints(ips=(NEW_BACKEND,), port=53, **DNS))
    proxier.sync()
    assert entries(conntrack) == []
    assert proxier.metrics.registry.get_sample_value("kubeproxy_conntrack_cleanup_failures_total") == 0

    # The next datagram from the same socket address is NAT'd to the new backend.
    sh("ip", "netns", "exec", client, sys.executable, "-c", SEND, CLUSTER_IP, "53", "40053")
    after = entries(conntrack)
    assert len(after) == 1 and f"src={NEW_BACKEND}" in after[0], after
    # Nothing left to delete is not an error for the real tool.
    assert conntrack.delete(Flow("udp", orig_dst=CLUSTER_IP, dport=53, reply_src=OLD_BACKEND)) == 0
