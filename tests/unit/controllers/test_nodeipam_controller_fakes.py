"""The node IPAM controller's sync against the fake API server: a stale lister (an event of the Node queued
before our own patch reached the informer) must not release the CIDR the Node now holds."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from control.client.errors import Conflict
from control.client.informer import InformerFactory
from control.controllers.nodeipam.controller import NodeIPAMController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock


def node(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}, "spec": {}}


class FrozenLister:
    """A lister that still returns the objects it was given (the informer has not caught up)."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get(name)


@pytest.fixture
def controller():
    clock = FakeClock()
    api = FakeAPIServer(clock=clock)
    stop = threading.Event()
    factory = InformerFactory(api.client("informers"))
    ipam = NodeIPAMController(api.client("nodeipam"), factory, cluster_cidr="10.244.0.0/22", clock=clock)
    factory.start(stop)
    assert factory.wait_for_sync(5)
    yield api, ipam
    stop.set()


def cidr_of(api: FakeAPIServer, name: str) -> str:
    return api.client("x").get(f"/api/v1/nodes/{name}")["spec"].get("podCIDR", "")


def test_a_stale_event_after_our_patch_keeps_the_cidr_taken(controller) -> None:
    api, ipam = controller
    before_patch = api.add(node("a", "uid-a"))
    ipam.nodes = FrozenLister({"a": before_patch})  # type: ignore[assignment]
    ipam.sync("a")
    assert cidr_of(api, "a") == "10.244.0.0/24"
    ipam.sync("a")  # the Node's older event again (the lister has not seen the patch): nothing released
    assert cidr_of(api, "a") == "10.244.0.0/24"
    api.add(node("b", "uid-b"))
    ipam.nodes = FrozenLister({"b": api.client("x").get("/api/v1/nodes/b")})  # type: ignore[assignment]
    ipam.sync("b")
    assert cidr_of(api, "b") == "10.244.1.0/24"  # .0 still belongs to a


def test_a_node_recreated_under_its_name_gets_a_cidr_again(controller) -> None:
    api, ipam = controller
    first = api.add(node("a", "uid-1"))
    ipam.nodes = FrozenLister({"a": first})  # type: ignore[assignment]
    ipam.sync("a")
    assert cidr_of(api, "a") == "10.244.0.0/24"
    api.client("x").delete("/api/v1/nodes/a")
    second = api.add(node("a", "uid-2"))  # deleted and made again before the controller saw the deletion
    ipam.nodes = FrozenLister({"a": second})  # type: ignore[assignment]
    ipam.sync("a")
    assert cidr_of(api, "a") != ""
    assert ipam.cidrs.allocated == 1  # the first Node's CIDR went back to the pool


def test_a_conflicted_patch_is_retried_with_the_same_cidr(controller) -> None:
    api, ipam = controller
    ipam.nodes = FrozenLister({"a": api.add(node("a", "uid-a"))})  # type: ignore[assignment]
    api.fail_next(Conflict(409, "Conflict", "the object has been modified"), verb="patch", client="nodeipam")
    with pytest.raises(Conflict):
        ipam.sync("a")
    ipam.nodes = FrozenLister({"a": api.client("x").get("/api/v1/nodes/a")})  # type: ignore[assignment]
    ipam.sync("a")  # the queue's retry
    assert cidr_of(api, "a") == "10.244.0.0/24"  # not .1: a retry does not walk the range
    assert ipam.cidrs.allocated == 1
