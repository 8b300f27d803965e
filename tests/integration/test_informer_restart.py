"""An informer outlives a kill -9 of the API server: the informer's store converges to exactly
the server's list after a restart, with no lost and no ghost objects.

A real `slimkube server` child process (fixed port and data dir, so the informer's client reconnects to
the same URL) serves configmaps; an informer in this process records every handler call. The server is
killed with SIGKILL, left down for a moment (the informer must not change anything meanwhile), and
restarted; then more objects are created, updated and deleted, including objects from before the kill.
The informer's store and the state rebuilt from its handler calls must both equal the server's list.

Two ways back, both must converge. In both, writes to another namespace first move the store's revision
past the informer's last event, so its resume point is behind the restarted server's newest revision.
- `resume`: the restarted server serves the watch from the store's history; the REST client's watch
  resumes on its own and the informer never relists.
- `relist`: while the server is down, one object is changed and one deleted directly in its SQLite store
  (as another API server of the cluster would), and the history is compacted. The resumed watch gets 410
  Gone; the reflector relists and delivers the difference: the change as an update and the deleted object
  as a delete with the last state the informer saw.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from control.client.informer import SharedInformer
from control.client.rest import RESTClient
from control.storage.factory import open_storage
from tests.support.apiserver import Endpoint, ProcessServer, free_port

NAMESPACE = "informer"
OTHER = "elsewhere"
CONVERGE_SECONDS = 45


def _configmap(name: str, value: str = "v0") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}}


class Recorded:
    """Every handler call, and the state they add up to (name → (uid, resourceVersion))."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, str]] = []
        self.state: dict[str, tuple[str, str]] = {}
        self.deleted: dict[str, tuple[str, str]] = {}  # name → (uid, resourceVersion) handed to on_delete

    @staticmethod
    def _id(obj: dict[str, Any]) -> tuple[str, tuple[str, str]]:
        metadata = obj["metadata"]
        return metadata["name"], (metadata["uid"], metadata["resourceVersion"])

    def on_add(self, obj: dict[str, Any]) -> None:
        name, ident = self._id(obj)
        with self.lock:
            self.calls.append(("add", name))
            self.state[name] = ident

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        name, ident = self._id(new)
        with self.lock:
            self.calls.append(("update", name))
            self.state[name] = ident

    def on_delete(self, obj: dict[str, Any]) -> None:
        name, ident = self._id(obj)
        with self.lock:
            self.calls.append(("delete", name))
            self.deleted[name] = ident
            self.state.pop(name, None)


def _server_state(client: RESTClient) -> dict[str, tuple[str, str]]:
    listed = client.list(f"/api/v1/namespaces/{NAMESPACE}/configmaps")
    return {o["metadata"]["name"]: (o["metadata"]["uid"], o["metadata"]["resourceVersion"])
            for o in listed["items"]}


def _store_state(informer: SharedInformer) -> dict[str, tuple[str, str]]:
    return {o["metadata"]["name"]: (o["metadata"]["uid"], o["metadata"]["resourceVersion"])
            for o in informer.store.list()}


def _converge(informer: SharedInformer, recorded: Recorded, client: RESTClient) -> dict[str, tuple[str, str]]:
    """Wait until the store and the handlers' view both equal the server's list; return it."""
    deadline = time.monotonic() + CONVERGE_SECONDS
    while True:
        expected = _server_state(client)
        with recorded.lock:
            seen = dict(recorded.state)
        store = _store_state(informer)
        if store == expected == seen:
            return expected
        if time.monotonic() > deadline:
            lost = sorted(expected.keys() - store.keys())
            ghosts = sorted(store.keys() - expected.keys())
            stale = sorted(k for k in expected.keys() & store.keys() if expected[k] != store[k])
            pytest.fail(f"no convergence in {CONVERGE_SECONDS}s: lost {lost}, ghosts {ghosts}, stale {stale}; "
                        f"handlers' view differs: {seen != expected}")
        time.sleep(0.1)


class CountingClient:
    """The REST client, counting lists (a list after the first is a relist)."""

    def __init__(self, client: RESTClient) -> None:
        self.client = client
        self.lists = 0

    def list(self, path: str, **kw: Any) -> dict[str, Any]:
        self.lists += 1
        return self.client.list(path, **kw)

    def watch(self, path: str, **kw: Any) -> Any:
        return self.client.watch(path, **kw)


def _path(namespace: str, name: str | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def _update(client: RESTClient, name: str, value: str) -> None:
    current = client.get(_path(NAMESPACE, name))
    current["data"] = {"k": value}
    client.update(_path(NAMESPACE, name), current)


def _change_behind_the_servers_back(data_dir: str) -> None:
    """With the server down: update before-2, delete before-5, compact all history away."""
    storage = open_storage("sqlite://", data_dir=data_dir)
    try:
        key = f"/registry/configmaps/{NAMESPACE}/before-2"
        record = storage.get(key)
        assert record is not None
        obj = json.loads(record.value)
        obj["data"] = {"k": "offline"}
        storage.update(key, json.dumps(obj).encode(), expected_revision=record.mod_revision)
        storage.delete(f"/registry/configmaps/{NAMESPACE}/before-5")
        storage.compact(storage.revision())
    finally:
        storage.close()


@pytest.mark.parametrize("mode", ["resume", "relist"])
def test_informer_converges_after_kill_9_and_restart(
        mode: str, tmp_path: Path, cleanup: Callable[[Callable[[], object]], None]) -> None:
    # Only the test writes configmaps: the publisher's kube-root-ca.crt would be a call the test did not cause.
    server = ProcessServer(str(tmp_path / "server"), port=free_port(), args=("--disable", "root-ca-cert-publisher"))
    cleanup(server.kill)
    api: Endpoint = server.start()
    client = RESTClient.from_kubeconfig(api.kubeconfig)
    cleanup(client.close)
    for namespace in (NAMESPACE, OTHER):
        client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for i in range(6):
        client.create(_path(NAMESPACE), _configmap(f"before-{i}"))

    counting = CountingClient(client)
    informer = SharedInformer(counting, "v1", "configmaps", namespace=NAMESPACE)
    recorded = Recorded()
    informer.add_event_handler(recorded)
    stop = threading.Event()
    cleanup(stop.set)
    informer.start(stop)
    assert informer.wait_for_sync(30), "the informer never synced"

    _update(client, "before-1", "v1")
    _update(client, "before-2", "v1")
    client.delete(_path(NAMESPACE, "before-3"))
    _converge(informer, recorded, client)
    for i in range(3):  # revisions the informer never hears of: its resume point falls behind the store's
        client.create(_path(OTHER), _configmap(f"unseen-{i}"))

    server.kill()
    with recorded.lock:
        calls_at_kill = len(recorded.calls)
    store_at_kill = _store_state(informer)
    time.sleep(1.5)
    with recorded.lock:
        assert len(recorded.calls) == calls_at_kill, "handlers were called while the server was down"
    assert _store_state(informer) == store_at_kill, "the store changed while the server was down"
    if mode == "relist":
        _change_behind_the_servers_back(server.data_dir)

    server.start()  # same port, same data dir: the informer's client reconnects on its own
    _converge(informer, recorded, client)  # relist mode: the offline changes arrive (by relist) first
    for i in range(3):
        client.create(_path(NAMESPACE), _configmap(f"after-{i}"))
    _update(client, "before-0", "v2")
    _update(client, "after-0", "v1")
    for name in ("before-1", "before-4", "after-2"):  # two from before the kill, one from after
        client.delete(_path(NAMESPACE, name))

    final = _converge(informer, recorded, client)
    deleted_while_down = {"before-5"} if mode == "relist" else set()
    assert set(final) == {"after-0", "after-1", "before-0", "before-2", "before-5"} - deleted_while_down
    with recorded.lock:
        deleted = {name for kind, name in recorded.calls if kind == "delete"}
    assert deleted == {"before-1", "before-3", "before-4", "after-2"} | deleted_while_down, recorded.calls
    if mode == "relist":
        assert counting.lists >= 2, "the watch resumed although its history was compacted away"
        assert recorded.deleted["before-5"] == store_at_kill["before-5"]  # the last state it saw
        assert informer.store.get_by_key(f"{NAMESPACE}/before-2")["data"] == {"k": "offline"}
    else:
        assert counting.lists == 1, f"relisted {counting.lists - 1} time(s) although the history was there"
