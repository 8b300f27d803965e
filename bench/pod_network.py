"""The pod network's cost: TCP round trips and bulk throughput pod → pod on one node, and across nodes with
the host-gw and the vxlan backend, against the same traffic between the two node namespaces directly, in
one run.

Run (root): `.venv/bin/python bench/pod_network.py [--round-trips 3000] [--seconds 2] [--repeats 5]`,
about a minute; no dockerd needed.

The machine is made of network namespaces this run creates and removes (names `skbench-<id>-*`, nothing in
this host's namespace): a `wire` namespace holding a bridge, two node namespaces on it (10.99.0.1/24 and
.2, forwarding on), and in each node a pod bridge `cbr0` (10.244.N.1/24) with pods behind veths, wired as
the kubelet wires a pod (nodeagent/network/podnet.py: host end on the bridge, the pod's `eth0` with its
address and a default route via the bridge, MTU the backend's pod MTU): pods A and B on node 1, pod C on
node 2. Between the nodes the real backend does the routing: node 1's and node 2's `PodNetworkAgent`
(nodeagent/network/backends/agent.py) over the real `NetlinkRoutes`, given the two Node objects, make their
host-gw routes, or their VXLAN device (flannel.1, VNI 1, UDP 8472, MTU 1450) with its FDB, neighbour and
onlink route entries; each phase's entries are removed (`remove_all`, what `slimkube down` runs) before the
next.

Per path, a server (echo port and sink port) runs in the destination namespace and a client in the source
one, both this script re-run by `ip netns exec`: round trips (1 byte each way on one connection,
TCP_NODELAY; p50/p99 µs over `--round-trips`) and bulk (one connection writing 256 KiB chunks for
`--seconds`, bytes counted by the sink, which answers with its total once the client closes; Gbit/s).
The paths, each measured `--repeats` times in rotation (the median kept, so a noisy moment hits every path
alike):
- node → node: node 1 → node 2's address, the baseline (what any two hosts get);
- pod → pod, same node: A → B over cbr0;
- pod → pod, host-gw: A → C, routed by node 1 to node 2's address;
- pod → pod, vxlan: A → C, encapsulated by flannel.1.
Goals (the ratio to node → node): cross-node round-trip p50 ≤ 1.3×, throughput ≥ 0.9× with host-gw and
≥ 0.7× with vxlan. Python sockets on both ends cost the same on every path, so the ratios tell what the
network path adds.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodeagent.network.backends import desired as d  # noqa: E402
from nodeagent.network.backends.agent import PodNetworkAgent  # noqa: E402
from nodeagent.network.backends.netlink import NetlinkRoutes  # noqa: E402

ECHO_PORT, SINK_PORT = 5201, 5202
CHUNK = 256 * 1024
NODE_IPS = {1: "10.99.0.1", 2: "10.99.0.2"}
PODS = {"A": (1, "10.244.1.2"), "B": (1, "10.244.1.3"), "C": (2, "10.244.2.2")}


# ---- the two ends, run inside a namespace ----------------------------------------------------------------

def serve() -> None:
    """Echo on ECHO_PORT, count bytes on SINK_PORT (answering the total when the client closes); forever."""
    import threading

    def echo(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while data := conn.recv(64):
                conn.sendall(data)

    def sink(conn: socket.socket) -> None:
        total = 0
        with conn:
            while data := conn.recv(CHUNK):
                total += len(data)
            conn.sendall(str(total).encode())

    def accept(server: socket.socket, handler: Any) -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=handler, args=(conn,), daemon=True).start()

    echo_server = socket.create_server(("0.0.0.0", ECHO_PORT))
    sink_server = socket.create_server(("0.0.0.0", SINK_PORT))
    threading.Thread(target=accept, args=(sink_server, sink), daemon=True).start()
    print("serving", flush=True)  # both ports bound
    accept(echo_server, echo)


def client(target: str, round_trips: int, seconds: float) -> None:
    """Round trips then bulk to `target`; one JSON line with the figures."""
    with socket.create_connection((target, ECHO_PORT), timeout=10) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(200):  # warm-up: ARP, route caches, the server's thread
            conn.sendall(b"x")
            conn.recv(1)
        times = []
        for _ in range(round_trips):
            started = time.perf_counter_ns()
            conn.sendall(b"x")
            conn.recv(1)
            times.append(time.perf_counter_ns() - started)
    times.sort()
    payload = b"\0" * CHUNK
    with socket.create_connection((target, SINK_PORT), timeout=10) as conn:
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        total = int(conn.recv(64).decode())
        elapsed = time.perf_counter() - started
    print(json.dumps({"rtt_p50_us": times[len(times) // 2] / 1000, "rtt_p99_us": times[int(len(times) * 0.99)] / 1000,
                      "gbit_s": total * 8 / elapsed / 1e9}))


# ---- the machine ------------------------------------------------------------------------------------------

def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def in_ns(ns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


class Machine:
    """The namespaces of the module notes; `remove()` deletes them all."""

    def __init__(self, run: str) -> None:
        self.names = {key: f"skbench-{run}-{key}" for key in ("wire", "n1", "n2", *PODS)}
        self.made: list[str] = []

    def __getitem__(self, key: str) -> str:
        return self.names[key]

    def build(self) -> None:
        for name in self.names.values():
            ip("netns", "add", name)
            self.made.append(name)
            ip("-n", name, "link", "set", "lo", "up")
        wire = self["wire"]
        ip("-n", wire, "link", "add", "wirebr0", "type", "bridge")
        ip("-n", wire, "link", "set", "wirebr0", "up")
        for i, address in NODE_IPS.items():
            node = self[f"n{i}"]
            ip("-n", wire, "link", "add", f"up{i}", "type", "veth", "peer", "name", "eth0", "netns", node)
            ip("-n", wire, "link", "set", f"up{i}", "master", "wirebr0", "up")
            ip("-n", node, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", node, "link", "set", "eth0", "up")
            subprocess.run(in_ns(node, "sysctl", "-qw", "net.ipv4.ip_forward=1"), check=True)
            ip("-n", node, "link", "add", "cbr0", "type", "bridge")
            ip("-n", node, "addr", "add", f"10.244.{i}.1/24", "dev", "cbr0")
            ip("-n", node, "link", "set", "cbr0", "up")
        for pod, (i, address) in PODS.items():  # as the kubelet wires a sandbox
            node, veth = self[f"n{i}"], f"veth{pod.lower()}"
            ip("-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", self[pod])
            ip("-n", node, "link", "set", veth, "master", "cbr0", "up")
            ip("-n", self[pod], "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", self[pod], "link", "set", "eth0", "up")
            ip("-n", self[pod], "route", "add", "default", "via", f"10.244.{i}.1")

    def pod_mtu(self, mtu: int) -> None:
        for pod, (i, _) in PODS.items():
            ip("-n", self[f"n{i}"], "link", "set", f"veth{pod.lower()}", "mtu", str(mtu))
            ip("-n", self[pod], "link", "set", "eth0", "mtu", str(mtu))

    def remove(self) -> None:
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


class NoAPI:
    """The agents' Node patch (their annotations) goes nowhere: the Node objects are made here."""

    def patch(self, path: str, body: dict[str, Any], **_: object) -> dict[str, Any]:
        return {}


def backend_up(machine: Machine, backend: d.Backend) -> list[PodNetworkAgent]:
    """Both nodes' real agents set up and reconciled to the two Nodes; the pods' MTU set to the backend's."""
    agents = [PodNetworkAgent(NoAPI(), NetlinkRoutes(netns=machine[f"n{i}"]),  # type: ignore[arg-type]
                              node_name=f"n{i}", backend=backend, node_ip=NODE_IPS[i], pod_cidr=f"10.244.{i}.0/24")
              for i in NODE_IPS]
    for agent in agents:
        agent.setup()
    nodes = [{"metadata": {"name": a.node_name, "annotations": d.node_annotations(
                 backend, public_ip=a.node_ip, vtep_mac=a.vxlan.mac if a.vxlan else "")},
              "spec": {"podCIDR": a.pod_cidr},
              "status": {"addresses": [{"type": "InternalIP", "address": a.node_ip}]}} for a in agents]
    for agent in agents:
        changes = agent.reconcile(nodes)
        assert changes.add.routes, f"{backend.value}: {agent.node_name} made no route"
    machine.pod_mtu(agents[0].pod_mtu or 1500)
    return agents


def backend_down(agents: list[PodNetworkAgent]) -> None:
    for agent in agents:
        assert isinstance(agent.netlink, NetlinkRoutes)
        agent.netlink.remove_all(agent.device)


def measure(machine: Machine, source: str, dest: str, target: str, args: argparse.Namespace) -> dict[str, float]:
    server = subprocess.Popen(in_ns(machine[dest], sys.executable, __file__, "--serve"), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "serving"
        done = subprocess.run(in_ns(machine[source], sys.executable, __file__, "--client", target,
                                    "--round-trips", str(args.round_trips), "--seconds", str(args.seconds)),
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"client {source} → {target}: {done.stderr}")
        figures: dict[str, float] = json.loads(done.stdout)
        return figures
    finally:
        server.kill()
        server.wait()


PATHS = [  # name, backend, source, destination namespace, target address
    ("node → node", None, "n1", "n2", NODE_IPS[2]),
    ("pod → pod, same node", None, "A", "B", PODS["B"][1]),
    ("pod → pod, host-gw", d.Backend.HOST_GW, "A", "C", PODS["C"][1]),
    ("pod → pod, vxlan", d.Backend.VXLAN, "A", "C", PODS["C"][1]),
]


def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    machine = Machine(uuid.uuid4().hex[:6])
    results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in PATHS}
    try:
        machine.build()
        for _ in range(args.repeats):
            for backend in (d.Backend.HOST_GW, d.Backend.VXLAN):
                agents = backend_up(machine, backend)
                try:  # the paths without a backend once per round, beside host-gw (pods at the full MTU)
                    for name, wanted, source, dest, target in PATHS:
                        if wanted is backend or (wanted is None and backend is d.Backend.HOST_GW):
                            results[name].append(measure(machine, source, dest, target, args))
                finally:
                    backend_down(agents)
    finally:
        machine.remove()
    return {name: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for name, runs in results.items()}


def report(figures: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    base = figures["node → node"]
    print(f"# bench/pod_network.py — {platform.node()}, {platform.machine()}, kernel {platform.release()}, "
          f"{args.round_trips} round trips + {args.seconds:g} s bulk per path, median of {args.repeats}")
    print("| path                  | RTT p50 µs | RTT p99 µs | Gbit/s | p50 ÷ node→node | Gbit/s ÷ node→node |")
    print("|-----------------------|-----------:|-----------:|-------:|----------------:|-------------------:|")
    for name, f in figures.items():
        print(f"| {name:<21} | {f['rtt_p50_us']:10.1f} | {f['rtt_p99_us']:10.1f} | {f['gbit_s']:6.2f} | "
              f"{f['rtt_p50_us'] / base['rtt_p50_us']:15.2f} | {f['gbit_s'] / base['gbit_s']:18.2f} |")
    for name, throughput_goal in (("pod → pod, host-gw", 0.9), ("pod → pod, vxlan", 0.7)):
        rtt = figures[name]["rtt_p50_us"] / base["rtt_p50_us"]
        tput = figures[name]["gbit_s"] / base["gbit_s"]
        print(f"goal {name}: RTT p50 {rtt:.2f}× ≤ 1.3× {'met' if rtt <= 1.3 else 'NOT met'}; "
              f"throughput {tput:.2f}× ≥ {throughput_goal}× {'met' if tput >= throughput_goal else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
    elif args.client:
        client(args.client, args.round_trips, args.seconds)
    else:
        report(run(args), args)


if __name__ == "__main__":
    main()
