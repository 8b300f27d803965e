"""NamespaceController (control/controllers/namespace/controller.py) against the fake API server and FakeDiscovery:
a deleted namespace gets Terminating, its content deleted (deletecollection), the conditions, and is
finalized; pods on a node keep it for their grace estimate; a discovery failure is a condition and an
error. Workers are not run: the test syncs the key itself."""

from __future__ import annotations

import threading

import pytest

from control.apimachinery.meta import get_condition
from control.client.informer import InformerFactory
from control.controllers.namespace.controller import NamespaceController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.fake_discovery import FakeDiscovery
from tests.support.polling import wait_until


@pytest.fixture
def harness():
    clock = FakeClock()
    api = FakeAPIServer(clock=clock)
    stop = threading.Event()
    yield api, clock, stop
    stop.set()


def start(api, clock, stop, discovery=None):
    factory = InformerFactory(api.client("informers"))
    controller = NamespaceController(api.client("namespace-controller"), factory, discovery or FakeDiscovery(),
                                     clock=clock)
    factory.start(stop)
    assert factory.wait_for_sync(5)
    return controller, factory


def fill(api, ns="t", *, node=None):
    api.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": "ns-uid"},
             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}})
    api.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns}})
    api.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": ns}})
    spec = {"terminationGracePeriodSeconds": 30, **({"nodeName": node} if node else {})}
    api.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": spec,
             "status": {"phase": "Running"}})
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "keep"}})


def delete_namespace(api, factory, ns="t"):
    api.client("user").delete(f"/api/v1/namespaces/{ns}")
    assert wait_until(lambda: factory.informer("v1", "namespaces").lister().get(None, ns)["metadata"].get(
        "deletionTimestamp"), interval=0.005)


def test_deleted_namespace_is_emptied_and_finalized(harness):
    api, clock, stop = harness
    fill(api)
    controller, factory = start(api, clock, stop)
    controller.sync("t")  # not being deleted: nothing happens
    assert api.client("x").get("/api/v1/namespaces/t")["status"]["phase"] == "Active"
    delete_namespace(api, factory)
    controller.sync("t")
    client = api.client("x")
    # the running pod's 30 s grace, estimated before it was deleted, holds the namespace (as upstream)
    held = client.get("/api/v1/namespaces/t")
    assert held["spec"]["finalizers"] == ["kubernetes"]
    assert get_condition(held, "NamespaceContentRemaining")["status"] == "False"
    clock.step(30)
    controller.sync("t")
    with pytest.raises(Exception, match="not found"):
        client.get("/api/v1/namespaces/t")
    for path in ("/api/v1/namespaces/t/configmaps", "/api/v1/namespaces/t/secrets", "/api/v1/namespaces/t/pods",
                 "/apis/apps/v1/namespaces/t/deployments"):
        assert client.list(path)["items"] == []
    assert [o["metadata"]["name"] for o in client.list("/api/v1/namespaces/keep/configmaps")["items"]] == ["other"]
    deletes = [a for a in api.actions_of("namespace-controller", "delete")]
    assert "/api/v1/namespaces/t/configmaps" in [a.path for a in deletes]
    assert {a.params["propagation_policy"] for a in deletes} == {"Background"}
    finalize = api.actions_of("namespace-controller", "update")[-1]
    assert finalize.path == "/api/v1/namespaces/t/finalize" and finalize.body["spec"]["finalizers"] == []


def test_pods_on_a_node_hold_the_namespace_for_their_grace(harness):
    api, clock, stop = harness
    fill(api, node="n1")
    controller, factory = start(api, clock, stop)
    delete_namespace(api, factory)
    controller.sync("t")
    client = api.client("x")
    namespace = client.get("/api/v1/namespaces/t")
    assert namespace["status"]["phase"] == "Terminating" and namespace["spec"]["finalizers"] == ["kubernetes"]
    remaining = get_condition(namespace, "NamespaceContentRemaining")
    assert (remaining["status"], remaining["reason"], remaining["message"]) == (
        "True", "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances")
    assert get_condition(namespace, "NamespaceDeletionContentFailure")["status"] == "False"
    assert client.list("/api/v1/namespaces/t/configmaps")["items"] == []
    assert len(controller.queue) == 0  # requeued after 30/2+1 = 16 s, not at once
    client.delete("/api/v1/namespaces/t/pods/p", grace_period_seconds=0)  # the kubelet confirms
    clock.step(30)
    controller.sync("t")
    with pytest.raises(Exception, match="not found"):
        client.get("/api/v1/namespaces/t")


def test_discovery_failure_is_a_condition_and_a_retry(harness):
    api, clock, stop = harness
    fill(api)
    controller, factory = start(api, clock, stop, FakeDiscovery(failed={"apps/v1": "503 unavailable"}))
    delete_namespace(api, factory)
    with pytest.raises(RuntimeError, match="unable to retrieve the complete list of server APIs"):
        controller.sync("t")
    namespace = api.client("x").get("/api/v1/namespaces/t")
    failure = get_condition(namespace, "NamespaceDeletionDiscoveryFailure")
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True", "DiscoveryFailed", "unable to retrieve the complete list of server APIs: apps/v1: 503 unavailable")
    assert namespace["spec"]["finalizers"] == ["kubernetes"]
    assert api.client("x").list("/apis/apps/v1/namespaces/t/deployments")["items"]  # not discovered, not deleted
    assert api.client("x").list("/api/v1/namespaces/t/configmaps")["items"] == []
