"""clusterdns/server.py + forward.py over real sockets on 127.0.0.1 (no root): UDP and TCP, truncation to the
client's UDP size, forwarding of other names to an upstream (here a second server), REFUSED for clients
that are not the cluster's, metrics; and the node's EndpointSlice (registration.py) against a fake API."""

from __future__ import annotations

import socket
import threading
import time

import dns.flags
import dns.message
import dns.query
import dns.rcode
import pytest

from clusterdns import server as server_module
from clusterdns.feeder import ZoneFeeder
from clusterdns.forward import Forwarder
from clusterdns.registration import Registration, node_slice
from clusterdns.server import DNSServer
from clusterdns.zone import Zone
from control.client.errors import NotFound
from tests.support.polling import wait_until
from tests.unit.clusterdns.test_records import ep, eps, svc


def _server(domain: str, *, forwarder: Forwarder | None = None) -> DNSServer:
    zone = Zone(domain)
    feeder = ZoneFeeder(zone, domain)
    feeder.on_service(svc(clusterIP="10.96.0.20", ports=[{"name": "http", "port": 80, "protocol": "TCP"}]))
    feeder.on_service(svc("big", clusterIP="None"))
    feeder.on_slice(eps("big", *[ep(f"10.244.{i // 250}.{i % 250 + 1}", f"big-{i}") for i in range(60)]))
    return DNSServer(zone, "127.0.0.1", 0, forwarder=forwarder or Forwarder(servers=()))


@pytest.fixture
def servers():
    upstream = _server("upstream.test")
    upstream.start()
    server = _server("cluster.local", forwarder=Forwarder(servers=(f"127.0.0.1#{upstream.port}",), timeout=1))
    server.start()
    yield server, upstream
    server.stop()
    upstream.stop()


def test_udp_and_tcp_answers(servers):
    server, _ = servers
    query = dns.message.make_query("web.ns.svc.cluster.local.", "A")
    for response in (dns.query.udp(query, "127.0.0.1", port=server.port, timeout=2),
                     dns.query.tcp(query, "127.0.0.1", port=server.port, timeout=2)):
        assert response.rcode() == dns.rcode.NOERROR
        assert [r.to_text() for r in response.answer] == ["web.ns.svc.cluster.local. 5 IN A 10.96.0.20"]
    metrics = server.metrics.registry
    assert metrics.get_sample_value("coredns_dns_requests_total", {
        "server": f"dns://127.0.0.1:{server.port}", "zone": "cluster.local.", "proto": "tcp", "family": "1",
        "type": "A"}) == 1
    assert metrics.get_sample_value("coredns_dns_responses_total", {
        "server": f"dns://127.0.0.1:{server.port}", "zone": "cluster.local.", "rcode": "NOERROR"}) == 2


def test_large_answer_truncated_over_udp_whole_over_tcp(servers):
    server, _ = servers
    query = dns.message.make_query("big.ns.svc.cluster.local.", "A", use_edns=False)
    truncated = dns.query.udp(query, "127.0.0.1", port=server.port, timeout=2)
    assert truncated.flags & dns.flags.TC and not truncated.answer
    edns = dns.message.make_query("big.ns.svc.cluster.local.", "A", use_edns=0, payload=4096)
    assert len(dns.query.udp(edns, "127.0.0.1", port=server.port, timeout=2).answer[0]) == 60
    assert len(dns.query.tcp(query, "127.0.0.1", port=server.port, timeout=2).answer[0]) == 60


def test_other_names_forwarded_to_upstream(servers):
    server, _ = servers
    for send in (dns.query.udp, dns.query.tcp):
        response = send(dns.message.make_query("web.ns.svc.upstream.test.", "A"), "127.0.0.1", port=server.port,
                        timeout=3)
        assert [r.to_text() for r in response.answer] == ["web.ns.svc.upstream.test. 5 IN A 10.96.0.20"]


def test_no_upstream_is_servfail_and_strangers_are_refused():
    server = _server("cluster.local", forwarder=Forwarder(servers=()))
    replies: list[dns.message.Message] = []
    query = dns.message.make_query("example.com.", "A")
    server.handle(query.to_wire(), "192.0.2.7", proto="udp", reply=lambda q, r: replies.append(r))
    assert replies[-1].rcode() == dns.rcode.REFUSED
    server.handle(dns.message.make_query("web.ns.svc.cluster.local.", "A").to_wire(), "192.0.2.7", proto="udp",
                  reply=lambda q, r: replies.append(r))
    assert replies[-1].rcode() == dns.rcode.NOERROR and replies[-1].answer  # cluster names: anyone
    server.handle(b"\x00garbage", "127.0.0.1", proto="udp", reply=lambda q, r: replies.append(r))
    assert len(replies) == 2  # not a query: no reply
    assert Forwarder(servers=()).forward(query).rcode() == dns.rcode.SERVFAIL


class StuckForwarder(Forwarder):
    """An upstream that answers only when released."""

    def __init__(self) -> None:
        super().__init__(servers=())
        self.release = threading.Event()

    def forward(self, query: dns.message.Message, *, tcp: bool = False) -> dns.message.Message:
        self.release.wait(10)
        return super().forward(query, tcp=tcp)


def test_forwarded_queries_in_flight_are_bounded(monkeypatch):
    """Past MAX_FORWARDS in flight behind a stuck upstream, a query is REFUSED at once instead of queued."""
    monkeypatch.setattr(server_module, "MAX_FORWARDS", 3)
    forwarder = StuckForwarder()
    server = _server("cluster.local", forwarder=forwarder)
    replies: list[dns.message.Message] = []
    try:
        for _ in range(4):
            server.handle(dns.message.make_query("example.com.", "A").to_wire(), "127.0.0.1", proto="udp",
                          reply=lambda q, r: replies.append(r))
        assert [r.rcode() for r in replies] == [dns.rcode.REFUSED]  # the fourth, answered at once
        forwarder.release.set()
        assert wait_until(lambda: len(replies) == 4, 5)
        server.handle(dns.message.make_query("example.com.", "A").to_wire(), "127.0.0.1", proto="udp",
                      reply=lambda q, r: replies.append(r))
        assert wait_until(lambda: len(replies) == 5, 5) and replies[-1].rcode() == dns.rcode.SERVFAIL  # freed
    finally:
        forwarder.release.set()
        server.stop()


def test_tcp_connections_are_bounded(monkeypatch):
    monkeypatch.setattr(server_module, "MAX_TCP_CONNECTIONS", 2)
    server = _server("cluster.local")
    server.start()
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=2) for _ in range(2)]
    try:
        time.sleep(0.3)  # both accepted and being served
        with pytest.raises((EOFError, OSError)):  # closed as it is accepted
            dns.query.tcp(dns.message.make_query("web.ns.svc.cluster.local.", "A"), "127.0.0.1", port=server.port,
                          timeout=2)
        held.pop().close()
        assert wait_until(lambda: _answers_over_tcp(server), 5)
    finally:
        for connection in held:
            connection.close()
        server.stop()


def _answers_over_tcp(server: DNSServer) -> bool:
    try:
        return dns.query.tcp(dns.message.make_query("web.ns.svc.cluster.local.", "A"), "127.0.0.1",
                             port=server.port, timeout=2).rcode() == dns.rcode.NOERROR
    except (EOFError, OSError):
        return False


def test_forwarder_reads_resolv_conf_skipping_loopback(tmp_path):
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver ::1\nsearch corp\n")
    assert Forwarder(str(conf)).servers() == ("10.0.0.2",)


class FakeAPI:
    def __init__(self) -> None:
        self.objects: dict[str, dict] = {"/api/v1/nodes/n1": {"metadata": {"name": "n1", "uid": "u1"}}}
        self.calls: list[str] = []

    def get(self, path: str) -> dict:
        if path not in self.objects:
            raise NotFound(404, "NotFound", f"{path} not found")
        return self.objects[path]

    def create(self, path: str, body: dict) -> dict:
        self.calls.append("create")
        self.objects[f"{path}/{body['metadata']['name']}"] = {**body, "metadata": {**body["metadata"],
                                                                                     "resourceVersion": "1"}}
        return body

    def update(self, path: str, body: dict) -> dict:
        self.calls.append(f"update rv={body['metadata']['resourceVersion']}")
        self.objects[path] = body
        return body

    def delete(self, path: str) -> None:
        self.calls.append("delete")
        if self.objects.pop(path, None) is None:
            raise NotFound(404, "NotFound", f"{path} not found")


def test_registration_writes_updates_and_removes_the_node_slice():
    api = FakeAPI()
    registration = Registration(api, "n1")
    path = "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/kube-dns-n1"
    registration.register("10.250.0.2", port=53, metrics_port=9153)
    registration.register("10.250.0.2", port=53, metrics_port=9153)  # unchanged: no write
    written = api.objects[path]
    assert written["metadata"]["labels"]["kubernetes.io/service-name"] == "kube-dns"
    assert written["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}]
    assert written["endpoints"] == [{"addresses": ["10.250.0.2"], "nodeName": "n1",
                                     "conditions": {"ready": True, "serving": True, "terminating": False}}]
    assert [(p["name"], p["port"], p["protocol"]) for p in written["ports"]] == [
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    registration.register("10.250.0.9", port=53, metrics_port=9153)
    assert api.calls == ["create", "update rv=1"]
    registration.unregister()
    registration.unregister()  # gone already: fine
    assert api.calls[-1] == "delete" and path not in api.objects
    assert node_slice({"metadata": {"name": "n"}}, "fd00::1", port=53, metrics_port=None)["addressType"] == "IPv6"
