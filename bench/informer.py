"""How many watch events/s an informer absorbs, against a bare `RESTClient.watch` loop on the same stream
(events/s an informer absorbs against the raw watch stream).

Run: `.venv/bin/python bench/informer.py [--events N]`.

A real `slimkube server` child process (SQLite) serves ConfigMaps over HTTPS. Writes go straight into the
server's SQLite store from this process (the exact bytes an API create stores, as bench/apiserver.py
does), so the writer is never the bottleneck; the server's poller picks them up and streams them.
Two rounds, each with N creates then N updates (2N events):

- replay: the 2N writes are made first; then each consumer, alone, watches from the revision before
  them, so the server streams them as fast as it can. The bare loop only decodes events; the informer
  (listed at that revision: empty) also keeps its store and indices and hands each event to a counting
  handler on its dispatch thread. events/s = 2N ÷ (last handler call − watch start). This is capacity.
  One untimed bare watch first (it pulls the history out of SQLite), then five of each, alternating;
  the best of each is kept.
- live: both consumers run at once (same process, same GIL) while the 2N writes are made; events/s =
  2N ÷ (last event − first write). The informer keeps up when the ratio stays near 1.

The ratio is informer events/s ÷ bare-watch events/s in the same round (1.0 = no informer overhead).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server

from control.client.informer import SharedInformer  # noqa: E402
from control.client.rest import RESTClient, WatchEvent  # noqa: E402
from control.storage.factory import open_storage  # noqa: E402
from control.storage.interface import Storage  # noqa: E402
from tests.support.apiserver import ProcessServer  # noqa: E402

NAMESPACE = "bench"
PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
PREFIX = f"/registry/configmaps/{NAMESPACE}/"
REPEATS = 5


class ListedAt:
    """The REST client, but its list answers "empty, at revision R": the informer starts as if it had
    listed just before the benchmark's writes, and its watch replays them from the server's history."""

    def __init__(self, client: RESTClient, revision: str) -> None:
        self._client = client
        self._revision = revision

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": self._revision},
                "items": []}

    def watch(self, path: str, **kw: Any) -> Iterator[WatchEvent]:
        return self._client.watch(path, **kw)


class Counter:
    """A handler counting every call; `done` is set at the `target`-th, whose time is kept."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.finished = 0.0
        self.done = threading.Event()

    def tick(self, *_: object) -> None:
        self.count += 1
        if self.count == self.target:
            self.finished = time.perf_counter()
            self.done.set()

    on_add = on_update = on_delete = tick


def write(store: Storage, template: bytes, events: int, prefix: str) -> None:
    """events/2 creates, then an update of each, straight into the store."""
    records = [store.create(f"{PREFIX}{prefix}-{i}", template.replace(b'"template"', b'"%s-%d"' % (prefix.encode(), i)))
               for i in range(events // 2)]
    for record in records:
        store.update(record.key, record.value.replace(b'"v0"', b'"v1"'), expected_revision=record.mod_revision)


def bare_watch(client: RESTClient, revision: str, target: int, counter: Counter, stop: threading.Event) -> None:
    for _ in client.watch(PATH, resource_version=revision, timeout_seconds=600, stop=stop):
        counter.tick()
        if counter.count >= target:
            return


def start_informer(client: RESTClient, revision: str, counter: Counter, stop: threading.Event) -> SharedInformer:
    informer = SharedInformer(ListedAt(client, revision), "v1", "configmaps", namespace=NAMESPACE)
    informer.add_event_handler(counter)
    informer.start(stop)
    return informer


def timed(events: int, start: Callable[[Counter, threading.Event], None]) -> float:
    """events/s from `start` until the counter reaches `events`."""
    counter = Counter(events)
    stop = threading.Event()
    began = time.perf_counter()
    start(counter, stop)
    if not counter.done.wait(300):
        raise SystemExit(f"only {counter.count} of {events} events arrived")
    stop.set()
    return events / (counter.finished - began)


def replay_round(raw: RESTClient, inf: RESTClient, store: Storage, template: bytes, events: int) -> tuple[float, float]:
    revision = str(store.revision())
    write(store, template, events, "replay")

    def run_bare(counter: Counter, stop: threading.Event) -> None:
        threading.Thread(target=bare_watch, args=(raw, revision, events, counter, stop), daemon=True).start()

    def run_informer(counter: Counter, stop: threading.Event) -> None:
        start_informer(inf, revision, counter, stop)

    timed(events, run_bare)  # warm-up: the first reader pulls the history from SQLite into the server
    bare_rates, informer_rates = [], []
    for _ in range(REPEATS):  # alternate, keep the best of each
        informer_rates.append(timed(events, run_informer))
        bare_rates.append(timed(events, run_bare))
    return max(informer_rates), max(bare_rates)


def live_round(raw: RESTClient, inf: RESTClient, store: Storage, template: bytes, events: int) -> tuple[float, float]:
    revision = str(store.revision())
    bare, informed = Counter(events), Counter(events)
    stop = threading.Event()
    threading.Thread(target=bare_watch, args=(raw, revision, events, bare, stop), daemon=True).start()
    informer = start_informer(inf, revision, informed, stop)
    if not informer.wait_for_sync(30):
        raise SystemExit("the informer did not sync")
    time.sleep(0.5)  # both watches open
    began = time.perf_counter()
    write(store, template, events, "live")
    for counter in (bare, informed):
        if not counter.done.wait(300):
            raise SystemExit(f"only {counter.count} of {events} events arrived")
    stop.set()
    return events / (informed.finished - began), events / (bare.finished - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000, help="events per round (half creates, half updates)")
    args = parser.parse_args()
    events = args.events - args.events % 2
    print(f"nproc {os.cpu_count()}, Python {platform.python_version()}, {platform.platform()}")
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slimkube-bench-")))
        server = ProcessServer(str(workdir / "server"))
        stack.callback(server.stop)
        api = server.start()
        store = open_storage("sqlite://", data_dir=str(workdir / "server"))  # the server's own store
        stack.callback(store.close)
        raw, inf = RESTClient.from_kubeconfig(api.kubeconfig), RESTClient.from_kubeconfig(api.kubeconfig)
        stack.callback(raw.close)
        stack.callback(inf.close)
        raw.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        raw.create(PATH, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "template"},
                          "data": {"k": "v0"}})
        stored = store.get(PREFIX + "template")
        assert stored is not None
        print(f"\n| {'round':<32} | {'informer /s':>11} | {'bare watch /s':>13} | {'ratio':>5} |")
        print(f"|{'-' * 34}|{'-' * 12}:|{'-' * 14}:|{'-' * 6}:|")
        for name, measure in (("replay", replay_round), ("live", live_round)):
            informer_rate, bare_rate = measure(raw, inf, store, stored.value, events)
            label = f"{name}, {events} events"
            print(f"| {label:<32} | {informer_rate:>11.0f} | {bare_rate:>13.0f} | {informer_rate / bare_rate:>5.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
