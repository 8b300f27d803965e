"""GarbageCollector (control/controllers/garbagecollector/controller.py) running against the fake API server with real
informers and FakeDiscovery: background, foreground (blockOwnerDeletion holds the owner) and orphan
propagation, dangling references (dependent deleted, or only its reference dropped when another owner
remains), an owner recreated under the same name with a new uid, and the legacy orphan default of
ReplicationControllers."""

from __future__ import annotations

import threading

import pytest

from control.client.errors import NotFound
from control.client.informer import InformerFactory
from control.controllers.garbagecollector.controller import GarbageCollector
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_discovery import FakeDiscovery
from tests.support.polling import wait_until

CM = "/api/v1/namespaces/ns/configmaps"


@pytest.fixture
def cluster():
    api = FakeAPIServer()
    stop = threading.Event()
    factory = InformerFactory(api.client("informers"))
    gc = GarbageCollector(api.client("gc"), factory, FakeDiscovery(), workers=2)
    factory.start(stop)
    thread = threading.Thread(target=gc.run, args=(stop,), daemon=True)
    thread.start()
    client = api.client("user")
    client.graph = gc.graph  # the tests wait for the graph to know what they made (informers lag)
    yield api, client
    stop.set()
    thread.join(5)


def owner_ref(owner, *, block=None, api_version="v1", kind="ConfigMap"):
    reference = {"apiVersion": api_version, "kind": kind, "name": owner["metadata"]["name"],
                 "uid": owner["metadata"]["uid"]}
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return reference


def make(client, name, *owners, finalizers=(), path=CM, kind="ConfigMap", api_version="v1", wait=True):
    """Create the object and (`wait`) wait until the collector's graph holds it, as it would long before a
    user deletes its owner."""
    metadata = {"name": name, "ownerReferences": list(owners)}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    made = client.create(path, {"apiVersion": api_version, "kind": kind, "metadata": metadata})
    assert not wait or wait_until(lambda: client.graph.node(made["metadata"]["uid"]))
    return made


def exists(client, name, path=CM):
    try:
        return client.get(f"{path}/{name}")
    except NotFound:
        return None


def test_background_deletes_dependents_after_the_owner(cluster):
    api, client = cluster
    owner = make(client, "owner")
    make(client, "dep1", owner_ref(owner))
    make(client, "dep2", owner_ref(owner))
    make(client, "bystander")
    client.delete(f"{CM}/owner", propagation_policy="Background")
    assert wait_until(lambda: not exists(client, "dep1") and not exists(client, "dep2"))
    assert exists(client, "bystander")
    deletes = {a.path: a.params for a in api.actions_of("gc", "delete")}
    assert deletes[f"{CM}/dep1"]["propagation_policy"] == "Background"
    assert deletes[f"{CM}/dep1"]["preconditions"]["uid"]


def test_foreground_keeps_the_owner_until_blocking_dependents_are_gone(cluster):
    api, client = cluster
    owner = make(client, "owner")
    make(client, "blocking", owner_ref(owner, block=True), finalizers=["example.com/hold"])
    make(client, "free", owner_ref(owner))
    client.delete(f"{CM}/owner", propagation_policy="Foreground")
    assert wait_until(lambda: not exists(client, "free"))
    held = wait_until(lambda: exists(client, "blocking") and exists(client, "blocking")["metadata"].get(
        "deletionTimestamp") and exists(client, "blocking"))
    assert held["metadata"]["finalizers"] == ["example.com/hold"]
    still = exists(client, "owner")
    assert still["metadata"]["deletionTimestamp"] and still["metadata"]["finalizers"] == ["foregroundDeletion"]
    client.patch(f"{CM}/blocking", {"metadata": {"finalizers": None}})
    assert wait_until(lambda: not exists(client, "owner") and not exists(client, "blocking"))


def test_orphan_removes_references_then_the_finalizer(cluster):
    api, client = cluster
    owner = make(client, "owner")
    other = make(client, "other")
    make(client, "dep", owner_ref(owner), owner_ref(other))
    make(client, "only", owner_ref(owner))
    client.delete(f"{CM}/owner", propagation_policy="Orphan")
    assert wait_until(lambda: not exists(client, "owner"))
    assert [r["name"] for r in exists(client, "dep")["metadata"]["ownerReferences"]] == ["other"]
    assert not exists(client, "only")["metadata"].get("ownerReferences")
    patches = [a for a in api.actions_of("gc", "patch") if a.path == f"{CM}/dep"]
    assert patches[0].body["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": owner["metadata"]["uid"]}]


def test_dangling_reference_deletes_or_is_dropped(cluster):
    api, client = cluster
    alive = make(client, "alive")
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
    make(client, "lonely", ghost, wait=False)
    make(client, "shared", ghost, owner_ref(alive))
    assert wait_until(lambda: not exists(client, "lonely"))
    assert wait_until(lambda: [r["name"] for r in exists(client, "shared")["metadata"]["ownerReferences"]] == ["alive"])


def test_owner_recreated_with_a_new_uid_is_dangling(cluster):
    api, client = cluster
    owner = make(client, "owner")
    client.delete(f"{CM}/owner")
    make(client, "owner")  # same name, new uid
    make(client, "dep", owner_ref(owner), wait=False)
    assert wait_until(lambda: not exists(client, "dep"))
    assert exists(client, "owner")


def test_replication_controller_orphans_by_default_and_pods_go_with_background(cluster):
    api, client = cluster
    rcs, pods = "/api/v1/namespaces/ns/replicationcontrollers", "/api/v1/namespaces/ns/pods"
    rc = make(client, "rc", path=rcs, kind="ReplicationController")
    make(client, "kept", owner_ref(rc, kind="ReplicationController"), path=pods, kind="Pod")
    client.delete(f"{rcs}/rc")  # no propagationPolicy: v1 RCs orphan (upstream's legacy default)
    assert wait_until(lambda: not exists(client, "rc", rcs))
    assert not exists(client, "kept", pods)["metadata"].get("ownerReferences")
    rc = make(client, "rc2", path=rcs, kind="ReplicationController")
    make(client, "goes", owner_ref(rc, kind="ReplicationController"), path=pods, kind="Pod")
    client.delete(f"{rcs}/rc2", propagation_policy="Background")
    assert wait_until(lambda: not exists(client, "goes", pods))
