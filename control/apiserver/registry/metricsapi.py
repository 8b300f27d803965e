"""`metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics, served by the API server itself from the kubelets'
`/stats/summary` (what metrics-server does as an aggregated API: pkg/storage/{node,pod}.go,
pkg/scraper/client/resource/decode.go; the API types are k8s.io/metrics/pkg/apis/metrics/v1beta1).

On a request the nodes concerned are scraped through streaming/kubeletclient.py (concurrently), unless their last
scrape is younger than `RESOLUTION` seconds (metrics-server's default resolution is 15 s). CPU is a rate
over two scrapes of the cumulative `usageCoreNanoSeconds`, as metrics-server computes it, `window` being
the time between the two samples; an entry with no usable earlier sample (the API server's first scrape of
the node, a new or restarted container) takes the kubelet's own `usageNanoCores` (the kubelet rates every
container from two samples of its own, nodeagent/stats/provider.py) with `window` the time since the
node's previous scrape, or `FIRST_WINDOW` when there is none. Memory is `workingSetBytes`.

A node whose kubelet does not answer, and pods on it, are left out of lists (get: 404), as metrics-server
does; a pod is left out unless every one of its containers has cpu and memory. Label selectors apply to
the Node's and the Pod's labels; field selectors as on nodes and pods. No Tables (kubectl top formats
itself), no watch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp import web

from control.api.typed import Node, Pod
from control.apimachinery.labels import SelectorError
from control.apimachinery.meta import format_timestamp
from control.apiserver import status
from control.apiserver.registry.store import Registry
from control.apiserver.resources import Resource, by_path
from control.apiserver.storage.selection import parse_filter
from control.apiserver.streaming.kubeletclient import KubeletClient, node_connection

log = logging.getLogger(__name__)

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
PREFIX = f"/apis/{API_VERSION}"
RESOLUTION = 15.0
FIRST_WINDOW = 1.0  # the kubelet's own first window (nodeagent/stats/provider.py PRIME_SECONDS)
MAX_RATE_AGE = 600.0  # an earlier scrape older than this is not used for a rate
NANO = 1_000_000_000



def _core(plural: str) -> Resource:
    resource = by_path("", "v1", plural)
    assert resource is not None
    return resource


NODES, PODS = _core("nodes"), _core("pods")

Key = tuple[str, ...]  # ("node",) or ("pod", namespace, name, container)


@dataclass(frozen=True)
class Usage:
    nano_cores: int
    memory_bytes: int
    timestamp: str
    window: float  # seconds


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _entries(summary: Mapping[str, Any]) -> dict[Key, Mapping[str, Any]]:
    """Every entry with cpu and memory by key: the node and each pod's containers."""
    found: dict[Key, Mapping[str, Any]] = {("node",): summary.get("node") or {}}
    for pod in summary.get("pods") or []:
        ref = pod.get("podRef") or {}
        for container in pod.get("containers") or []:
            found[("pod", str(ref.get("namespace", "")), str(ref.get("name", "")), str(container.get("name", "")))] \
                = container
    return found


def usages(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[Key, Usage]:
    """The usage of every entry of `current` that has cpu and memory, cpu rated against `previous`."""
    before = _entries(previous) if previous is not None else {}
    node_now = _seconds(((current.get("node") or {}).get("cpu") or {}).get("time"))
    node_then = _seconds((((previous or {}).get("node") or {}).get("cpu") or {}).get("time"))
    node_window = node_now - node_then if node_now is not None and node_then is not None and node_now > node_then \
        else FIRST_WINDOW
    result = {}
    for key, entry in _entries(current).items():
        cpu, memory = entry.get("cpu") or {}, entry.get("memory") or {}
        at, total, working_set = _seconds(cpu.get("time")), cpu.get("usageCoreNanoSeconds"), \
            memory.get("workingSetBytes")
        if at is None or not isinstance(total, int) or not isinstance(working_set, int):
            continue
        old = (before.get(key) or {}).get("cpu") or {}
        old_at, old_total = _seconds(old.get("time")), old.get("usageCoreNanoSeconds")
        if old_at is not None and isinstance(old_total, int) and at > old_at and total >= old_total:
            rate, window = int((total - old_total) / (at - old_at)), at - old_at
        elif isinstance(cpu.get("usageNanoCores"), int):
            rate, window = cpu["usageNanoCores"], node_window
        else:
            continue
        result[key] = Usage(nano_cores=rate, memory_bytes=working_set, timestamp=cpu["time"], window=window)
    return result


def cpu_quantity(nano_cores: int) -> str:
    return f"{nano_cores}n"


def memory_quantity(size: int) -> str:
    return f"{size // 1024}Ki" if size % 1024 == 0 else str(size)


def _window(seconds: float) -> str:
    """A metav1.Duration as Go prints it ("15.032s")."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def _usage(usage: Usage) -> dict[str, str]:
    return {"cpu": cpu_quantity(usage.nano_cores), "memory": memory_quantity(usage.memory_bytes)}


def node_metrics(node: Mapping[str, Any], usage: Usage, now: str) -> dict[str, Any]:
    meta = Node(node).metadata
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION,
            "metadata": {"name": meta.name, "creationTimestamp": now, "labels": dict(meta.labels)},
            "timestamp": usage.timestamp, "window": _window(usage.window), "usage": _usage(usage)}


def pod_metrics(pod: Mapping[str, Any], found: Mapping[Key, Usage], now: str) -> dict[str, Any] | None:
    """The PodMetrics of `pod`, or None unless every container in its spec has a usage (metrics-server
    leaves such a pod out rather than report part of it)."""
    view = Pod(pod)
    meta = view.metadata
    namespace, name = meta.namespace, meta.name
    names = [c.name for c in view.spec.containers]
    container_usages = [found.get(("pod", namespace, name, n)) for n in names]
    if not names or any(u is None for u in container_usages):
        return None
    present = [u for u in container_usages if u is not None]
    return {"kind": "PodMetrics", "apiVersion": API_VERSION,
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now,
                         "labels": dict(meta.labels)},
            "timestamp": min(u.timestamp for u in present), "window": _window(max(u.window for u in present)),
            "containers": [{"name": n, "usage": _usage(u)} for n, u in zip(names, present, strict=True)]}


@dataclass
class _Scrape:
    fetched: float  # monotonic
    previous: dict[str, Any] | None
    current: dict[str, Any]
    usages: dict[Key, Usage]


class MetricsAPI:
    """The handlers under /apis/metrics.k8s.io/v1beta1; `routes()` lists them for the server to register."""

    def __init__(self, registry: Registry, kubelet: KubeletClient, *, clock: Callable[[], float] = time.monotonic,
                 resolution: float = RESOLUTION) -> None:
        self._registry = registry
        self._kubelet = kubelet
        self._clock = clock
        self._resolution = resolution
        self._scrapes: dict[str, _Scrape] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def routes(self) -> list[tuple[str, Callable[[web.Request], Any]]]:
        return [(f"{PREFIX}/nodes", self.list_nodes), (f"{PREFIX}/nodes/{{name}}", self.get_node),
                (f"{PREFIX}/pods", self.list_pods), (f"{PREFIX}/namespaces/{{namespace}}/pods", self.list_pods),
                (f"{PREFIX}/namespaces/{{namespace}}/pods/{{name}}", self.get_pod)]

    # -- handlers -------------------------------------------------------------------------------------

    async def list_nodes(self, request: web.Request) -> web.Response:
        nodes = await self._matching(NODES, "", request)
        found = await self._usages_of([str(n["metadata"]["name"]) for n in nodes])
        now = format_timestamp(datetime.now(UTC))
        items = [node_metrics(n, found[name][("node",)], now) for n in nodes
                 if (name := str(n["metadata"]["name"])) in found and ("node",) in found[name]]
        return _json({"kind": "NodeMetricsList", "apiVersion": API_VERSION, "metadata": {}, "items": items})

    async def get_node(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        node = await asyncio.to_thread(self._registry.get, NODES, "", name)
        found = (await self._usages_of([name])).get(name, {}) if node is not None else {}
        if node is None or ("node",) not in found:
            raise status.not_found("nodemetrics", name, group=GROUP)
        return _json(node_metrics(node, found[("node",)], format_timestamp(datetime.now(UTC))))

    async def list_pods(self, request: web.Request) -> web.Response:
        pods = await self._matching(PODS, request.match_info.get("namespace", ""), request)
        items = await self._pod_metrics(pods)
        return _json({"kind": "PodMetricsList", "apiVersion": API_VERSION, "metadata": {}, "items": items})

    async def get_pod(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        pod = await asyncio.to_thread(self._registry.get, PODS, namespace, name)
        items = await self._pod_metrics([pod]) if pod is not None else []
        if not items:
            raise status.not_found("podmetrics", name, group=GROUP)
        return _json(items[0])

    # -- data -----------------------------------------------------------------------------------------

    async def _matching(self, resource: Resource, namespace: str, request: web.Request) -> list[dict[str, Any]]:
        try:
            flt = parse_filter(resource, request.query.get("labelSelector"), request.query.get("fieldSelector"))
        except SelectorError as exc:
            raise status.bad_request(str(exc)) from None
        page = await asyncio.to_thread(self._registry.list, resource, namespace, None if flt.everything else flt)
        return page.items

    async def _pod_metrics(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nodes = sorted({node for node in (Pod(p).spec.node_name for p in pods) if node})
        found = await self._usages_of(nodes)
        now = format_timestamp(datetime.now(UTC))
        items = []
        for pod in pods:
            metrics = pod_metrics(pod, found.get(Pod(pod).spec.node_name, {}), now)
            if metrics is not None:
                items.append(metrics)
        return items

    async def _usages_of(self, names: list[str]) -> dict[str, dict[Key, Usage]]:
        answers = await asyncio.gather(*(self._node_usages(name) for name in names))
        return {name: found for name, found in zip(names, answers, strict=True) if found is not None}

    async def _node_usages(self, name: str) -> dict[Key, Usage] | None:
        """The node's usages from a scrape at most `resolution` old, scraping now if needed; None if its
        kubelet cannot be reached."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            scrape = self._scrapes.get(name)
            now = self._clock()
            if scrape is not None and now - scrape.fetched < self._resolution:
                return scrape.usages
            summary = await self._fetch(name)
            if summary is None:
                return None
            previous = scrape.current if scrape is not None and now - scrape.fetched < MAX_RATE_AGE else None
            fresh = _Scrape(fetched=now, previous=previous, current=summary, usages=usages(previous, summary))
            self._scrapes[name] = fresh
            return fresh.usages

    async def _fetch(self, name: str) -> dict[str, Any] | None:
        node = await asyncio.to_thread(self._registry.get, NODES, "", name)
        connection = node_connection(node) if node is not None else None
        if connection is None:
            return None
        try:
            async with self._kubelet.session() as session, \
                    session.get(connection.url("/stats/summary"), timeout=aiohttp.ClientTimeout(total=20)) as answer:
                if answer.status != 200:
                    log.warning("metrics: kubelet of node %s answered %d", name, answer.status)
                    return None
                body = json.loads(await answer.read())
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            log.warning("metrics: cannot scrape the kubelet of node %s: %s", name, exc)
            return None
        return body if isinstance(body, dict) else None


def _json(body: Any) -> web.Response:
    return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json")
