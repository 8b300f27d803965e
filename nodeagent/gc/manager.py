"""The garbage collectors' I/O: list, decide (nodeagent/gc/containers.py, nodeagent/gc/images.py), remove.

Upstream: kubelet.go StartGarbageCollection (container GC every minute, image GC every five, each first
run at start; an imageGCHighThresholdPercent of 100 turns the image GC off), kuberuntime_gc.go's removal
steps (a container in an unknown state is stopped first and skipped if that fails; a sandbox is stopped,
then removed) and image_gc_manager.go (events on the Node: InvalidDiskCapacity, FreeDiskSpaceFailed, and
ContainerGCFailed / ImageGCFailed when a round fails, the latter only when two rounds in a row fail).

The runtime is reached through two narrow Protocols, so the same code runs against fakes in unit tests
and against Docker in tests/integration/test_kubelet_gc_docker.py. The image filesystem's usage comes
from psutil on Docker's data root (`docker info` DockerRootDir), upstream's cAdvisor ImageFsInfo:
capacity = the filesystem's size, available = what unprivileged writers may still use.

Image removal failures do not stop a round: the next images in the eviction order are tried (as upstream
continues past deletion errors), and the amount still missing is what FreeDiskSpaceFailed reports.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import psutil

from nodeagent.gc.containers import ContainerGCPlan, ContainerGCPolicy, select_evictable
from nodeagent.gc.images import (
    ImageGCPolicy,
    ImageUsage,
    InvalidDiskCapacity,
    ListedImage,
    amount_to_free,
    detect_images,
    select_images_to_free,
    usage_percent,
)
from nodeagent.runtime.interface import ImageRecord, RuntimeFailure
from nodeagent.runtime.types import ContainerRecord

log = logging.getLogger(__name__)

CONTAINER_GC_PERIOD = 60.0  # upstream ContainerGCPeriod
IMAGE_GC_PERIOD = 300.0  # upstream ImageGCPeriod


class EventSink(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


class ContainerGCRuntime(Protocol):
    """What the container GC needs of the runtime."""

    def container_records(self) -> list[ContainerRecord]: ...
    def stop_container(self, container_id: str, grace_seconds: float) -> None: ...
    def remove_container(self, container_id: str) -> None: ...
    def stop_sandbox(self, sandbox_id: str) -> None: ...
    def remove_sandbox(self, sandbox_id: str) -> None: ...


class ImageService(Protocol):
    """What the image GC needs of the runtime."""

    def images(self) -> list[ImageRecord]: ...

    def image_ids_in_use(self) -> set[str]:
        """The image ids of every container on the engine, whatever its state."""
        ...

    def remove_image(self, image_id: str, tags: tuple[str, ...]) -> None: ...


@dataclass(frozen=True)
class ContainerGCResult:
    plan: ContainerGCPlan
    errors: tuple[str, ...] = ()


class ContainerGC:
    """upstream containerGC.GarbageCollect over this kubelet's containers. `known_pods` answers which pod
    uids a source or a pod worker still has, or None until every source has listed once."""

    def __init__(self, runtime: ContainerGCRuntime, policy: ContainerGCPolicy, *,
                 known_pods: Callable[[], frozenset[str] | None], clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.policy = policy
        self._known_pods = known_pods
        self._clock = clock

    def garbage_collect(self) -> ContainerGCResult:
        """One round; raises RuntimeFailure when the runtime cannot list its containers."""
        known = self._known_pods()
        plan = select_evictable(self.runtime.container_records(), self.policy, self._clock(), known_pods=known)
        errors = []
        for eviction in plan.containers:
            try:
                if eviction.stop_first:
                    self.runtime.stop_container(eviction.id, eviction.grace_period)
                self.runtime.remove_container(eviction.id)
                log.info("container GC removed %s (%s of pod %s: %s)", eviction.id[:12], eviction.name,
                         eviction.pod_uid, eviction.reason)
            except RuntimeFailure as exc:
                errors.append(f"removing container {eviction.id[:12]}: {exc}")
        for sandbox_id in plan.sandboxes:
            try:
                self.runtime.stop_sandbox(sandbox_id)
                self.runtime.remove_sandbox(sandbox_id)
                log.info("container GC removed sandbox %s", sandbox_id[:12])
            except RuntimeFailure as exc:
                errors.append(f"removing sandbox {sandbox_id[:12]}: {exc}")
        for error in errors:
            log.warning("container GC: %s", error)
        return ContainerGCResult(plan=plan, errors=tuple(errors))


class ImageGCError(RuntimeError):
    """A round that could not do what the policy asks (its message is the event's)."""


@dataclass(frozen=True)
class ImageGCResult:
    usage_percent: int
    need: int = 0
    freed: int = 0
    removed: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())


def docker_root_usage(path: Callable[[], str]) -> Callable[[], tuple[int, int]]:
    """(capacity, available) in bytes of the filesystem holding `path()` (Docker's data root)."""

    def read() -> tuple[int, int]:
        usage = psutil.disk_usage(path())
        return int(usage.total), int(usage.free)

    return read


def _listed(record: ImageRecord) -> ListedImage:
    return ListedImage(id=record.id, size=record.size, tags=record.repo_tags)


class ImageGCManager:
    """upstream realImageGCManager: records kept across rounds, the disk read, the removals, the events.
    `pinned` holds image references never removed (the pause image)."""

    def __init__(self, images: ImageService, disk_usage: Callable[[], tuple[int, int]], policy: ImageGCPolicy, *,
                 recorder: EventSink, node_ref: Mapping[str, Any], pinned: Collection[str],
                 clock: Callable[[], float] = time.time) -> None:
        self.images = images
        self.disk_usage = disk_usage
        self.policy = policy
        self.recorder = recorder
        self.node_ref = node_ref
        self.pinned = frozenset(pinned)
        self._clock = clock
        self._lock = threading.Lock()
        self.records: dict[str, ImageUsage] = {}

    def detect(self, now: float) -> dict[str, ImageUsage]:
        """Refresh the records from the runtime at `now` (upstream detectImages)."""
        listed = [_listed(r) for r in self.images.images()]
        in_use = self.images.image_ids_in_use()
        with self._lock:
            self.records = detect_images(self.records, listed, in_use, pinned=self.pinned, now=now)
            return dict(self.records)

    def garbage_collect(self) -> ImageGCResult:
        """One round; raises ImageGCError (after its event) when the disk cannot be read sensibly or not
        enough could be freed, RuntimeFailure when the runtime cannot list."""
        capacity, available = self.disk_usage()
        try:
            percent = usage_percent(capacity, available)
            need = amount_to_free(capacity, available, self.policy)
        except InvalidDiskCapacity as exc:
            self.recorder.event(self.node_ref, "Warning", "InvalidDiskCapacity", str(exc))
            raise ImageGCError(str(exc)) from exc
        now = self._clock()
        records = self.detect(now)
        if need <= 0:
            return ImageGCResult(usage_percent=percent)
        log.info("image filesystem usage is at %d%%, over the high threshold (%d%%): trying to free %d bytes",
                 percent, self.policy.high_threshold_percent, need)
        freed, removed, errors = self._free(records, need, now)
        if freed < need:
            message = (f"Failed to garbage collect required amount of images. Attempted to free {need} bytes, "
                       f"but only found {freed} bytes eligible to free.")
            self.recorder.event(self.node_ref, "Warning", "FreeDiskSpaceFailed", message)
            raise ImageGCError(message)
        return ImageGCResult(usage_percent=percent, need=need, freed=freed, removed=tuple(removed),
                             errors=tuple(errors))

    def _free(self, records: Mapping[str, ImageUsage], need: int, now: float) -> tuple[int, list[str], list[str]]:
        freed = 0
        removed: list[str] = []
        errors: list[str] = []
        tried: set[str] = set()
        while freed < need:
            plan = select_images_to_free([r for r in records.values() if r.id not in tried], need - freed,
                                         self.policy, now)
            if not plan:
                break
            for image in plan:
                tried.add(image.id)
                try:
                    self.images.remove_image(image.id, image.tags)
                except RuntimeFailure as exc:
                    errors.append(f"removing image {image.id}: {exc}")
                    log.warning("image GC: removing %s failed: %s", image.id, exc)
                    continue
                log.info("image GC removed %s %s (%d bytes)", image.id, list(image.tags), image.size)
                freed += image.size
                removed.append(image.id)
        with self._lock:
            for image_id in removed:
                self.records.pop(image_id, None)
        return freed, removed, errors


def run_container_gc(gc: ContainerGC, *, period: float, stop: threading.Event, recorder: EventSink,
                     node_ref: Mapping[str, Any]) -> None:
    """Every `period` seconds, the first round at once; a failed round is a ContainerGCFailed event."""
    while True:
        try:
            result = gc.garbage_collect()
            if result.errors:
                raise RuntimeError("; ".join(result.errors))
        except Exception as exc:  # noqa: BLE001 - a failed round is reported; the next one retries
            log.warning("container garbage collection failed: %s", exc)
            recorder.event(node_ref, "Warning", "ContainerGCFailed", str(exc))
        if stop.wait(period):
            return


def run_image_gc(manager: ImageGCManager, *, period: float, stop: threading.Event, recorder: EventSink,
                 node_ref: Mapping[str, Any]) -> None:
    """Every `period` seconds, the first round at once; ImageGCFailed only for repeated failures (the
    first may just be a runtime still starting, as upstream says)."""
    failed_before = False
    while True:
        try:
            manager.garbage_collect()
            failed_before = False
        except Exception as exc:  # noqa: BLE001 - a failed round is reported; the next one retries
            if failed_before:
                log.error("image garbage collection failed multiple times in a row: %s", exc)
                recorder.event(node_ref, "Warning", "ImageGCFailed", str(exc))
            else:
                log.warning("image garbage collection failed once: %s", exc)
            failed_before = True
        if stop.wait(period):
            return
