"""A real `slimkube server` process dies and comes back: kill -9 in the middle
of a burst of creates, then restart: every create that got a 201 is there, revisions keep increasing).

A 201 is a promise: the object is in the store and will be there after any crash. A create that was in
flight when the process died may or may not have landed (the client never heard), so the store may hold
more than was acknowledged, never less. Both backends are checked, since durability is theirs: SQLite
with `synchronous=FULL`, etcd with its own WAL. The server runs as a child process killed by PID, never
in this process, so kill -9 is a real crash with nothing flushed on the way out.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import yaml

from tests.conftest import unavailable
from tests.support.apiserver import Endpoint, ProcessServer
from tests.support.etcd import etcd_binary, running_etcd
from tests.support.polling import wait_for

NAMESPACE = "crash"
WRITERS = 4  # concurrent creating clients, each alternating ConfigMaps and Pods
BURST_SECONDS = 1.5  # how long the burst runs before kill -9


@pytest.fixture(params=["sqlite", "etcd"])
def datastore(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The `--datastore` URL of a fresh backend: SQLite in the server's data dir, or an etcd of this
    test's own (it must outlive the server's crash, as a real external etcd would)."""
    if request.param == "sqlite":
        yield "sqlite://"
        return
    binary = etcd_binary()
    if binary is None:
        unavailable("etcd", "not installed (run ./install.sh or apt-get install etcd-server)")
    workdir = tmp_path / "etcd"
    workdir.mkdir()
    with running_etcd(workdir, binary) as (endpoint, _):
        yield "etcd://" + endpoint.removeprefix("http://")


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


@dataclass
class Acknowledged:
    """What the server promised: (resource, name) → (uid, resourceVersion) of every 201, and any
    answer that was neither a 201 nor a dropped connection (there must be none)."""

    objects: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _writer(api: Endpoint, index: int, acked: Acknowledged) -> None:
    """Create as fast as one client can until the server stops answering (it was killed)."""
    client = Endpoint(api.url, api.token, api.kubeconfig, api.ca)  # a session per thread
    for i in range(100_000):
        resource, body = ("pods", _pod(f"p-{index}-{i}")) if i % 2 else ("configmaps", _configmap(f"c-{index}-{i}"))
        try:
            response = client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/{resource}", json=body, timeout=10)
        except requests.RequestException:
            return  # the server died under us: this create may or may not have landed
        with acked.lock:
            if response.status_code == 201:
                metadata = response.json()["metadata"]
                acked.objects[resource, metadata["name"]] = (metadata["uid"], int(metadata["resourceVersion"]))
            else:
                acked.unexpected.append(f"{response.status_code} {response.text[:200]}")
                return


def _listed(api: Endpoint, resource: str) -> dict[str, dict]:
    response = api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/{resource}")
    assert response.status_code == 200, response.text
    return {item["metadata"]["name"]: item for item in response.json()["items"]}


def _secrets(data_dir: str) -> tuple[str, str, str]:
    """(admin-token, node-token, the token in admin.kubeconfig) as on disk."""
    def read(name: str) -> str:
        with open(os.path.join(data_dir, name), encoding="utf-8") as handle:
            return handle.read()

    config = yaml.safe_load(read("admin.kubeconfig"))
    return read("admin-token").strip(), read("node-token").strip(), config["users"][0]["user"]["token"]


def test_kill_9_during_a_burst_of_creates_loses_no_acknowledged_write(
        datastore: str, tmp_path: Path, cleanup: Callable[[Callable[[], object]], None]) -> None:
    # No scheduler: it would bind the burst's pods and so change the resourceVersions this test compares.
    server = ProcessServer(str(tmp_path / "server"), datastore=datastore, args=("--disable", "scheduler"))
    cleanup(server.kill)  # whichever process is current at teardown
    api = server.start()
    assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).status_code == 201
    # pods need the namespace's `default` ServiceAccount (ServiceAccount admission), which the controller
    # manager makes: wait for it as upstream's e2e framework does, so the burst measures creates only
    wait_for(lambda: api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default").status_code == 200,
             30, "the namespace's default ServiceAccount")

    acked = Acknowledged()
    writers = [threading.Thread(target=_writer, args=(api, n, acked), daemon=True) for n in range(WRITERS)]
    for thread in writers:
        thread.start()
    time.sleep(BURST_SECONDS)
    server.kill()
    for thread in writers:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in writers)
    assert not acked.unexpected, acked.unexpected
    assert len(acked.objects) > 20, f"the burst barely ran ({len(acked.objects)} creates); server log:\n{server.log()}"

    api = server.start()  # same data dir, same port
    for resource in ("configmaps", "pods"):
        promised = {name: ack for (kind, name), ack in acked.objects.items() if kind == resource}
        stored = _listed(api, resource)
        assert len(stored) >= len(promised)
        missing = sorted(set(promised) - set(stored))
        assert not missing, f"{len(missing)} acknowledged {resource} lost after kill -9: {missing[:10]}"
        for name, (uid, rv) in promised.items():
            metadata = stored[name]["metadata"]
            assert (metadata["uid"], int(metadata["resourceVersion"])) == (uid, rv), name

    highest = max(rv for _, rv in acked.objects.values())
    after = api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", json=_configmap("after-restart"))
    assert after.status_code == 201, after.text
    assert int(after.json()["metadata"]["resourceVersion"]) > highest

    # A client that saw the highest acknowledged revision resumes its watch there: it gets what came
    # after (at least the new write), in order, or 410 Gone and relists; never another error or a gap.
    # Today it is 410: the watch cache restarts at the store's revision, as upstream's cacher does.
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion={highest}&timeoutSeconds=10"
    with api.request("GET", path, stream=True, timeout=15) as response:
        assert response.status_code in (200, 410), response.text
        revisions: list[int] = []
        for line in response.iter_lines() if response.status_code == 200 else ():
            if not line:
                continue
            event = json.loads(line)
            if event["type"] == "ERROR":
                assert event["object"]["code"] == 410 and not revisions, event
                break
            assert event["type"] == "ADDED", event
            revisions.append(int(event["object"]["metadata"]["resourceVersion"]))
            if event["object"]["metadata"]["name"] == "after-restart":
                assert revisions == sorted(revisions) and revisions[0] > highest, revisions
                break
        else:
            assert response.status_code == 410, f"the watch from {highest} ended without the new write"

    # The relisting client then watches from the list's revision and sees the next write.
    listed = api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?limit=1").json()
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion={listed['metadata']['resourceVersion']}"
    with api.request("GET", path, stream=True, timeout=15) as response:
        assert response.status_code == 200, response.text
        assert api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps",
                           json=_configmap("after-watch")).status_code == 201
        event = json.loads(next(line for line in response.iter_lines() if line))
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after-watch"), event


def test_sigterm_stops_cleanly_and_a_restart_serves_the_same_data_and_tokens(
        datastore: str, tmp_path: Path, cleanup: Callable[[Callable[[], object]], None]) -> None:
    data_dir = str(tmp_path / "server")
    server = ProcessServer(data_dir, datastore=datastore)
    cleanup(server.kill)
    api = server.start()
    created = api.request("POST", "/api/v1/namespaces/default/configmaps", json=_configmap("kept"))
    assert created.status_code == 201, created.text
    tokens = _secrets(data_dir)
    assert tokens[0] == tokens[2] == api.token and tokens[1] != tokens[0]

    server.stop()
    assert server.process is not None
    assert server.process.returncode == 0, f"exit {server.process.returncode} on SIGTERM:\n{server.log()}"
    assert "Traceback" not in server.log(), server.log()

    api = server.start()
    assert _secrets(data_dir) == tokens  # clients and agents configured before the restart still work
    again = api.request("GET", "/api/v1/namespaces/default/configmaps/kept")
    assert again.status_code == 200, again.text
    assert again.json()["metadata"]["uid"] == created.json()["metadata"]["uid"]
    assert again.json()["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]
