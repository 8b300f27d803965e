"""The PLEG's relist against a bare low-level Docker list of the same containers (relist cost
with 100 containers beside a bare low-level Docker list of the same containers; goal ≤ 1.5×).

Run (root, a running dockerd): `.venv/bin/python bench/pleg.py [--containers 100] [--rounds 50]
[--changed 10]`.

Same run, same host, same containers: `--containers` busybox `sleep` containers (network none), each
labelled as the app container of its own pod for this run's node (nodeagent/runtime/labels.py
`container_labels`, so `slimkube.io/node=skbench-<id>`), which is what the kubelet's list filters on.
1. steady state (nothing changed): the real `GenericPLEG.relist()` over the real `DockerRuntime` (the
   low-level `containers(all=True, filters=label=slimkube.io/node=…)` list, identity parsing, the diff,
   the per-pod PodStatus rebuild and cache writes; no inspect, as nothing changed) against the bare
   `APIClient.containers(all=True, filters={"label": …})` with the same filter. The two alternate,
   `--rounds` times each, so both see the same dockerd and page cache; the first relist (which inspects
   every container) is not counted. Wall-clock per call, p50/p99, and this process's CPU per call.
2. `--changed` containers changed per relist: that many are killed (running → exited), then started again
   (exited → running), alternately; after each change one PLEG relist (list + inspects of exactly what
   changed, on its own inspect pool; an exited container's inspect also reads its termination message
   file, as the kubelet does; relisted again until every change is committed, which the real
   `inspect_wait` may split over two relists) against the bare list, and against the bare list plus a bare
   `inspect_container` of the same containers on a pool as wide as the PLEG's. The kills and starts are not
   timed; the two directions are reported apart (only → exited reads termination messages).

Everything carries this run's label `slimkube.bench=<id>` (not `slimkube.test`: test sessions sweep that
label) and is removed at the end by that label, even on failure.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import docker  # noqa: E402

from bench.pod_startup import BENCH_LABEL, remove_bare  # noqa: E402 - the same label and sweep
from nodeagent.images import BUSYBOX, ensure_image  # noqa: E402
from nodeagent.pleg import DEFAULT_INSPECT_CONCURRENCY, GenericPLEG  # noqa: E402
from nodeagent.runtime import labels as L  # noqa: E402
from nodeagent.runtime.docker import DockerRuntime  # noqa: E402

APP_COMMAND = ["sleep", "3600"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def create_containers(api: docker.APIClient, node: str, run: str, count: int) -> list[str]:
    """`count` running containers, each the app container of its own pod on `node`; their ids."""
    def one(i: int) -> str:
        pod = {"metadata": {"name": f"pleg-{i}", "namespace": "default", "uid": f"skbench-{run}-{i}"}}
        sandbox = L.sandbox_metadata(pod, 0)
        labels = L.docker_labels(L.container_labels(sandbox, "app", extra={BENCH_LABEL: run}),
                                 L.container_annotations(pod, {"name": "app"}, attempt=0, spec_hash="0"),
                                 L.runtime_labels(L.Kind.CONTAINER, node=node))
        created = api.create_container(BUSYBOX.ref, command=APP_COMMAND, name=L.make_name("app", sandbox, 0),
                                       labels=labels, host_config=api.create_host_config(network_mode="none"))
        api.start(created["Id"])
        return str(created["Id"])

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(count)))


class Timings:
    """Wall-clock seconds and this process's CPU seconds per call of one operation."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, operation: Callable[[], object]) -> None:
        cpu, start = time.process_time(), time.perf_counter()
        operation()
        self.wall.append(time.perf_counter() - start)
        self.cpu.append(time.process_time() - cpu)


def relist_until_committed(pleg: GenericPLEG) -> None:
    """Relist until no pod is held back by a pending or failed inspect (one relist waits `inspect_wait`)."""
    deadline = time.monotonic() + 30
    while pleg.relist().failed_pods:
        if time.monotonic() > deadline:
            raise RuntimeError("the PLEG did not commit the changes within 30 s")


def bench_steady(pleg: GenericPLEG, bare_list: Callable[[], object], rounds: int) -> tuple[Timings, Timings]:
    kubelet, bare = Timings(), Timings()
    for i in range(rounds):
        first, second = ((kubelet, pleg.relist), (bare, bare_list)) if i % 2 else ((bare, bare_list),
                                                                                      (kubelet, pleg.relist))
        first[0].time(first[1])
        second[0].time(second[1])
    return kubelet, bare


def bench_changed(api: docker.APIClient, pleg: GenericPLEG, bare_list: Callable[[], object], ids: list[str],
                  changed: int, rounds: int) -> dict[str, tuple[Timings, Timings, Timings]]:
    """Per direction ("exited": killed, "running": started again): (PLEG, bare list, bare list + inspects)."""
    timings = {direction: (Timings(), Timings(), Timings()) for direction in ("exited", "running")}
    pool = ThreadPoolExecutor(DEFAULT_INSPECT_CONCURRENCY)

    def list_and_inspect(targets: list[str]) -> None:
        bare_list()
        list(pool.map(api.inspect_container, targets))

    try:
        for i in range(rounds):
            start = (i // 2) * changed % len(ids)
            targets = (ids[start:] + ids)[:changed]
            direction = "exited" if i % 2 == 0 else "running"
            with ThreadPoolExecutor(8) as changer:  # not timed: kill them, or start them again
                list(changer.map(api.kill if direction == "exited" else api.start, targets))
            kubelet, bare, bare_inspect = timings[direction]
            kubelet.time(lambda: relist_until_committed(pleg))
            bare.time(bare_list)
            bare_inspect.time(lambda targets=targets: list_and_inspect(targets))
        if rounds % 2:
            with ThreadPoolExecutor(8) as changer:
                list(changer.map(api.start, targets))
    finally:
        pool.shutdown()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=50, help="steady-state relists (and bare lists) timed")
    parser.add_argument("--changed", type=int, default=10, help="containers changed before each relist; 0 skips")
    parser.add_argument("--changed-rounds", type=int, default=20)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("pleg.py needs root (Docker)", file=sys.stderr)
        return 1
    run = uuid.uuid4().hex[:6]
    node = f"skbench-{run}"
    api = docker.APIClient(version="auto", timeout=120)
    ensure_image(api, BUSYBOX)
    pleg = GenericPLEG(DockerRuntime(api, node_name=node))
    filters = {"label": f"{L.NODE}={node}"}

    def bare_list() -> object:
        return api.containers(all=True, filters=filters)

    try:
        ids = create_containers(api, node, run, args.containers)
        relist_until_committed(pleg)  # the first relist inspects every container: not the steady state
        if len(pleg.cache.uids()) != args.containers:
            raise RuntimeError(f"the PLEG sees {len(pleg.cache.uids())} pods, expected {args.containers}")
        for _ in range(3):  # warm both paths
            pleg.relist()
            bare_list()
        steady = bench_steady(pleg, bare_list, args.rounds)
        changed = bench_changed(api, pleg, bare_list, ids, args.changed, args.changed_rounds) if args.changed else None
    finally:
        pleg.stop()
        remove_bare(api, run)
    report(args, steady, changed)
    return 0


def report(args: argparse.Namespace, steady: tuple[Timings, Timings],
           changed: dict[str, tuple[Timings, Timings, Timings]] | None) -> None:
    def row(label: str, timings: Timings) -> str:
        return (f"| {label} | {percentile(timings.wall, .5) * 1000:.1f} | {percentile(timings.wall, .99) * 1000:.1f} "
                f"| {statistics.mean(timings.cpu) * 1000:.1f} |")

    print(f"# PLEG relist, {args.containers} containers ({platform.node()}, nproc {os.cpu_count()}, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')})")
    print("| measurement | p50 ms | p99 ms | CPU ms/call (this process) |")
    print("|---|---:|---:|---:|")
    print(row(f"PLEG relist, nothing changed ({args.rounds}×)", steady[0]))
    print(row(f"bare low-level list, same filter ({args.rounds}×)", steady[1]))
    if changed is not None:
        n, rounds = args.changed, args.changed_rounds // 2
        for direction, (kubelet, bare, bare_inspect) in changed.items():
            print(row(f"PLEG relist, {n} changed → {direction}, until committed ({rounds}×)", kubelet))
            print(row(f"bare low-level list, same states ({rounds}×)", bare))
            print(row(f"bare list + {n} bare inspects of them ({rounds}×)", bare_inspect))
    ratio = percentile(steady[0].wall, .5) / percentile(steady[1].wall, .5)
    print(f"steady-state p50 ratio PLEG relist / bare list: {ratio:.2f} "
          f"(goal ≤ 1.5: {'met' if ratio <= 1.5 else 'NOT met'})")
    for direction, (kubelet, bare, bare_inspect) in (changed or {}).items():
        print(f"{args.changed} changed → {direction}, p50 ratio PLEG relist / bare list: "
              f"{percentile(kubelet.wall, .5) / percentile(bare.wall, .5):.2f}; "
              f"/ bare list + inspects: {percentile(kubelet.wall, .5) / percentile(bare_inspect.wall, .5):.2f}")


if __name__ == "__main__":
    sys.exit(main())
