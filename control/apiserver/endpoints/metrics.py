"""The API server's Prometheus metrics under upstream's names (k8s.io/apiserver/pkg/endpoints/metrics/metrics.go,
k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go, the max-in-flight filter's gauge).

- `apiserver_request_total{verb, dry_run, group, version, resource, subresource, scope, component, code}` and
  `apiserver_request_duration_seconds{verb, dry_run, group, version, resource, subresource, scope, component}`
  with upstream's buckets. `verb` is upstream's cleaned verb (GET, LIST, WATCH, POST, PUT, PATCH, APPLY,
  DELETE, DELETECOLLECTION, CONNECT); `scope` resource / namespace / cluster (CleanScope: a named object or
  any create is `resource`); `component` always `apiserver`. A request for no resource (discovery,
  /healthz, /metrics) has empty group, version and resource and its route's path as `subresource`, as
  upstream's InstrumentHandlerFunc records them. A WATCH is counted when it ends; its duration is the
  stream's life, as upstream's.
- `apiserver_current_inflight_requests{request_kind}` (readOnly / mutating), set by the in-flight limit.
- `apiserver_storage_objects{resource}`: objects stored per resource (`pods`, `deployments.apps`), counted
  in the store when scraped (upstream refreshes it every minute from the store's count).
- `apiserver_watch_events_total{group, version, kind}`: events sent to watchers.
- `etcd_request_duration_seconds{operation, type}`: every store call's duration by operation and group
  resource, whichever backend (SQLite or etcd) holds the data, as k3s's kine reports it for SQL.
- The process collector (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...), which upstream's
  legacy registry carries too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from control.apiserver.resources import RESOURCES, Resource, storage_prefix
from control.storage.interface import ListResult, Record, Storage, Watch

# upstream requestLatencies / etcdRequestLatency buckets
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45,
                   60)
STORAGE_BUCKETS = REQUEST_BUCKETS
COMPONENT = "apiserver"
REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})
_APPLY = "application/apply-patch+yaml"
_T = TypeVar("_T")


def group_resource(resource: Resource) -> str:
    """`pods`, `deployments.apps`: how upstream names a resource in storage metrics."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


@dataclass(frozen=True)
class RequestInfo:
    """What a request is about, for the labels (upstream RequestInfo, the part metrics read)."""

    is_resource: bool
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def parse_path(path: str) -> RequestInfo:
    """upstream RequestInfoFactory.NewRequestInfo for `/api/v1/...` and `/apis/{g}/{v}/...`."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(False)
    if not rest:
        return RequestInfo(False)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:  # `namespaces/{ns}/{resource}...`; `namespaces/{ns}` is the object
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and not namespace and name:
        namespace = name
    return RequestInfo(True, group, version, resource, subresource, namespace, name)


def clean_verb(method: str, info: RequestInfo, query: Mapping[str, str], content_type: str) -> str:
    """upstream CleanVerb over the installer's action verbs."""
    if info.subresource in _CONNECT_SUBRESOURCES:
        return "CONNECT"
    if method == "GET":
        if not info.is_resource:
            return "GET"
        if query.get("watch") in ("1", "true"):
            return "WATCH"
        return "GET" if info.name else "LIST"
    if method == "DELETE" and info.is_resource and not info.name:
        return "DELETECOLLECTION"
    if method == "PATCH" and content_type.startswith(_APPLY):
        return "APPLY"
    return method


def clean_scope(method: str, info: RequestInfo) -> str:
    """upstream CleanScope."""
    if info.name or (method == "POST" and info.is_resource):
        return "resource"
    if info.namespace:
        return "namespace"
    return "cluster" if info.is_resource else ""


def is_mutating(method: str) -> bool:
    return method not in ("GET", "HEAD", "OPTIONS")


class _StorageObjects(Collector):
    """apiserver_storage_objects, counted in the store at scrape time."""

    def __init__(self, count: Callable[[str], int], resources: Iterable[Resource]) -> None:
        self._count = count
        self._resources = list(resources)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("apiserver_storage_objects", "Number of stored objects at the time of last "
                                   "check split by kind.", labels=["resource"])
        for resource in self._resources:
            try:
                family.add_metric([group_resource(resource)], self._count(storage_prefix(resource)))
            except Exception:  # noqa: BLE001 — a store that cannot count now leaves the resource out
                continue
        yield family


class APIServerMetrics:
    """One registry per API server (tests run several in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "Counter of apiserver requests broken out for each verb, "
                                "dry run value, group, version, resource, scope, component, and HTTP response code.",
                                [*REQUEST_LABELS, "code"], registry=self.registry)
        self.latency = Histogram("apiserver_request_duration_seconds", "Response latency distribution in seconds for "
                                 "each verb, dry run value, group, version, resource, subresource, scope and "
                                 "component.", REQUEST_LABELS, buckets=REQUEST_BUCKETS, registry=self.registry)
        self.inflight = Gauge("apiserver_current_inflight_requests", "Maximal number of currently used inflight "
                              "request limit of this apiserver per request kind in last second.", ["request_kind"],
                              registry=self.registry)
        self.watch_events = Counter("apiserver_watch_events_total", "Number of events sent in watch clients",
                                    ["group", "version", "kind"], registry=self.registry)
        self.storage_latency = Histogram("etcd_request_duration_seconds", "Etcd request latency in seconds for each "
                                         "operation and object type.", ["operation", "type"],
                                         buckets=STORAGE_BUCKETS, registry=self.registry)
        ProcessCollector(registry=self.registry)
        for kind in ("readOnly", "mutating"):
            self.inflight.labels(kind).set(0)

    def count_storage_objects(self, count: Callable[[str], int], resources: Iterable[Resource] = RESOURCES) -> None:
        self.registry.register(_StorageObjects(count, resources))

    def observe_request(self, *, method: str, path: str, query: Mapping[str, str], content_type: str,
                        code: int, seconds: float, route: str) -> None:
        info = parse_path(path)
        verb = clean_verb(method, info, query, content_type)
        dry_run = "All" if query.get("dryRun") == "All" else ""
        labels = (verb, dry_run, info.group, info.version, info.resource,
                  info.subresource if info.is_resource else route, clean_scope(method, info), COMPONENT)
        self.requests.labels(*labels, str(code)).inc()
        self.latency.labels(*labels).observe(seconds)


_RESOURCE_BY_PREFIX = {storage_prefix(r): group_resource(r) for r in RESOURCES}


def _type_of(key: str) -> str:
    """The group resource a storage key belongs to (`/registry/pods/ns/name` → `pods`)."""
    parts = key.split("/", 3)
    prefix = f"/{parts[1]}/{parts[2]}/" if len(parts) > 2 else key
    return _RESOURCE_BY_PREFIX.get(prefix, parts[2] if len(parts) > 2 else "")


class MeteredStorage:
    """A `Storage` that times every call into `etcd_request_duration_seconds` and otherwise is `inner`."""

    def __init__(self, inner: Storage, histogram: Histogram) -> None:
        self.inner = inner
        self._histogram = histogram

    def _timed(self, operation: str, key: str, call: Callable[[], _T]) -> _T:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self._histogram.labels(operation, _type_of(key)).observe(time.perf_counter() - start)

    def revision(self) -> int:
        return self.inner.revision()

    def get(self, key: str) -> Record | None:
        return self._timed("get", key, lambda: self.inner.get(key))

    def list(self, prefix: str, *, start_after: str = "", limit: int = 0, revision: int = 0) -> ListResult:
        return self._timed("list", prefix, lambda: self.inner.list(prefix, start_after=start_after, limit=limit,
                                                                   revision=revision))

    def count(self, prefix: str) -> int:
        return self._timed("count", prefix, lambda: self.inner.count(prefix))

    def create(self, key: str, value: bytes) -> Record:
        return self._timed("create", key, lambda: self.inner.create(key, value))

    def update(self, key: str, value: bytes, *, expected_revision: int) -> Record:
        return self._timed("update", key, lambda: self.inner.update(key, value, expected_revision=expected_revision))

    def delete(self, key: str, *, expected_revision: int | None = None) -> Record:
        return self._timed("delete", key, lambda: self.inner.delete(key, expected_revision=expected_revision))

    def watch(self, prefix: str, *, after: int) -> Watch:
        return self.inner.watch(prefix, after=after)

    def compact(self, revision: int) -> None:
        self.inner.compact(revision)

    def compact_revision(self) -> int:
        return self.inner.compact_revision()

    def close(self) -> None:
        self.inner.close()
