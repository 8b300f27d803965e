"""The kubelet: wires the node agent's parts together and runs them (seed 001 start-up, issue 5).

Start-up order (upstream cmd/kubelet/app/server.go RunKubelet → kubelet.go Run, what applies here):
  1. event recorder (component "kubelet", host = node) and the birth cry "Starting kubelet." on the Node;
  2. OOM score adjustment -999 for this process (best effort: needs CAP_SYS_RESOURCE);
  3. register the Node (NodeReporter) — an API server that cannot be reached here is fatal;
  4. the pod network: podCIDR from the config, else the Node's spec.podCIDR, else a clear error; IPAM
     under `state_dir`, bridge and host rules ensured, and the addresses of sandboxes that no longer run
     released (restart safety: running sandboxes keep theirs);
  5. PLEG: one relist before anything else, so the pod cache holds the pods already running (adoption:
     their containers match their specs' hashes and are left alone), then its threads;
  6. pod sources: the API server's pods with fieldSelector spec.nodeName=<node> (an informer), and the
     static pod file/URL sources with their mirror pods;
  7. pod workers (nodeagent.pod_workers) running `_sync`, the node status/lease loop, the HTTP server,
     and a housekeeping loop (orphan pods, back-off GC, mirror pods, bridge and rules every resync).
`stop()` ends every thread and leaves containers, network and IPAM state in place: a later `start()` on
the same data dir adopts them.

The per-pod decision (`_sync`) follows upstream's pod worker states, simplified:
- gone from every source → kill with the last spec's grace period, remove containers, sandboxes and the
  pod directory, forget its status; the worker ends;
- deletionTimestamp set → kill with deletionGracePeriodSeconds; once nothing runs, a last status, the
  containers removed, then the status manager's DELETE (grace 0, uid precondition);
- otherwise PodSyncer.sync_pod and a status update with the waiting reasons kept per container until it
  starts (upstream's reasonCache).
Mirror pods from the API are never run: they stand for static pods, whose status goes to them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import docker

from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.rest import RESTClient
from control.util.iptables import detect
from nodeagent.config import KubeletConfig
from nodeagent.hooks import HookRunner
from nodeagent.mirror import MirrorPods, is_mirror
from nodeagent.network.ipam import LocalIPAM, state_path
from nodeagent.network.manager import PodNetworkManager
from nodeagent.network.podnet import NetlinkPodNetwork, PodInterface
from nodeagent.node_lifecycle import NodeReporter, runtime_facts
from nodeagent.node_status import default_ip
from nodeagent.pleg import GenericPLEG
from nodeagent.pod_workers import PodWorkers, WorkItem, WorkResult
from nodeagent.runtime.backoff import Backoff
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.downward import NodeFacts
from nodeagent.runtime.interface import Runtime
from nodeagent.runtime.types import ContainerState, PodStatus, SandboxState, SandboxStatus
from nodeagent.server import KubeletServer
from nodeagent.sources import FileSource, URLSource
from nodeagent.status_manager import StatusManager, pod_finished
from nodeagent.sync import PodSyncer

log = logging.getLogger(__name__)

CACHE_WAIT_PERIODS = 3  # how many relist periods a sync waits for a fresh pod cache before retrying
HOUSEKEEPING_PERIOD = 2.0  # upstream housekeepingPeriod


class KubeletError(RuntimeError):
    """A fatal start-up problem (no API server, no podCIDR, no Docker)."""


class _Objects:
    """ObjectGetter over the REST client: ConfigMaps and Secrets for env and volumes."""

    def __init__(self, client: RESTClient) -> None:
        self._client = client

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "configmaps", namespace=namespace, name=name))

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "secrets", namespace=namespace, name=name))


class _TrackedNetwork:
    """The network manager plus sandbox id → IP, which the runtime's PodStatus needs (Docker cannot tell:
    sandboxes run with network_mode none). Read by the PLEG on every relist, so kept in memory."""

    def __init__(self, manager: PodNetworkManager, ips: Mapping[str, str]) -> None:
        self.manager = manager
        self._ips = dict(ips)
        self._lock = threading.Lock()

    def attach(self, sandbox_id: str, pod_uid: str, pid_or_netns_path: int | str) -> PodInterface:
        interface = self.manager.attach(sandbox_id, pod_uid, pid_or_netns_path)
        with self._lock:
            self._ips[sandbox_id] = interface.ip
        return interface

    def detach(self, sandbox_id: str) -> str | None:
        released = self.manager.detach(sandbox_id)
        with self._lock:
            self._ips.pop(sandbox_id, None)
        return released

    def ip_of(self, sandbox: SandboxStatus) -> str:
        with self._lock:
            return self._ips.get(sandbox.id, "")


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _set_oom_score_adj(value: int) -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(value))
    except OSError as exc:
        log.info("cannot set oom_score_adj %d: %s", value, exc)


class Kubelet:
    def __init__(self, config: KubeletConfig, client: RESTClient, *, runtime: Runtime | None = None,
                 extra_labels: Mapping[str, str] | None = None, oom_score_adj: int | None = -999) -> None:
        self.config = config
        self.client = client
        self.extra_labels = dict(extra_labels or {})
        self.oom_score_adj = oom_score_adj
        self.runtime: Any = runtime
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._reasons: dict[str, dict[str, tuple[str, str]]] = {}  # uid → container → waiting reason
        self._mirrors: dict[tuple[str, str], dict[str, Any]] = {}  # (ns, name) → mirror pod from the API
        self._static: dict[str, dict[str, Any]] = {}  # uid → static pod
        self._api_uids: set[str] = set()
        self.reporter: Any = None
        self.server: Any = None
        self.sources: list[Any] = []
        self.mirror_pods: Any = None
        self.informer: Any = None
        self.recorder: EventRecorder | None = None

    @property
    def node_name(self) -> str:
        return self.config.node_name

    # ---- lifecycle ----

    def start(self) -> None:
        config = self.config
        self._stop.clear()
        self.recorder = EventRecorder(self.client, component="kubelet", host=config.node_name)
        node_ref = {"kind": "Node", "name": config.node_name, "uid": config.node_name, "apiVersion": "v1"}
        self.recorder.event(node_ref, "Normal", "Starting", "Starting kubelet.")
        if self.oom_score_adj is not None:
            _set_oom_score_adj(self.oom_score_adj)
        runtime = self._runtime()
        node = self._register(runtime)
        pod_cidr = config.pod_cidr or ((node.get("spec") or {}).get("podCIDR") or "")
        if not pod_cidr:
            raise KubeletError(f"node {config.node_name} has no podCIDR: set podCIDR in the kubelet config or "
                               "spec.podCIDR on the Node")
        self.node_ip = config.node_ip or default_ip()
        allocatable = dict(((node.get("status") or {}).get("allocatable")) or {})
        self.node_facts = NodeFacts(host_ips=(self.node_ip,), allocatable=allocatable)

        os.makedirs(config.state_dir, exist_ok=True)
        ipam = LocalIPAM(state_path(config.state_dir), pod_cidr)
        manager = PodNetworkManager(config.network(pod_cidr), ipam=ipam, network=NetlinkPodNetwork(),
                                    iptables=detect())
        live = [s.id for pod in runtime.list_pods() for s in pod.sandboxes if s.state is SandboxState.READY]
        manager.start(live)
        self.network = _TrackedNetwork(manager, {owner: a.ip for owner, a in ipam.allocations().items()})
        runtime.pod_ip = self.network.ip_of

        backoff = Backoff(initial=config.crash_loop_backoff_initial, maximum=config.crash_loop_backoff_max)
        self.syncer = PodSyncer(runtime, self.network, _Objects(self.client), pods_dir=config.pods_dir,
                                recorder=self.recorder, hooks=HookRunner(runtime), backoff=backoff,
                                node_facts=lambda: self.node_facts, extra_labels=self.extra_labels)
        self.status = StatusManager(self.client, host_ip=self.node_ip, mirror_of=self._mirror_of)
        self.pleg = GenericPLEG(runtime, on_events=lambda uid, events: self._on_pleg(uid),
                                period=config.pleg_relist_period, threshold=config.pleg_relist_threshold)
        self.workers = PodWorkers(self._sync, resync_period=config.sync_frequency,
                                  request_relist=self.pleg.request_relist)
        self.pleg.relist()  # adoption: the cache knows every running pod before any worker decides
        self.pleg.start()

        factory = InformerFactory(self.client)
        self.informer = factory.informer("v1", "pods", field_selector=f"spec.nodeName={config.node_name}")
        self.informer.add_event_handler(on_add=self._on_pod, on_update=lambda old, new: self._on_pod(new),
                                        on_delete=self._on_pod_delete)
        factory.start(self._stop)
        self._start_sources()
        self._spawn("node-status", self.reporter.run, self._stop)
        self._start_server(runtime)
        self._spawn("housekeeping", self._housekeeping)
        log.info("kubelet %s started (podCIDR %s)", config.node_name, pod_cidr)

    def stop(self) -> None:
        """Stop every thread; containers, network and state stay (a later start adopts them)."""
        self._stop.set()
        for source in self.sources:
            source.stop()
        if getattr(self, "workers", None) is not None:
            self.workers.stop()
        if getattr(self, "pleg", None) is not None:
            self.pleg.stop()
        if self.server is not None:
            self.server.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads = []
        if self.recorder is not None:
            self.recorder.shutdown(timeout=2)

    def is_ready(self) -> bool:
        return bool(self.reporter is not None and self.reporter.ready)

    def health(self) -> list[str]:
        """Problems that make the node not ready (upstream's runtime/PLEG health checks)."""
        pleg = getattr(self, "pleg", None)
        if pleg is None:
            return ["PLEG is not started"]
        healthy, message = pleg.healthy()
        return [] if healthy else [f"PLEG is not healthy: {message}"]

    # ---- start-up helpers ----

    def _spawn(self, name: str, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _runtime(self) -> Any:
        if self.runtime is not None:
            return self.runtime
        try:
            api = docker.APIClient(version="auto", timeout=max(60, int(self.config.image_pull_timeout)))
            api.ping()
        except Exception as exc:
            raise KubeletError(f"cannot reach dockerd: {exc}") from exc
        self.docker_api = api
        self.runtime = DockerRuntime(api, node_name=self.config.node_name)
        return self.runtime

    def _docker_version(self) -> str:
        api = getattr(self, "docker_api", None) or getattr(self.runtime, "api", None)
        try:
            return api.version()["Version"] if api is not None else "unknown"
        except Exception:
            return "unknown"

    def _register(self, runtime: Any) -> dict[str, Any]:
        facts = runtime_facts(self.config, runtime, docker_version=self._docker_version)
        self.reporter = NodeReporter(self.client, self.config, facts=facts, health=self.health)
        try:
            return self.reporter.register()
        except Exception as exc:
            raise KubeletError(f"registering node {self.config.node_name} failed: {exc}") from exc

    def _start_sources(self) -> None:
        config = self.config
        self.mirror_pods = MirrorPods(self.client, config.node_name)
        if config.static_pod_path:
            self.sources.append(FileSource(config.static_pod_path, config.file_check_frequency,
                                           self._on_static, config.node_name))
        if config.static_pod_url:
            self.sources.append(URLSource(config.static_pod_url, config.http_check_frequency,
                                          self._on_static, config.node_name))
        for source in self.sources:
            source.start()

    def _start_server(self, runtime: Any) -> None:
        self.server = KubeletServer(self.config.address, self.config.port, pods=self._pod_list, runtime=runtime,
                                    health=self.health, find_container=self._find_container,
                                    node_name=self.config.node_name, fs_path=self.config.data_dir)
        self.server.start()

    # ---- sources → workers ----

    def _on_pod(self, pod: dict[str, Any]) -> None:
        meta = _meta(pod)
        if is_mirror(pod):
            with self._lock:
                self._mirrors[(meta.get("namespace") or "default", meta.get("name", ""))] = pod
            return
        with self._lock:
            self._api_uids.add(meta.get("uid", ""))
        self.workers.update(meta.get("uid", ""), pod)

    def _on_pod_delete(self, pod: dict[str, Any]) -> None:
        meta = _meta(pod)
        if is_mirror(pod):
            with self._lock:
                self._mirrors.pop((meta.get("namespace") or "default", meta.get("name", "")), None)
            return
        with self._lock:
            self._api_uids.discard(meta.get("uid", ""))
        self.workers.gone(meta.get("uid", ""))

    def _on_static(self, pods: list[dict]) -> None:
        current = {_meta(p)["uid"]: p for p in pods}
        with self._lock:
            removed = set(self._static) - set(current)
            self._static = current
        for uid, pod in current.items():
            self.workers.update(uid, pod)
        for uid in removed:
            self.workers.gone(uid)
        self._sync_mirrors()

    def _sync_mirrors(self) -> None:
        if self.mirror_pods is None:
            return
        with self._lock:
            static = list(self._static.values())
        try:
            self.mirror_pods.sync(static)
        except Exception as exc:  # the API server may be away; the next housekeeping retries
            log.warning("mirror pod sync failed: %s", exc)

    def _mirror_of(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        meta = _meta(pod)
        with self._lock:
            return self._mirrors.get((meta.get("namespace") or "default", meta.get("name", "")))

    def _on_pleg(self, uid: str) -> None:
        self.workers.wake(uid)

    def _pod_list(self) -> list[dict]:
        return [dict(p) for p in self.workers.pods()]

    def _find_container(self, namespace: str, name: str, container: str) -> str | None:
        for pod in self.workers.pods():
            meta = _meta(pod)
            if (meta.get("namespace") or "default") == namespace and meta.get("name") == name:
                latest = self.pleg.cache.get(meta.get("uid", "")).latest(container)
                return latest.id if latest is not None else None
        return None

    # ---- housekeeping ----

    def _housekeeping(self) -> None:
        last_resync = time.monotonic()
        while not self._stop.wait(HOUSEKEEPING_PERIOD):
            try:
                self._kill_orphans()
                self.syncer.gc_backoff()
                if time.monotonic() - last_resync >= self.config.sync_frequency:
                    last_resync = time.monotonic()
                    self.network.manager.ensure_host()
                    self._sync_mirrors()
            except Exception:  # housekeeping must go on whatever one pass meets
                log.exception("housekeeping failed")

    def _kill_orphans(self) -> None:
        """Pods the runtime has that no source has (deleted while the kubelet was away): killed, removed."""
        if self.informer is None or not self.informer.has_synced():
            return
        with self._lock:
            wanted = self._api_uids | set(self._static)
        for uid in self.pleg.cache.uids():
            if uid not in wanted and uid not in self.workers.uids():
                log.info("pod %s is not known to any source: killing it", uid)
                self.workers.gone(uid)

    # ---- one sync of one pod ----

    def _sync(self, item: WorkItem) -> WorkResult:
        wait = CACHE_WAIT_PERIODS * self.config.pleg_relist_period + 1
        status = self.pleg.cache.get_newer_than(item.uid, item.since, timeout=wait)
        if status is None:
            return WorkResult(retry_after=self.config.pleg_relist_period)
        if item.gone or item.pod is None:
            return self._sync_gone(item, status)
        uid = item.uid
        last = self.status.get(uid)
        pod = {**item.pod, "status": last} if last is not None else dict(item.pod)
        if _meta(pod).get("deletionTimestamp"):
            return self._sync_terminating(pod, status)
        result = self.syncer.sync_pod(pod, status)
        for step in result.errors:
            log.info("pod %s/%s: %s %s: %s: %s", _meta(pod).get("namespace"), _meta(pod).get("name"),
                     step.action, step.target, step.reason, step.message)
        reasons = self._reasons.setdefault(uid, {})
        running = {c.name for c in status.containers if c.state is ContainerState.RUNNING}
        for name in (*result.started, *running):
            reasons.pop(name, None)
        reasons.update(result.waiting)
        self.status.set_pod_status(pod, status, waiting_reasons=reasons)
        return WorkResult(retry_after=result.retry_after, relist=result.started_any)

    def _sync_terminating(self, pod: dict[str, Any], status: PodStatus) -> WorkResult:
        if not pod_finished(status):
            self.syncer.kill_pod(pod, status)  # blocks up to the grace period; PLEG then wakes us
            return WorkResult(retry_after=self.config.pleg_relist_period)
        self.status.set_pod_status(pod, status, waiting_reasons=self._reasons.get(_meta(pod).get("uid", "")))
        errors = [s for s in self.syncer.kill_pod(pod, status, remove=True) if not s.ok]
        if errors or not self.status.can_be_deleted(pod, status) or not self.status.confirm_delete(pod):
            return WorkResult(retry_after=max(1.0, self.config.pleg_relist_period))
        return WorkResult()  # the informer's delete event ends the worker

    def _sync_gone(self, item: WorkItem, status: PodStatus) -> WorkResult:
        pod = item.pod or {"metadata": {"uid": item.uid, "name": status.name, "namespace": status.namespace},
                           "spec": {}}
        errors = [s for s in self.syncer.kill_pod(pod, status, remove=True) if not s.ok]
        if errors:
            return WorkResult(retry_after=max(1.0, self.config.pleg_relist_period))
        self.status.forget(item.uid)
        self._reasons.pop(item.uid, None)
        return WorkResult(done=True)
