"""Queries/s and p99 latency of the cluster DNS for Service names with 1,000 Services, against dnspython
answering the same names from a static in-memory zone, in the same run (goal ≤ 1.5×).

Run: `.venv/bin/python bench/dns.py [--services 1000] [--queries 20000] [--rounds 3]` (no root; 127.0.0.1).

- cluster DNS: the real `clusterdns.server.DNSServer` (UDP listener, `answer.py`, metrics) over the real
  zone (`zone.py`), filled by the real informer handlers (`feeder.ZoneFeeder`) with FAKE objects: N
  ClusterIP Services (`svc-NNNN` in 10 namespaces, one named port each) fed to the handlers directly, no API
  server — what is measured is answering, not watching.
- baseline: a plain dnspython server in the same shape (one UDP socket, one thread: `from_wire`, a dict
  lookup of (name, type) → RRset built once, `make_response`, `to_wire`) holding the same A records.

Each server runs in its own child process (one core each at most); this process is the client: one socket,
one query in flight (closed loop), names drawn at random from the N Services (A queries, fully qualified,
as a pod's resolver sends after its search path), each query timed from send to receive. Rounds alternate
between the two servers; the best round of each is kept. Also timed without sockets: `answer()` over the
zone against the baseline's lookup + make_response, per query in this process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import socket
import statistics
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this file's own name would shadow dnspython's `dns` package: take bench/ off the path, put the repo on it
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import dns.message  # noqa: E402
import dns.rdataclass  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.rrset  # noqa: E402

from clusterdns.answer import answer  # noqa: E402
from clusterdns.feeder import ZoneFeeder  # noqa: E402
from clusterdns.server import DNSServer  # noqa: E402
from clusterdns.zone import Zone  # noqa: E402

DOMAIN = "cluster.local"
NAMESPACES = 10


def fake_services(count: int) -> list[dict]:
    """FAKE Service objects (not from an API server): ClusterIP, one named port each."""
    return [{"metadata": {"name": f"svc-{i:04d}", "namespace": f"ns-{i % NAMESPACES}"},
             "spec": {"clusterIP": f"10.96.{i // 250 + 1}.{i % 250 + 1}",
                      "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}} for i in range(count)]


def names(count: int) -> list[str]:
    return [f"svc-{i:04d}.ns-{i % NAMESPACES}.svc.{DOMAIN}." for i in range(count)]


def cluster_zone(count: int) -> Zone:
    zone = Zone(DOMAIN)
    feeder = ZoneFeeder(zone, DOMAIN)
    for service in fake_services(count):
        feeder.on_service(service)
    return zone


def static_zone(count: int) -> dict[tuple[str, int], dns.rrset.RRset]:
    return {(name, dns.rdatatype.A): dns.rrset.from_text(name, 5, "IN", "A", service["spec"]["clusterIP"])
            for name, service in zip(names(count), fake_services(count), strict=True)}


def static_answer(zone: dict[tuple[str, int], dns.rrset.RRset], query: dns.message.Message) -> dns.message.Message:
    response = dns.message.make_response(query)
    question = query.question[0]
    rrset = zone.get((question.name.to_text().lower(), question.rdtype))
    if rrset is not None:
        response.answer.append(rrset)
    return response


def serve_cluster(count: int, pipe: Connection) -> None:
    server = DNSServer(cluster_zone(count), "127.0.0.1", 0)
    server.start()
    pipe.send(server.port)
    pipe.recv()  # until told to stop
    server.stop()


def serve_static(count: int, pipe: Connection) -> None:
    zone = static_zone(count)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    pipe.send(sock.getsockname()[1])
    while True:
        wire, client = sock.recvfrom(65535)
        if wire == b"stop":
            return
        sock.sendto(static_answer(zone, dns.message.from_wire(wire)).to_wire(), client)


def run_round(port: int, queries: list[bytes]) -> tuple[float, list[float]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)
    sock.connect(("127.0.0.1", port))
    latencies = []
    started = time.perf_counter()
    for wire in queries:
        sent = time.perf_counter()
        sock.send(wire)
        reply = sock.recv(65535)
        latencies.append(time.perf_counter() - sent)
        if reply[:2] != wire[:2] or reply[7] != 1:  # same id, one answer RR
            raise SystemExit(f"bad reply on port {port}: {reply!r}")
    elapsed = time.perf_counter() - started
    sock.close()
    return len(queries) / elapsed, latencies


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def in_process(count: int, queries: list[dns.message.Message]) -> tuple[float, float]:
    """µs per query: answer() over the cluster zone, and the static lookup + make_response."""
    zone, static = cluster_zone(count), static_zone(count)
    timings = []
    for function in (lambda q: answer(q, zone), lambda q: static_answer(static, q)):
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for query in queries:
                function(query).to_wire()
            best = min(best, (time.perf_counter() - started) / len(queries) * 1e6)
        timings.append(best)
    return timings[0], timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"# {platform.node()}: {platform.platform()}, Python {platform.python_version()}, nproc {os.cpu_count()}")
    print(f"# {args.services} FAKE Services fed to the cluster DNS's informer handlers; {args.queries} A queries "
          f"per round, one in flight, {args.rounds} rounds per server")
    rng = random.Random(1)
    all_names = names(args.services)
    messages = [dns.message.make_query(rng.choice(all_names), "A") for _ in range(args.queries)]
    wires = [m.to_wire() for m in messages]

    context = multiprocessing.get_context("fork")
    servers: dict[str, tuple[int, Callable[[], None]]] = {}
    for label, target in (("cluster DNS", serve_cluster), ("static dnspython", serve_static)):
        parent, child = context.Pipe()
        process = context.Process(target=target, args=(args.services, child), daemon=True)
        process.start()
        port = parent.recv()

        def stop(process=process, parent=parent, port=port) -> None:
            parent.send("stop")
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.sendto(b"stop", ("127.0.0.1", port))
            process.join(5)
            if process.is_alive():
                process.kill()
        servers[label] = (port, stop)
    try:
        for port, _ in servers.values():
            run_round(port, wires[:1000])  # warm-up
        best: dict[str, tuple[float, list[float]]] = {}
        for _ in range(args.rounds):
            for label, (port, _) in servers.items():
                qps, latencies = run_round(port, wires)
                if label not in best or qps > best[label][0]:
                    best[label] = (qps, latencies)
    finally:
        for _, stop in servers.values():
            stop()
    ours_us, static_us = in_process(args.services, messages[:5000])
    cluster, static = best["cluster DNS"], best["static dnspython"]
    print()
    print("| measure                         | cluster DNS | static dnspython | ratio (cluster ÷ static) |")
    print("|---------------------------------|------------:|-----------------:|-------------------------:|")
    print(f"| queries/s (UDP, 1 in flight)    | {cluster[0]:11.0f} | {static[0]:16.0f} | "
          f"{static[0] / cluster[0]:24.2f} |")
    for label, pick in (("p50 latency, ms", statistics.median), ("p99 latency, ms", p99)):
        ours, theirs = pick(cluster[1]) * 1e3, pick(static[1]) * 1e3
        print(f"| {label:31} | {ours:11.3f} | {theirs:16.3f} | {ours / theirs:24.2f} |")
    print(f"| answer + to_wire, µs (no socket)| {ours_us:11.1f} | {static_us:16.1f} | {ours_us / static_us:24.2f} |")
    print("\n(ratio > 1: the cluster DNS is slower; queries/s ratio is static ÷ cluster so all ratios read the same "
          "way; goal ≤ 1.5)")


if __name__ == "__main__":
    main()
