"""A scripted stand-in for RESTClient.list/watch, shared by the reflector and informer unit tests.

`lists` is consumed one entry per list call (a List dict, or an exception to raise); `watches` one entry
per watch call: a list of WatchEvents, optionally ending with an exception to raise after them. When a
script runs out, list raises and watch blocks until `stop` is set (a quiet, healthy stream).

Kept beside the shared fake API server (fake_apiserver.py): the reflector and informer tests script exact
sequences (a failed list, a 410 in the middle of a stream, bookmarks, what resourceVersion each watch is
resumed from) that a well-behaved server does not produce on demand."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from control.client.rest import WatchEvent


def obj(name: str, rv: str, namespace: str = "ns", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, "data": dict(data)}


def listing(rv: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": list(items)}


def event(kind: str, item: dict[str, Any]) -> WatchEvent:
    return WatchEvent(kind, item)


def bookmark(rv: str) -> WatchEvent:
    return WatchEvent("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": rv}})


class FakeClient:
    def __init__(self, lists: list[Any], watches: list[list[Any]]) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.list_calls: list[dict[str, str]] = []
        self.watch_calls: list[tuple[str, dict[str, str]]] = []
        self.lock = threading.Lock()
        self.idle = threading.Event()  # set when a watch has run out of script (everything delivered)

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        with self.lock:
            self.list_calls.append(dict(params or {}))
            step = self.lists.pop(0) if self.lists else RuntimeError("no more lists scripted")
        if isinstance(step, BaseException):
            raise step
        return step

    def watch(self, path: str, *, resource_version: str = "", params: Mapping[str, str] | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              stop: threading.Event | None = None) -> Iterator[WatchEvent]:
        with self.lock:
            self.watch_calls.append((resource_version, dict(params or {})))
            script = self.watches.pop(0) if self.watches else None
        if script is None:
            self.idle.set()
            assert stop is not None
            stop.wait()
            return
        for step in script:
            if isinstance(step, BaseException):
                raise step
            yield step
