"""The kubelet: starts the node agent's parts and runs them.

Start-up order (upstream cmd/kubelet/app/server.go RunKubelet → kubelet.go Run, what applies here):
  1. event recorder (component "kubelet", host = node) and the birth cry "Starting kubelet." on the Node;
  2. OOM score adjustment -999 for this process (best effort: needs CAP_SYS_RESOURCE);
  3. the parts, built and wired once by `nodeagent.parts.build_parts` with the start-up I/O they need:
     Docker reached, the Node registered (NodeReporter), the pod network set up from the podCIDR;
  4. PLEG: one relist before anything else, so the pod cache holds the pods already running (adoption:
     their containers match their specs' hashes and are left alone), then its threads;
  5. pod sources: the API server's pods with fieldSelector spec.nodeName=<node> (an informer), and the
     static pod file/URL sources with their mirror pods;
  6. the node status/lease loop, the HTTP server, and a housekeeping loop (orphan pods, back-off GC,
     mirror pods, bridge, rules and hostPort rules every resync). Pod workers run
     `nodeagent.pod_lifecycle.PodLifecycle` per pod;
  7. garbage collection (nodeagent/gc/): dead containers and sandboxes every containerGCPeriod (1m),
     unused images every imageGCPeriod (5m).
`stop()` ends every thread and leaves containers, network and IPAM state in place: a later `start()` on
the same data dir adopts them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from control.client.events import EventRecorder
from control.client.rest import RESTClient
from nodeagent.config import KubeletConfig
from nodeagent.gc.manager import run_container_gc, run_image_gc
from nodeagent.parts import KubeletError, KubeletParts, build_parts, node_reference

__all__ = ["Kubelet", "KubeletError"]

log = logging.getLogger(__name__)

HOUSEKEEPING_PERIOD = 2.0  # upstream housekeepingPeriod


def _set_oom_score_adj(value: int) -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(value))
    except OSError as exc:
        log.info("cannot set oom_score_adj %d: %s", value, exc)


class Kubelet:
    """Start, run and stop one node's kubelet. `parts` is None until `start` has built them."""

    def __init__(self, config: KubeletConfig, client: RESTClient, *, extra_labels: Mapping[str, str] | None = None,
                 oom_score_adj: int | None = -999) -> None:
        self.config = config
        self.client = client
        self.extra_labels = dict(extra_labels or {})
        self.oom_score_adj = oom_score_adj
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._parts: KubeletParts | None = None
        self._recorder: EventRecorder | None = None

    @property
    def node_name(self) -> str:
        return self.config.node_name

    @property
    def parts(self) -> KubeletParts | None:
        """The running kubelet's parts (None before `start` built them)."""
        return self._parts

    # ---- lifecycle ----

    def start(self) -> None:
        config = self.config
        self._stop.clear()
        recorder = self._recorder = EventRecorder(self.client, component="kubelet", host=config.node_name)
        recorder.event(node_reference(config.node_name), "Normal", "Starting", "Starting kubelet.")
        if self.oom_score_adj is not None:
            _set_oom_score_adj(self.oom_score_adj)
        parts = self._parts = build_parts(config, self.client, recorder=recorder, health=self.health,
                                          extra_labels=self.extra_labels, stop=self._stop)
        parts.pleg.relist()  # adoption: the cache knows every running pod before any worker decides
        parts.pleg.start()
        self._spawn("local-path-provisioner", parts.local_path.run, self._stop)  # its informers start with the sources'
        parts.sources.start(self._stop)
        self._spawn("node-status", parts.reporter.run, self._stop)
        self._spawn("pod-routes", parts.pod_routes.run, self._stop)
        parts.server.start()
        self._spawn("housekeeping", self._housekeeping, parts)
        self._start_garbage_collection(parts, recorder)
        log.info("kubelet %s started (podCIDR %s)", config.node_name, parts.pod_cidr)

    def stop(self) -> None:
        """Stop every thread; containers, network and state stay (a later start adopts them)."""
        self._stop.set()
        parts = self._parts
        if parts is not None:
            parts.sources.stop()
            parts.workers.stop()
            parts.probes.stop()
            parts.pleg.stop()
            parts.server.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads = []
        if self._recorder is not None:
            self._recorder.shutdown(timeout=2)

    def is_ready(self) -> bool:
        return self._parts is not None and self._parts.reporter.ready

    def health(self) -> list[str]:
        """Problems that make the node not ready (upstream's runtime/PLEG health checks)."""
        if self._parts is None:
            return ["PLEG is not started"]
        healthy, message = self._parts.pleg.healthy()
        return [] if healthy else [f"PLEG is not healthy: {message}"]

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _start_garbage_collection(self, parts: KubeletParts, recorder: EventRecorder) -> None:
        """upstream StartGarbageCollection: containers every containerGCPeriod, images every imageGCPeriod
        (unless the image GC is off), each first round at once."""
        node_ref = node_reference(self.config.node_name)
        self._spawn("container-gc", lambda: run_container_gc(
            parts.container_gc, period=self.config.container_gc_period, stop=self._stop, recorder=recorder,
            node_ref=node_ref))
        if parts.image_gc is not None:
            image_gc = parts.image_gc
            self._spawn("image-gc", lambda: run_image_gc(
                image_gc, period=self.config.image_gc_period, stop=self._stop, recorder=recorder, node_ref=node_ref))

    # ---- housekeeping ----

    def _housekeeping(self, parts: KubeletParts) -> None:
        last_resync = time.monotonic()
        while not self._stop.wait(HOUSEKEEPING_PERIOD):
            try:
                self._kill_orphans(parts)
                parts.probes.cleanup_pods(parts.workers.uids())  # upstream HandlePodCleanups
                parts.syncer.gc_backoff()
                if time.monotonic() - last_resync >= self.config.sync_frequency:
                    last_resync = time.monotonic()
                    parts.network.manager.ensure_host()
                    parts.hostports.resync()
                    parts.sources.sync_mirrors()
            except Exception:
                log.exception("housekeeping failed")

    @staticmethod
    def _kill_orphans(parts: KubeletParts) -> None:
        """Pods the runtime has that no source has (deleted while the kubelet was away): killed, removed."""
        wanted = parts.sources.wanted()
        if wanted is None:
            return
        for uid in parts.pleg.cache.uids():
            if uid not in wanted and uid not in parts.workers.uids():
                log.info("pod %s is not known to any source: killing it", uid)
                parts.workers.gone(uid)
