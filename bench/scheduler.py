"""How fast the scheduler places pods through the API server, against the same scheduling code run in this
process without the API (N pods onto M fake Node objects: pods/s and per-pod scheduling latency
p50/p99, beside the same algorithm run in-process on the same cache without the API).

Run: `.venv/bin/python bench/scheduler.py [--nodes 100,1000,5000] [--pods N] [--clients N]`.

For each node count M, two rounds on the same M Node objects (4 cpu, 32Gi, 110 pods allocatable; no
kubelets) and the same N pods (100m cpu, 128Mi each, default scheduler):

- api: a real `slimkube server` child process (SQLite, 127.0.0.1, every controller disabled so only the API
  server and the scheduler run, as upstream's scheduler_perf runs them). The M nodes are created through
  the API; one warm-up pod is bound first (the scheduler has listed the nodes); then a watch on the pods is
  opened and `--clients` threads POST the N pods as fast as they go. A pod's latency is from just before
  its POST to the watch event showing it bound (`spec.nodeName` set, which the binding writes together with
  PodScheduled=True); pods/s is N ÷ (last bound − first POST). The creation rate is printed too: when the
  creators are slower than the scheduler, the end-to-end rate is theirs.
- in-process: the scheduler's own code (control/scheduler/scheduler.py `Scheduler`: queue, cache,
  snapshot, filters and scores, assume, the binding handed to its pool) on a client that answers the
  binding at once; nodes fed to its cache as its informer would. A pod's latency is its cycle (pop →
  binding call); pods/s is N ÷ (last binding − first pop). The pods are all queued first. Best of
  `--repeats` rounds (the fastest; other processes on a shared machine only ever slow a round down).

The ratio (API cost ×) is in-process pods/s ÷ api pods/s. Goals (from upstream's scheduler_perf):
≥ 100 pods/s end to end at 100 nodes, ≥ 500 pods/s in-process at 100 nodes, and at 5000 nodes no less than
half the 100-node throughput.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server

from control.client.informer import InformerFactory  # noqa: E402
from control.client.rest import RESTClient  # noqa: E402
from control.scheduler.scheduler import Scheduler  # noqa: E402
from slimkube.controlplane import known_components  # noqa: E402
from tests.support.apiserver import ProcessServer  # noqa: E402

NAMESPACE = "bench"


def node_object(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name}},
            "spec": {}, "status": {"allocatable": allocatable, "capacity": allocatable,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1", "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


@dataclass(frozen=True)
class Result:
    pods_per_second: float
    p50_ms: float
    p99_ms: float
    extra: str = ""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def in_parallel(clients: list[RESTClient], items: list[Any], work: Callable[[RESTClient, Any], None]) -> None:
    """`work(client, item)` for every item, each client thread taking every len(clients)-th item."""
    def run(index: int) -> None:
        for item in items[index::len(clients)]:
            work(clients[index], item)

    with ThreadPoolExecutor(len(clients)) as pool:
        for future in [pool.submit(run, i) for i in range(len(clients))]:
            future.result()


# -- through the API ----------------------------------------------------------------------------------------

def api_round(workdir: Path, nodes: int, pods: int, clients: int) -> Result:
    disable = ",".join(name for name in known_components() if name != "scheduler")
    server = ProcessServer(str(workdir / f"server-{nodes}"), args=("--disable", disable, "--scheduler-port", "0"))
    endpoint = server.start()
    rest = [RESTClient.from_kubeconfig(endpoint.kubeconfig) for _ in range(clients)]
    try:
        client = rest[0]
        client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": NAMESPACE}})
        began = time.perf_counter()
        in_parallel(rest, [f"node-{i:05d}" for i in range(nodes)],
                    lambda c, name: c.create("/api/v1/nodes", node_object(name)))
        print(f"  [api, {nodes} nodes] nodes created in {time.perf_counter() - began:.1f} s", flush=True)
        warm = client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod_object("warm-up"))
        deadline = time.monotonic() + 120
        while not client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/warm-up")["spec"].get("nodeName"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm-up pod was not bound: {server.log()}")
            time.sleep(0.05)
        time.sleep(1.0)  # the node informer has every node (the warm-up pod needed only one)

        sent: dict[str, float] = {}
        bound: dict[str, float] = {}
        created: list[float] = []
        all_bound = threading.Event()
        stop = threading.Event()
        watching = threading.Event()

        def watch() -> None:
            with RESTClient.from_kubeconfig(endpoint.kubeconfig) as watcher:
                watching.set()
                for event in watcher.watch(f"/api/v1/namespaces/{NAMESPACE}/pods",
                                           resource_version=warm["metadata"]["resourceVersion"], stop=stop):
                    name = event.object.get("metadata", {}).get("name", "")
                    if name in bound or not (event.object.get("spec") or {}).get("nodeName"):
                        continue
                    if name.startswith("p-"):
                        bound[name] = time.perf_counter()
                        if len(bound) == pods:
                            all_bound.set()
                            return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        watching.wait(10)
        time.sleep(0.2)

        def create(c: RESTClient, name: str) -> None:
            sent[name] = time.perf_counter()
            c.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod_object(name))
            created.append(time.perf_counter())

        in_parallel(rest, [f"p-{i:05d}" for i in range(pods)], create)
        if not all_bound.wait(600):
            raise RuntimeError(f"{len(bound)}/{pods} pods bound after 600 s")
        stop.set()
        first = min(sent.values())
        latencies = [(bound[name] - sent[name]) * 1000 for name in sent]
        return Result(pods / (max(bound.values()) - first), percentile(latencies, 0.5), percentile(latencies, 0.99),
                      extra=f"created {pods / (max(created) - first):.0f}/s")
    finally:
        for c in rest:
            c.close()
        server.stop()


# -- in this process -------------------------------------------------------------------------------------------

class _InstantClient:
    """Answers the binding (and events) at once and notes when each binding came."""

    def __init__(self) -> None:
        self.bound: dict[str, float] = {}

    def create(self, path: str, body: dict, *, params: Mapping[str, str] | None = None) -> dict:
        if path.endswith("/binding"):
            self.bound[body["metadata"]["name"]] = time.perf_counter()
        return body

    def patch(self, path: str, patch: Any, *, patch_type: str = "merge") -> dict:
        return {}

    def delete(self, path: str, **kw: Any) -> dict:
        return {}


def in_process_round(nodes: int, pods: int) -> Result:
    client = _InstantClient()
    scheduler = Scheduler(client, InformerFactory(client))  # type: ignore[arg-type]  # never started: fed below
    for i in range(nodes):
        scheduler.cache.add_node(node_object(f"node-{i:05d}"))
    names = [f"p-{i:05d}" for i in range(pods)]
    for i, name in enumerate(names):
        pod = pod_object(name)
        pod["metadata"].update(uid=f"uid-{i}", resourceVersion=str(i + 1))
        scheduler.queue.add(pod)
    popped: dict[str, float] = {}
    for _ in names:
        info = scheduler.queue.pop(timeout=0)
        assert info is not None
        popped[info.pod["metadata"]["name"]] = time.perf_counter()
        scheduler.schedule_cycle(info)
    scheduler._binder.shutdown(wait=True)
    scheduler.recorder.shutdown(5.0)
    latencies = [(client.bound[name] - popped[name]) * 1000 for name in names]
    return Result(pods / (max(client.bound.values()) - min(popped.values())), percentile(latencies, 0.5),
                  percentile(latencies, 0.99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="100,1000,5000", help="node counts, comma-separated")
    parser.add_argument("--pods", type=int, default=1000, help="pods scheduled per node count")
    parser.add_argument("--clients", type=int, default=4, help="threads creating pods through the API")
    parser.add_argument("--repeats", type=int, default=3, help="in-process rounds per node count (best kept)")
    parser.add_argument("--skip-api", action="store_true", help="only the in-process round (profiling)")
    args = parser.parse_args()
    node_counts = [int(n) for n in args.nodes.split(",")]
    print(f"nproc {os.cpu_count()}, Python {platform.python_version()}, {platform.platform()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    rows: list[tuple[int, Result | None, Result]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scheduler-") as tmp:
        for nodes in node_counts:
            local = max((in_process_round(nodes, args.pods) for _ in range(args.repeats)),
                        key=lambda result: result.pods_per_second)
            print(f"  [in-process, {nodes} nodes] {local.pods_per_second:.0f} pods/s", flush=True)
            api = None if args.skip_api else api_round(Path(tmp), nodes, args.pods, args.clients)
            if api is not None:
                print(f"  [api, {nodes} nodes] {api.pods_per_second:.0f} pods/s ({api.extra})", flush=True)
            rows.append((nodes, api, local))
    print(f"\n{args.pods} pods per row; load average at the end {os.getloadavg()[0]:.1f} (other processes on the "
          "machine slow both columns down)\n")
    print("| nodes | api pods/s | api p50 ms | api p99 ms | in-process pods/s | in-process p50 ms | "
          "in-process p99 ms | ratio (API cost ×) |")
    print("|------:|-----------:|-----------:|-----------:|------------------:|------------------:|"
          "------------------:|-------------------:|")
    for nodes, api, local in rows:
        api_cells = (f"{api.pods_per_second:10.0f} | {api.p50_ms:10.1f} | {api.p99_ms:10.1f}" if api
                     else f"{'-':>10} | {'-':>10} | {'-':>10}")
        ratio = f"{local.pods_per_second / api.pods_per_second:18.1f}" if api else f"{'-':>18}"
        print(f"| {nodes:5d} | {api_cells} | {local.pods_per_second:17.0f} | {local.p50_ms:17.2f} | "
              f"{local.p99_ms:17.2f} | {ratio} |")
    base = rows[0]
    for nodes, api, local in rows[1:]:
        print(f"{nodes} nodes vs {base[0]}: in-process {local.pods_per_second / base[2].pods_per_second:.2f}×"
              + (f", api {api.pods_per_second / base[1].pods_per_second:.2f}×" if api and base[1] else ""))


if __name__ == "__main__":
    main()
