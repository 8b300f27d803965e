"""Shared informers (control/client/informer.py) on a scripted list/watch client: handlers in order, late
handlers replayed the cache, a slow or failing handler never blocks the watch, sync, the factory."""

from __future__ import annotations

import threading
from typing import Any

from control.client.informer import InformerFactory, SharedInformer
from tests.support.fake_listwatch import FakeClient, event, listing, obj
from tests.support.polling import wait_until


def name(o: dict[str, Any]) -> str:
    return o["metadata"]["name"]


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_add(self, o: dict[str, Any]) -> None:
        self.events.append(("add", name(o), o["metadata"]["resourceVersion"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", name(new), new["metadata"]["resourceVersion"]))

    def on_delete(self, o: dict[str, Any]) -> None:
        self.events.append(("delete", name(o), o["metadata"]["resourceVersion"]))


def make(lists: list, watches: list) -> tuple[FakeClient, SharedInformer]:
    client = FakeClient(lists=lists, watches=watches)
    return client, SharedInformer(client, "v1", "configmaps", namespace="ns", label_selector="app=x")


def test_handlers_see_changes_in_order_after_the_store() -> None:
    client, informer = make([listing("10", obj("a", "1"))],
                            [[event("ADDED", obj("b", "11")), event("MODIFIED", obj("a", "12")),
                              event("DELETED", obj("b", "13"))]])
    seen_in_store: list[bool] = []
    log = Log()
    informer.add_event_handler(log)
    informer.add_event_handler(on_add=lambda o: seen_in_store.append(informer.store.get(o) is not None))
    stop = threading.Event()
    informer.start(stop)
    try:
        assert informer.wait_for_sync(5)
        assert client.idle.wait(5)
        assert wait_until(lambda: len(log.events) == 4, interval=0.005)
    finally:
        stop.set()
    assert log.events == [("add", "a", "1"), ("add", "b", "11"), ("update", "a", "12"), ("delete", "b", "13")]
    assert seen_in_store[0] is True  # the store is updated before the handlers hear of it
    assert client.list_calls[0] == {"labelSelector": "app=x", "limit": "500"}
    assert informer.path == "/api/v1/namespaces/ns/configmaps"
    assert informer.last_sync_resource_version == "13"


def test_late_handler_gets_the_cache_as_adds_then_only_new_changes() -> None:
    client, informer = make([listing("10", obj("a", "1"), obj("b", "2"))],
                            [[event("MODIFIED", obj("a", "11"))]])
    first = Log()
    informer.add_event_handler(first)
    stop = threading.Event()
    informer.start(stop)
    try:
        assert client.idle.wait(5) and informer.wait_for_sync(5)
        late = Log()
        informer.add_event_handler(late)
        assert wait_until(lambda: len(late.events) == 2, interval=0.005)
    finally:
        stop.set()
    assert sorted(late.events) == [("add", "a", "11"), ("add", "b", "2")]
    assert first.events == [("add", "a", "1"), ("add", "b", "2"), ("update", "a", "11")]


def test_a_slow_handler_does_not_block_the_watch() -> None:
    gate = threading.Event()
    watch = [event("ADDED", obj(f"o{i}", str(100 + i))) for i in range(50)]
    client, informer = make([listing("10")], [watch])
    log = Log()
    informer.add_event_handler(on_add=lambda o: gate.wait(10))  # stuck until the gate opens
    informer.add_event_handler(log)
    stop = threading.Event()
    informer.start(stop)
    try:
        assert client.idle.wait(5), "the watch was blocked by the handler"
        assert len(informer.store) == 50  # the cache is current although no handler has run
        assert log.events == []
        gate.set()
        assert wait_until(lambda: len(log.events) == 50, interval=0.005)
    finally:
        gate.set()
        stop.set()
    assert [e[1] for e in log.events] == [f"o{i}" for i in range(50)]


def test_a_failing_handler_is_logged_and_delivery_goes_on(caplog: Any) -> None:
    client, informer = make([listing("10", obj("a", "1"))], [[event("MODIFIED", obj("a", "2"))]])
    log = Log()

    def broken(o: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    informer.add_event_handler(on_add=broken, on_update=lambda old, new: 1 / 0)
    informer.add_event_handler(log)
    stop = threading.Event()
    informer.start(stop)
    try:
        assert wait_until(lambda: len(log.events) == 2, interval=0.005)
    finally:
        stop.set()
    assert log.events == [("add", "a", "1"), ("update", "a", "2")]
    assert "boom" in caplog.text and "ZeroDivisionError" in caplog.text


def test_has_synced_only_after_the_first_lists_adds_are_delivered() -> None:
    gate = threading.Event()
    client, informer = make([listing("10", obj("a", "1"))], [])
    informer.add_event_handler(on_add=lambda o: gate.wait(10))
    stop = threading.Event()
    informer.start(stop)
    try:
        assert client.idle.wait(5)
        assert informer.reflector.has_synced() and len(informer.store) == 1
        assert not informer.has_synced()
        assert not informer.wait_for_sync(0.05)
        gate.set()
        assert informer.wait_for_sync(5)
    finally:
        gate.set()
        stop.set()


def test_removed_handler_hears_nothing_more() -> None:
    hold = threading.Event()
    client, informer = make([listing("10", obj("a", "1"))], [[event("MODIFIED", obj("a", "2"))]])
    log = Log()
    informer.add_event_handler(log)
    informer.remove_event_handler(log)
    informer.start(hold)
    try:
        assert client.idle.wait(5) and informer.wait_for_sync(5)
    finally:
        hold.set()
    assert log.events == []


def test_lister_reads_the_cache() -> None:
    labelled = obj("a", "1")
    labelled["metadata"]["labels"] = {"app": "x"}
    client, informer = make([listing("10", labelled, obj("b", "2"))], [])
    stop = threading.Event()
    informer.start(stop)
    try:
        assert informer.wait_for_sync(5)
        lister = informer.lister()
        assert [name(o) for o in lister.list("ns", "app=x")] == ["a"]
        assert lister.get("ns", "b") is not None
    finally:
        stop.set()


def test_factory_shares_one_informer_per_collection() -> None:
    client = FakeClient(lists=[listing("1", obj("a", "1")), listing("1"), listing("1")], watches=[])
    factory = InformerFactory(client)
    pods = factory.informer("v1", "configmaps", namespace="ns")
    assert factory.informer("v1", "configmaps", namespace="ns") is pods
    assert factory.informer("v1", "configmaps", namespace="ns", label_selector="a=b") is not pods
    assert factory.informer("v1", "configmaps") is not pods
    stop = threading.Event()
    factory.start(stop)
    factory.start(stop)  # idempotent: still one list per informer
    try:
        assert factory.wait_for_sync(5)
        assert len(client.list_calls) == 3
    finally:
        stop.set()


def test_factory_wait_for_sync_times_out_when_listing_fails() -> None:
    client = FakeClient(lists=[], watches=[])  # every list raises
    factory = InformerFactory(client)
    factory.informer("v1", "pods")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_sync(0.1) is False
    finally:
        stop.set()
