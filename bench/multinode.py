"""`slimkube up --nodes N` on one host (time from `up --nodes 5` to five Ready nodes, and each
extra node's RSS: kubelet + proxy), against `up --nodes 1` measured in the same run.

Run (root, a running dockerd): `.venv/bin/python bench/multinode.py [--nodes 5] [--settle-seconds 5]`.

Same run, same host, same settings:
1. baseline: `slimkube up --nodes 1` as a child process in a fresh data dir; the time from its start to
   its `[up] ready:` line (the control plane serving, node 1 Ready, its proxy synced), the Node checked
   Ready through the API; after `--settle-seconds`, the RSS of the `up` process — the control plane with
   node 1's kubelet and kube-proxy in it (node 1 has no process of its own to measure apart). Then Ctrl-C
   and `slimkube down`.
2. `slimkube up --nodes N` the same way, in a fresh data dir: the time to `[up] ready:`, which `up` prints
   once every node's agent said Ready and its proxy synced once (slimkube/nodeprocs.py), all N Nodes checked
   Ready through the API; after `--settle-seconds`, each extra node's RSS: its `slimkube agent` plus its
   `slimkube proxy` process (their pids from DIR/nodes/NAME/*.pid), and the `up` process's again; USS
   beside RSS, since RSS counts the pages the processes share (the interpreter, libraries) in each.
   Then Ctrl-C and `slimkube down`.

No pods are created: the figures are the nodes' own cost. Everything is made with this run's names (node
`skbench-<id>`, its nodes `skbench-<id>-2…N` and their namespaces, bridge `skbench<id>`, chains
`KUBE-SKBENCH-<id>-*`), a node network and pod CIDRs clear of this host's routes, and removed at the end
even on failure: `up` stopped (SIGINT, then SIGKILL by pid), `slimkube down` for its data dir, the data
dir deleted.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its helpers

import psutil  # noqa: E402
import yaml  # noqa: E402

from control.client.rest import RESTClient  # noqa: E402
from slimkube import multinode  # noqa: E402
from slimkube.nodeprocs import read_pid  # noqa: E402
from tests.support.apiserver import free_port  # noqa: E402
from tests.support.hostnet import free_block  # noqa: E402

READY_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0


class Up:
    """`slimkube up` as a child process; its output kept line by line, the time of its `[up] ready:` line."""

    def __init__(self, data_dir: str, *extra: str) -> None:
        self.lines: list[str] = []
        self.ready_at: float | None = None
        self.kubeconfig = ""
        self._ready = threading.Event()
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "slimkube.cli", "up", "--data-dir", data_dir,
                                      "--port", str(free_port()), *extra], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("[up] kubeconfig: "):
                self.kubeconfig = line.split(": ", 1)[1].strip()
            if line.startswith("[up] ready:") and self.ready_at is None:
                self.ready_at = time.monotonic()
                self._ready.set()
        self._ready.set()

    def wait_ready(self) -> float:
        """Seconds from the start of `up` to its `[up] ready:` line."""
        if not self._ready.wait(READY_TIMEOUT) or self.ready_at is None:
            raise RuntimeError(f"`up` not ready within {READY_TIMEOUT:.0f} s (exit {self.proc.poll()}):\n"
                               + "\n".join(self.lines[-40:]))
        return self.ready_at - self.started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # by pid: our own child (Ctrl-C)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def write_config(data_dir: Path, run: str, *, pod_cidr: str) -> None:
    """Node 1's kubelet.yaml and kube-proxy.yaml with this run's names and free ports (the host's conntrack
    settings left alone), as the e2e tests write them; nodes 2..N get their names and CIDRs from `up`."""
    data_dir.mkdir(parents=True)
    (data_dir / "kubelet.yaml").write_text(yaml.safe_dump({
        "nodeName": f"skbench-{run}", "podBridge": f"skbench{run}", "vethPrefix": "skb", "podCIDR": pod_cidr,
        "clusterCIDR": "10.244.0.0/16", "address": "127.0.0.1", "port": free_port(),
        "podForwardChain": f"KUBE-SKBENCH-{run}-FWD", "podMasqueradeChain": f"KUBE-SKBENCH-{run}-MASQ",
        "vxlanDevice": f"skbvx{run}"[:15]}))
    (data_dir / "kube-proxy.yaml").write_text(yaml.safe_dump({
        "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}}))


def ready_nodes(kubeconfig: str) -> list[str]:
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        items = client.get("/api/v1/nodes")["items"]
    return sorted(n["metadata"]["name"] for n in items
                  if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or []))


def memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, USS) in MiB. RSS counts the pages a process shares with others (the interpreter, libraries) in
    full; USS only its own, what stopping it would free (psutil reads /proc/PID/smaps: root)."""
    info = psutil.Process(pid).memory_full_info()
    return info.rss / 2**20, info.uss / 2**20


def run_cluster(base: Path, name: str, run: str, count: int, *, pod_cidr: str, nodes_cidr: str,
                settle: float) -> dict:
    """One `up --nodes count` from start to down: its time to ready, `up`'s RSS, each extra node's RSS."""
    data_dir = base / name
    write_config(data_dir, run, pod_cidr=pod_cidr)
    up = Up(str(data_dir), "--nodes", str(count), "--nodes-cidr", nodes_cidr)
    try:
        seconds = up.wait_ready()
        ready = ready_nodes(up.kubeconfig)
        if len(ready) != count:
            raise RuntimeError(f"`up` said ready but {len(ready)} of {count} Nodes are Ready: {ready}")
        time.sleep(settle)
        extra: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
        plan = multinode.load_plan(str(data_dir))
        for node in plan.nodes if plan else ():
            agent, proxy = read_pid(node, "agent"), read_pid(node, "proxy")
            if agent is None or proxy is None:
                raise RuntimeError(f"no running agent and proxy recorded for {node.name}: {agent}, {proxy}")
            extra[node.name] = (memory_mib(agent), memory_mib(proxy))
        return {"seconds": seconds, "up": memory_mib(up.proc.pid), "extra": extra}
    finally:
        up.stop()
        down = subprocess.run([sys.executable, "-m", "slimkube.cli", "down", "--data-dir", str(data_dir)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        if down.returncode != 0:
            print(f"`slimkube down --data-dir {data_dir}` exited {down.returncode}:\n{down.stderr}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--settle-seconds", type=float, default=5.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("multinode.py needs root (network namespaces, bridges, iptables, Docker)", file=sys.stderr)
        return 1
    if args.nodes < 2:
        parser.error("--nodes must be at least 2 (the baseline is --nodes 1)")
    run = uuid.uuid4().hex[:6]
    first = free_block("10.244", range(100, 250), args.nodes)
    nodes_cidr = f"10.250.{free_block('10.250', range(0, 250), 1)}.0/24"
    with tempfile.TemporaryDirectory(prefix="skbench-") as tmp:
        common = {"run": run, "pod_cidr": f"10.244.{first}.0/24", "nodes_cidr": nodes_cidr,
                  "settle": args.settle_seconds}
        baseline = run_cluster(Path(tmp), "one", count=1, **common)
        many = run_cluster(Path(tmp), "many", count=args.nodes, **common)
    report(args.nodes, baseline, many, args.settle_seconds)
    return 0


def report(count: int, baseline: dict, many: dict, settle: float) -> None:
    print(f"# up --nodes {count} against --nodes 1 ({platform.node()}, nproc {os.cpu_count()}, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')})")
    print(f"| measurement | --nodes 1 | --nodes {count} | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| start → `[up] ready` (every node Ready, proxies synced), s | {baseline['seconds']:.1f} | "
          f"{many['seconds']:.1f} | {many['seconds'] / baseline['seconds']:.2f} |")
    for index, kind in enumerate(("RSS", "USS")):
        one, all_ = baseline["up"][index], many["up"][index]
        print(f"| `up` process {kind} (control plane + node 1's kubelet and proxy), MiB | {one:.0f} | "
              f"{all_:.0f} | {all_ / one:.2f} |")
    print()
    up_rss, up_uss = baseline["up"]
    print(f"each extra node, {settle:.0f} s after ready, MiB (ratios: against the whole `up` process of --nodes 1, "
          "which holds node 1's kubelet and proxy with the control plane):")
    print("| node | agent RSS | proxy RSS | RSS together | / `up` RSS | agent USS | proxy USS | USS together "
          "| / `up` USS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = []
    for name, ((agent_rss, agent_uss), (proxy_rss, proxy_uss)) in sorted(many["extra"].items()):
        rss, uss = agent_rss + proxy_rss, agent_uss + proxy_uss
        totals.append((rss, uss))
        print(f"| {name} | {agent_rss:.0f} | {proxy_rss:.0f} | {rss:.0f} | {rss / up_rss:.2f} | {agent_uss:.0f} | "
              f"{proxy_uss:.0f} | {uss:.0f} | {uss / up_uss:.2f} |")
    if totals:
        print(f"mean per extra node: RSS {sum(t[0] for t in totals) / len(totals):.0f} MiB, "
              f"USS {sum(t[1] for t in totals) / len(totals):.0f} MiB; {count - 1} extra nodes: "
              f"USS {sum(t[1] for t in totals):.0f} MiB in all")


if __name__ == "__main__":
    sys.exit(main())
