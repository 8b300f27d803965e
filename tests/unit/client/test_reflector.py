"""The reflector (control/client/reflector.py) against a scripted list/watch client: paged list, watch from
the list's resourceVersion, bookmarks, relist on Gone or a broken watch delivering only the difference
(deletes of ghosts with their last known state), list backoff, resync, stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests

from control.client.errors import Gone
from control.client.reflector import Change, ChangeType, Reflector, relist_changes, watch_change
from control.client.store import Store
from tests.support.fake_listwatch import FakeClient, bookmark, event, listing, obj

PATH = "/api/v1/namespaces/ns/configmaps"


class Recorder:
    """An EventHandler that records (kind, key, resourceVersion…) and can be told to fail."""

    def __init__(self, *, fail_on: str = "") -> None:
        self.events: list[tuple[str, ...]] = []
        self.fail_on = fail_on

    def _record(self, *entry: str) -> None:
        self.events.append(entry)
        if entry[0] == self.fail_on:
            raise RuntimeError("handler bug")

    def on_add(self, o: dict[str, Any]) -> None:
        self._record("add", o["metadata"]["name"], o["metadata"]["resourceVersion"])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._record("update", new["metadata"]["name"], old["metadata"]["resourceVersion"],
                     new["metadata"]["resourceVersion"])

    def on_delete(self, o: dict[str, Any]) -> None:
        self._record("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"])


class RecordingStop(threading.Event):
    """A stop Event whose timed waits (the reflector's backoff sleeps) return at once and are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:
            return super().wait()
        self.waits.append(timeout)
        return self.is_set()


@contextmanager
def running(reflector: Reflector, stop: threading.Event | None = None) -> Iterator[threading.Event]:
    stop = stop or threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,))
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(5)
        assert not thread.is_alive(), "the reflector did not stop"


def rvs(store: Store) -> dict[str, str]:
    return {key: o["metadata"]["resourceVersion"] for key, o in store.items().items()}


def test_list_then_watch_from_the_lists_resource_version() -> None:
    client = FakeClient(
        lists=[listing("10", obj("a", "5"), obj("b", "7"))],
        watches=[[event("ADDED", obj("c", "11")), event("MODIFIED", obj("a", "12")), bookmark("13"),
                  event("DELETED", obj("b", "14"))]])
    store, handler = Store(), Recorder()
    reflector = Reflector(client, PATH, store=store, handler=handler, params={"labelSelector": "x=y"})
    with running(reflector):
        assert client.idle.wait(5)
    assert client.list_calls == [{"labelSelector": "x=y", "limit": "500"}]
    assert client.watch_calls[0] == ("10", {"labelSelector": "x=y"})
    assert handler.events == [("add", "a", "5"), ("add", "b", "7"), ("add", "c", "11"), ("update", "a", "5", "12"),
                              ("delete", "b", "14")]  # a watch delete carries the final state
    assert rvs(store) == {"ns/a": "12", "ns/c": "11"}
    assert reflector.has_synced()
    assert reflector.last_sync_resource_version == "14"


def test_bookmark_moves_the_resume_point() -> None:
    client = FakeClient(lists=[listing("10")], watches=[[bookmark("20")], [bookmark("30")]])
    reflector = Reflector(client, PATH, store=Store(), handler=Recorder())
    with running(reflector):
        assert client.idle.wait(5)
    # each scripted stream ended (a server-side timeout): re-watched from the bookmark, no relist
    assert [rv for rv, _ in client.watch_calls] == ["10", "20", "30"]
    assert len(client.list_calls) == 1
    assert reflector.last_sync_resource_version == "30"


@pytest.mark.parametrize("failure", [
    pytest.param(Gone(410, "Expired", "too old resource version"), id="gone"),
    pytest.param(requests.ConnectionError("connection refused"), id="broken-watch"),
])
def test_relist_delivers_the_difference_and_deletes_ghosts(failure: Exception) -> None:
    client = FakeClient(
        lists=[listing("10", obj("a", "1"), obj("b", "2"), obj("c", "3")),
               # while disconnected: b changed, c deleted, d created; a untouched
               listing("40", obj("a", "1"), obj("b", "25"), obj("d", "30"))],
        watches=[[event("MODIFIED", obj("c", "8", v="last")), failure]])
    store, handler = Store(), Recorder()
    stop = RecordingStop()
    reflector = Reflector(client, PATH, store=store, handler=handler)
    with running(reflector, stop):
        assert client.idle.wait(5)
    assert handler.events[3:] == [
        ("update", "c", "3", "8"),
        ("update", "b", "2", "25"), ("add", "d", "30"),
        ("delete", "c", "8"),  # the ghost, with the last state the store saw
    ]
    assert rvs(store) == {"ns/a": "1", "ns/b": "25", "ns/d": "30"}
    assert [rv for rv, _ in client.watch_calls] == ["10", "40"]
    assert len(client.list_calls) == 2
    # Gone relists at once; a broken watch waits the initial backoff first
    assert stop.waits == ([] if isinstance(failure, Gone) else [0.8])


def test_list_errors_back_off_exponentially_then_reset() -> None:
    error = requests.ConnectionError("refused")
    client = FakeClient(lists=[error, error, error, error, error, error, listing("5", obj("a", "5")),
                               error, listing("9", obj("a", "5"))],
                        watches=[[requests.ConnectionError("reset")]])
    stop = RecordingStop()
    handler = Recorder()
    reflector = Reflector(client, PATH, store=Store(), handler=handler)
    with running(reflector, stop):
        assert client.idle.wait(5)
    # 0.8 doubling, capped at 30 s; after a good list the next failure starts over
    assert stop.waits == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 0.8, 1.6]
    assert handler.events == [("add", "a", "5")]


def test_periodic_resync_redelivers_every_object_as_an_update_of_itself() -> None:
    client = FakeClient(lists=[listing("10", obj("a", "1"), obj("b", "2"))], watches=[])
    handler = Recorder()
    reflector = Reflector(client, PATH, store=Store(), handler=handler, resync_period=0.02)
    with running(reflector):
        assert client.idle.wait(5)
        deadline = threading.Event()
        while sum(e[0] == "update" for e in handler.events) < 4 and not deadline.wait(0.01):
            pass
    updates = [e for e in handler.events if e[0] == "update"]
    assert set(updates[:2]) == {("update", "a", "1", "1"), ("update", "b", "2", "2")}


def test_a_failing_handler_does_not_stop_the_reflector() -> None:
    client = FakeClient(lists=[listing("10", obj("a", "1"))],
                        watches=[[event("ADDED", obj("b", "11")), event("DELETED", obj("a", "12"))]])
    store, handler = Store(), Recorder(fail_on="add")
    reflector = Reflector(client, PATH, store=store, handler=handler)
    with running(reflector):
        assert client.idle.wait(5)
    assert handler.events == [("add", "a", "1"), ("add", "b", "11"), ("delete", "a", "12")]
    assert rvs(store) == {"ns/b": "11"}


def test_on_listed_called_once_after_the_first_list() -> None:
    calls: list[int] = []
    store = Store()
    client = FakeClient(lists=[listing("1", obj("a", "1")), listing("2")], watches=[[Gone(410, "Expired", "old")]])
    reflector = Reflector(client, PATH, store=store, handler=Recorder(),
                          on_listed=lambda: calls.append(len(store)))
    with running(reflector):
        assert client.idle.wait(5)
    assert calls == [1]


# -- the pure decisions ---------------------------------------------------------------------------

def test_relist_changes_table() -> None:
    a1, a2, b, c = obj("a", "1"), obj("a", "2"), obj("b", "3"), obj("c", "4")
    changes = relist_changes({"ns/a": a1, "ns/c": c}, {"ns/a": a2, "ns/b": b})
    assert changes == [Change(ChangeType.UPDATED, "ns/a", a1, a2), Change(ChangeType.ADDED, "ns/b", None, b),
                       Change(ChangeType.DELETED, "ns/c", c, c)]
    assert relist_changes({"ns/a": a1}, {"ns/a": obj("a", "1")}) == []


@pytest.mark.parametrize("kind, known, expected", [
    pytest.param("ADDED", None, ChangeType.ADDED, id="added"),
    pytest.param("ADDED", obj("a", "1"), ChangeType.UPDATED, id="added-known-is-update"),
    pytest.param("MODIFIED", None, ChangeType.ADDED, id="modified-unknown-is-add"),
    pytest.param("MODIFIED", obj("a", "1"), ChangeType.UPDATED, id="modified"),
    pytest.param("DELETED", obj("a", "1"), ChangeType.DELETED, id="deleted"),
    pytest.param("DELETED", None, None, id="deleted-unknown-dropped"),
])
def test_watch_change_table(kind: str, known: dict | None, expected: ChangeType | None) -> None:
    change = watch_change(kind, "ns/a", known, obj("a", "2"))
    assert (change.type if change else None) is expected
