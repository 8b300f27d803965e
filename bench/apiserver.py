"""How much the API server costs on top of its storage backend (issue: "creates/s, LIST of 10,000 pods,
watch latency with 100 watchers, each against the backend alone").

Run: `.venv/bin/python bench/apiserver.py [--backend sqlite|etcd|all] [--pods N] [--creates N]`.

Each operation is timed twice in the same run, on the same machine and the same store: once through a
real `slimkube server` process over HTTPS, once by calling `Storage` directly from this process. The
ratio (API cost ×: how many times slower the API path is) is the figure; absolute numbers move with the
machine. The server runs as a child process so its event loop does not share a GIL with the clients.

- create: `--clients` threads with keep-alive sessions POST pods; the same number of threads call
  `storage.create` with the exact bytes the server stored for a pod.
- LIST: one GET /api/v1/pods of `--pods` pods (body received, then JSON-decoded) against one
  `storage.list("/registry/pods/")` of the same records (then each value JSON-decoded). The pods are
  written through storage directly to save setup time (the same bytes an API create stores).
- watch: `--watchers` streams from one revision; `--updates` pod updates at a steady rate; the latency
  of each (update, watcher) pair is from the update being sent to the watcher decoding the event. Not
  from the update's response: etcd sends watch events apart from the write's reply, so an event often
  beats the writer's own response and that latency would go negative.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server and etcd

from control.storage.factory import open_storage  # noqa: E402
from control.storage.interface import Storage  # noqa: E402
from slimkube.controlplane import known_components  # noqa: E402
from tests.support.apiserver import Endpoint, ProcessServer  # noqa: E402
from tests.support.etcd import etcd_binary, running_etcd  # noqa: E402

NAMESPACE = "bench"
PODS_PREFIX = "/registry/pods/"
BENCH_PREFIX = f"{PODS_PREFIX}{NAMESPACE}/"
UPDATE_RATE = 50.0  # pod updates per second during the watch measure


@dataclass(frozen=True)
class Row:
    """One line of the table: the same operation through the API and on the store."""

    operation: str
    api: float
    storage: float
    higher_is_better: bool  # rates: API cost = storage / api; times: api / storage

    @property
    def ratio(self) -> float:
        return self.storage / self.api if self.higher_is_better else self.api / self.storage


def pod(name: str) -> dict:
    """A minimal pod; its `seq` label is what watch updates change ("none" yet, so update 0 is a
    real change and not a no-op the server would not write)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"seq": "none"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def client(api: Endpoint) -> Endpoint:
    """An Endpoint with its own keep-alive session: requests.Session is not shared across threads."""
    return Endpoint(api.url, api.token, api.kubeconfig, api.ca)


def in_parallel(threads: int, count: int, work: Callable[[int], None]) -> float:
    """Seconds for `threads` workers to run `work(i)` for i in range(count), split evenly."""
    def run(start: int) -> None:
        for i in range(start, count, threads):
            work(i)

    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(run, t) for t in range(threads)]:
            future.result()
    return time.perf_counter() - began


def measure_list(api: Endpoint, store: Storage, pods: int) -> list[Row]:
    """Best of 3 full LISTs each way, raw (bytes received / records read) and JSON-decoded."""
    api_raw, api_decoded, store_raw, store_decoded = [], [], [], []
    for _ in range(3):
        began = time.perf_counter()
        response = api.request("GET", "/api/v1/pods", timeout=120)
        received = time.perf_counter()
        items = json.loads(response.content)["items"]
        api_raw.append(received - began)
        api_decoded.append(time.perf_counter() - began)
        assert response.status_code == 200 and len(items) == pods, (response.status_code, len(items))

        began = time.perf_counter()
        records = store.list(PODS_PREFIX).records
        read = time.perf_counter()
        decoded = [json.loads(record.value) for record in records]
        store_raw.append(read - began)
        store_decoded.append(time.perf_counter() - began)
        assert len(decoded) == pods
    return [Row(f"LIST {pods} pods, ms (raw)", min(api_raw) * 1000, min(store_raw) * 1000, False),
            Row(f"LIST {pods} pods, ms (JSON-decoded)", min(api_decoded) * 1000, min(store_decoded) * 1000, False)]


def measure_creates(api: Endpoint, store: Storage, template: bytes, count: int, clients: int) -> Row:
    sessions = [client(api) for _ in range(clients)]

    def through_api(i: int) -> None:
        response = sessions[i % clients].request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods",
                                                 json=pod(f"api-{i}"))
        assert response.status_code == 201, response.text

    def direct(i: int) -> None:
        store.create(f"{BENCH_PREFIX}direct-{i}", template.replace(b'"template"', b'"direct-%d"' % i))

    api_seconds = in_parallel(clients, count, through_api)
    store_seconds = in_parallel(clients, count, direct)
    return Row(f"create pod, {clients} clients, /s", count / api_seconds, count / store_seconds, True)


class Latencies:
    """Per (update, watcher): seconds from the update being sent to the watcher decoding its event."""

    def __init__(self, updates: int) -> None:
        self.sent = [0.0] * updates  # when update i was sent
        self.seen: list[tuple[int, float]] = []  # (update, when a watcher decoded it)
        self.lock = threading.Lock()
        self.ready = threading.Semaphore(0)

    def record(self, seen: list[tuple[int, float]]) -> None:
        with self.lock:
            self.seen.extend(seen)

    def percentiles(self, expected: int) -> tuple[float, float]:
        assert len(self.seen) == expected, f"{expected - len(self.seen)} events never reached their watcher"
        values = [when - self.sent[seq] for seq, when in self.seen]
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        return cuts[49], cuts[98]


def steady_writes(updates: int, latencies: Latencies, write: Callable[[int], None]) -> None:
    """`write(i)` for each update at UPDATE_RATE, noting when each was sent."""
    began = time.perf_counter()
    for i in range(updates):
        delay = began + i / UPDATE_RATE - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        latencies.sent[i] = time.perf_counter()
        write(i)


def api_watcher(api: Endpoint, revision: int, updates: int, latencies: Latencies) -> None:
    seen = []
    path = f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&resourceVersion={revision}&timeoutSeconds=120"
    with client(api).request("GET", path, stream=True, timeout=60) as response:
        assert response.status_code == 200, response.text
        latencies.ready.release()
        for line in response.iter_lines():
            event = json.loads(line)
            if event["object"]["metadata"]["name"] != "template":
                continue  # another bench pod (a late write of the create round)
            seq = int(event["object"]["metadata"]["labels"]["seq"])
            seen.append((seq, time.perf_counter()))
            if seq == updates - 1:
                break
    latencies.record(seen)


def store_watcher(store: Storage, revision: int, updates: int, latencies: Latencies) -> None:
    seen = []
    watch = store.watch(BENCH_PREFIX, after=revision)
    latencies.ready.release()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for event in watch.next(timeout=1):
                if not event.key.endswith("/template"):
                    continue
                seq = int(json.loads(event.value)["metadata"]["labels"]["seq"])
                seen.append((seq, time.perf_counter()))
                if seq == updates - 1:
                    latencies.record(seen)
                    return
    finally:
        watch.close()
    latencies.record(seen)


def watch_round(watchers: int, updates: int, start: Callable[[Latencies], Callable[[], None]],
                write: Callable[[int], None]) -> tuple[float, float]:
    """p50, p99 of one round: start the watchers, wait until all are open, write, collect."""
    latencies = Latencies(updates)
    watcher = start(latencies)
    threads = [threading.Thread(target=watcher, daemon=True) for _ in range(watchers)]
    for thread in threads:
        thread.start()
    for _ in range(watchers):
        if not latencies.ready.acquire(timeout=60):
            raise RuntimeError("watchers did not open within 60 s")
    time.sleep(0.5)  # the last stream's subscription lands on the server after its headers
    steady_writes(updates, latencies, write)
    for thread in threads:
        thread.join(timeout=120)
    return latencies.percentiles(watchers * updates)


def measure_watch(api: Endpoint, store: Storage, watchers: int, updates: int) -> list[Row]:
    writer = client(api)
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/template"
    current = writer.request("GET", path).json()

    def api_write(i: int) -> None:
        current["metadata"]["labels"]["seq"] = str(i)
        response = writer.request("PUT", path, json=current)
        assert response.status_code == 200, response.text
        current["metadata"]["resourceVersion"] = response.json()["metadata"]["resourceVersion"]

    revision = int(writer.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1").json()
                   ["metadata"]["resourceVersion"])  # now, as the server's watch cache sees it
    api_p50, api_p99 = watch_round(
        watchers, updates, lambda lat: lambda: api_watcher(api, revision, updates, lat), api_write)

    record = store.get(BENCH_PREFIX + "template")
    assert record is not None
    obj, expected = json.loads(record.value), record.mod_revision

    def store_write(i: int) -> None:
        nonlocal expected
        obj["metadata"]["labels"]["seq"] = str(i)
        expected = store.update(BENCH_PREFIX + "template", json.dumps(obj, separators=(",", ":")).encode(),
                                expected_revision=expected).mod_revision

    now = store.revision()
    store_p50, store_p99 = watch_round(
        watchers, updates, lambda lat: lambda: store_watcher(store, now, updates, lat), store_write)
    label = f"watch latency, {watchers} watchers, ms"
    return [Row(f"{label} p50", api_p50 * 1000, store_p50 * 1000, False),
            Row(f"{label} p99", api_p99 * 1000, store_p99 * 1000, False)]


@contextmanager
def datastore(backend: str, workdir: Path) -> Iterator[str]:
    """The server's --datastore URL: SQLite in its data dir, or a throwaway etcd stopped on the way out."""
    if backend == "sqlite":
        yield "sqlite://"
        return
    binary = etcd_binary()
    if binary is None:
        raise SystemExit("etcd is not installed (run ./install.sh or apt-get install etcd-server)")
    (workdir / "etcd").mkdir()
    with running_etcd(workdir / "etcd", binary) as (endpoint, _):
        yield "etcd://" + endpoint.removeprefix("http://")


def bench_backend(backend: str, args: argparse.Namespace) -> list[Row]:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slimkube-bench-")))
        url = stack.enter_context(datastore(backend, workdir))
        # The API server alone: with the scheduler and the controllers in its process, every pending
        # bench pod would be answered with a status write and an event that the store side never pays.
        server = ProcessServer(str(workdir / "server"), datastore=url,
                               args=("--disable", ",".join(known_components())))
        stack.callback(server.stop)
        api = server.start()
        store = open_storage(url, data_dir=str(workdir / "server"))  # the server's own store
        stack.callback(store.close)

        assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).status_code == 201
        created = api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", json=pod("template"))
        assert created.status_code == 201, created.text
        stored = store.get(BENCH_PREFIX + "template")
        assert stored is not None
        template = stored.value

        began = time.perf_counter()
        in_parallel(args.clients, args.pods - 1, lambda i: store.create(
            f"{BENCH_PREFIX}list-{i}", template.replace(b'"template"', b'"list-%d"' % i)))
        print(f"[{backend}] setup: {args.pods - 1} pods written through storage directly "
              f"in {time.perf_counter() - began:.1f} s", flush=True)

        rows = measure_list(api, store, args.pods)
        rows.append(measure_creates(api, store, template, args.creates, args.clients))
        rows.extend(measure_watch(api, store, args.watchers, args.updates))
        return rows


def print_table(backend: str, rows: list[Row]) -> None:
    print(f"\n{backend}:")
    print(f"| {'operation':<40} | {'api':>10} | {'storage':>10} | {'ratio (API cost ×)':>18} |")
    print(f"|{'-' * 42}|{'-' * 12}:|{'-' * 12}:|{'-' * 19}:|")
    for row in rows:
        print(f"| {row.operation:<40} | {row.api:>10.1f} | {row.storage:>10.1f} | {row.ratio:>18.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "etcd", "all"], default="all")
    parser.add_argument("--pods", type=int, default=10_000, help="pods in the LIST measure")
    parser.add_argument("--creates", type=int, default=2000, help="pods created each way")
    parser.add_argument("--clients", type=int, default=4, help="concurrent creating clients")
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--updates", type=int, default=200, help=f"pod updates watched ({UPDATE_RATE:.0f}/s)")
    args = parser.parse_args()
    print(f"nproc {os.cpu_count()}, Python {platform.python_version()}, {platform.platform()}")
    for backend in ("sqlite", "etcd") if args.backend == "all" else (args.backend,):
        began = time.perf_counter()
        rows = bench_backend(backend, args)
        print_table(backend, rows)
        print(f"({backend}: {time.perf_counter() - began:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
