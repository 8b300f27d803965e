"""The cluster DNS's listeners: UDP and TCP on one address (the node's, port 53), and its metrics.

- UDP: one thread receives and answers cluster names inline (a dictionary lookup, answer.py); names to
  forward go to a small pool so a slow upstream never holds up cluster answers. An answer larger than the
  client's UDP size (512, or its EDNS payload size) goes out truncated (TC), and the client retries over TCP.
- TCP: a thread per connection (socketserver), several length-prefixed queries per connection, closed after
  10 s idle; at most MAX_TCP_CONNECTIONS at once, a connection past that closed as it is accepted.
- Forwarded queries in flight (queued or waiting on an upstream) are at most MAX_FORWARDS; one past that is
  answered REFUSED at once, as CoreDNS's forward plugin does past its `max_concurrent`, instead of queueing
  without end behind a slow upstream.
- Forwarding (forward.py) only for clients that are the cluster's — pods (the cluster CIDR), this node's
  addresses, loopback; anyone else reaching the node's port 53 gets REFUSED for other names, so a node
  never becomes an open resolver on its network. Cluster names are answered to everyone, as CoreDNS does.
- Metrics with CoreDNS's names (plugin/metrics): `coredns_dns_requests_total`, `coredns_dns_responses_total`
  (by rcode), `coredns_dns_request_duration_seconds`.

Sockets bind the given address only, never 0.0.0.0: the host's own resolver (systemd-resolved on
127.0.0.53:53, a dnsmasq on another address) keeps its port.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
from prometheus_client import CollectorRegistry, Counter, Histogram

from clusterdns.answer import answer
from clusterdns.forward import Forwarder
from clusterdns.zone import Zone

log = logging.getLogger(__name__)
TCP_IDLE_SECONDS = 10.0
FORWARD_WORKERS = 16
MAX_TCP_CONNECTIONS = 256
MAX_FORWARDS = 1000


class DNSMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("coredns_dns_requests_total", "Counter of DNS requests made per zone, protocol "
                                "and family.", ["server", "zone", "proto", "family", "type"], registry=self.registry)
        self.responses = Counter("coredns_dns_responses_total", "Counter of response status codes.",
                                 ["server", "zone", "rcode"], registry=self.registry)
        self.duration = Histogram("coredns_dns_request_duration_seconds", "Histogram of the time (in seconds) "
                                  "each request took per zone.", ["server", "zone", "type"], registry=self.registry,
                                  buckets=(0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128,
                                           0.256, 0.512, 1.024, 2.048, 4.096, 8.192))


class DNSServer:
    """Serves `zone` on (`address`, `port`) over UDP and TCP; see the module notes. `port` 0 binds a free
    port (the same one for both), which `port` then holds."""

    def __init__(self, zone: Zone, address: str, port: int = 53, *, forwarder: Forwarder | None = None,
                 forward_from: Sequence[str] = (), dns_address: str | None = None,
                 metrics: DNSMetrics | None = None) -> None:
        self.zone = zone
        self.address = address
        self.port = port
        self.forwarder = forwarder or Forwarder()
        self.dns_address = dns_address
        self.metrics = metrics or DNSMetrics()
        self._forward_from = [ipaddress.ip_network(n, strict=False) for n in ("127.0.0.0/8", "::1/128", *forward_from)]
        self._server_label = ""
        self._udp: socket.socket | None = None
        self._tcp: socketserver.ThreadingTCPServer | None = None
        self._threads: list[threading.Thread] = []
        self._pool = ThreadPoolExecutor(FORWARD_WORKERS, thread_name_prefix="dns-forward")
        self._forwards = threading.BoundedSemaphore(MAX_FORWARDS)  # a slot per forwarded query in flight
        self._connections = threading.BoundedSemaphore(MAX_TCP_CONNECTIONS)
        self._stopped = threading.Event()
        self._children: dict[tuple[int | str, ...], Any] = {}

    # ---- lifecycle ----

    def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        try:
            self._bind(family)
        except BaseException:
            self.stop()
            raise
        assert self._tcp is not None
        self._server_label = f"dns://{self.address}:{self.port}"
        self._threads = [threading.Thread(target=self._serve_udp, name="dns-udp", daemon=True),
                         threading.Thread(target=self._tcp.serve_forever, kwargs={"poll_interval": 0.2},
                                          name="dns-tcp", daemon=True)]
        for thread in self._threads:
            thread.start()
        log.info("cluster DNS serving %s on %s:%d (UDP and TCP)", self.zone.domain, self.address, self.port)

    def _bind(self, family: socket.AddressFamily) -> None:
        """UDP and TCP on one port; with port 0, the free UDP port may be taken for TCP: try another."""
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    outer._serve_tcp(self.request, self.client_address[0])
                finally:
                    outer._connections.release()

        class TCPServer(socketserver.ThreadingTCPServer):
            address_family = family
            allow_reuse_address = True
            daemon_threads = True

            def verify_request(self, request: Any, client_address: Any) -> bool:
                """A connection past MAX_TCP_CONNECTIONS is closed at once (socketserver's refusal)."""
                return outer._connections.acquire(blocking=False)

        for attempt in range(1 if self.port else 20):
            udp = self._udp = socket.socket(family, socket.SOCK_DGRAM)
            udp.bind((self.address, self.port))
            port = udp.getsockname()[1]
            try:
                self._tcp = TCPServer((self.address, port), Handler)
            except OSError:
                udp.close()
                self._udp = None
                if self.port or attempt == 19:
                    raise
                continue
            self.port = port
            return

    def stop(self) -> None:
        self._stopped.set()
        if self._tcp is not None:
            if self._threads:
                self._tcp.shutdown()
            self._tcp.server_close()
        if self._udp is not None:
            try:  # wake the receiving thread
                self._udp.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._udp.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- handling ----

    def _child(self, metric: Any, *labels: str) -> Any:
        """The metric's child for these labels (after the server label), looked up once: `labels()` takes a
        lock and builds a tuple on every call, a visible share of answering a query."""
        key: tuple[int | str, ...] = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(self._server_label, *labels)
        return child

    def _may_forward(self, client: str) -> bool:
        try:
            address = ipaddress.ip_address(client.split("%")[0])
        except ValueError:
            return False
        return any(address in network for network in self._forward_from)

    def handle(self, wire: bytes, client: str, *, proto: str,
               reply: Callable[[dns.message.Message, dns.message.Message], None]) -> None:
        """Answer one query, calling `reply(query, response)` now or, for a forwarded name, later."""
        started = time.perf_counter()
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return  # not a DNS query: dropped, as CoreDNS does with what it cannot parse
        response = answer(query, self.zone, dns_address=self.dns_address)
        zone = self.zone.domain if response is not None else "."
        qtype = dns.rdatatype.to_text(query.question[0].rdtype) if query.question else "other"
        self._child(self.metrics.requests, zone, proto, "2" if ":" in client else "1", qtype).inc()
        if response is not None:
            self._finish(query, response, zone, qtype, started, reply)
        elif not self._may_forward(client):
            response = dns.message.make_response(query)
            response.set_rcode(dns.rcode.REFUSED)
            self._finish(query, response, zone, qtype, started, reply)
        elif not self._forwards.acquire(blocking=False):
            response = dns.message.make_response(query)
            response.set_rcode(dns.rcode.REFUSED)
            self._finish(query, response, zone, qtype, started, reply)
        else:
            def forward() -> None:
                try:
                    self._finish(query, self.forwarder.forward(query, tcp=proto == "tcp"), zone, qtype, started,
                                 reply)
                finally:
                    self._forwards.release()
            self._pool.submit(forward)

    def _finish(self, query: dns.message.Message, response: dns.message.Message, zone: str, qtype: str,
                started: float, reply: Callable[[dns.message.Message, dns.message.Message], None]) -> None:
        self._child(self.metrics.responses, zone, dns.rcode.to_text(response.rcode())).inc()
        self._child(self.metrics.duration, zone, qtype).observe(time.perf_counter() - started)
        try:
            reply(query, response)
        except OSError as exc:  # the client went away
            log.debug("DNS reply failed: %s", exc)

    def _serve_udp(self) -> None:
        udp = self._udp
        assert udp is not None
        while not self._stopped.is_set():
            try:
                wire, client = udp.recvfrom(65535)
            except OSError:
                return
            if not wire:
                continue

            def reply(query: dns.message.Message, response: dns.message.Message, client: Any = client) -> None:
                udp.sendto(udp_wire(query, response), client)

            self.handle(wire, client[0], proto="udp", reply=reply)

    def _serve_tcp(self, connection: socket.socket, client: str) -> None:
        connection.settimeout(TCP_IDLE_SECONDS)
        lock = threading.Lock()

        def reply(query: dns.message.Message, response: dns.message.Message) -> None:
            data = response.to_wire()
            with lock:
                connection.sendall(struct.pack("!H", len(data)) + data)

        try:
            while not self._stopped.is_set():
                head = _read_exactly(connection, 2)
                if head is None:
                    return
                wire = _read_exactly(connection, struct.unpack("!H", head)[0])
                if wire is None:
                    return
                self.handle(wire, client, proto="tcp", reply=reply)
        except OSError:
            return


def udp_wire(query: dns.message.Message, response: dns.message.Message) -> bytes:
    """The response in at most the client's UDP size; what does not fit goes out empty with TC set."""
    limit = max(512, query.payload) if query.edns >= 0 else 512
    try:
        return response.to_wire(max_size=limit)
    except dns.exception.TooBig:
        response.answer.clear()
        response.authority.clear()
        response.additional.clear()
        response.flags |= dns.flags.TC
        return response.to_wire(max_size=limit)


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data
