"""Creating and deleting a workload controller's pods, in one place for the ReplicaSet (and
ReplicationController), DaemonSet and Job controllers: the writes, their events, the namespace-terminating
case and the expectation bookkeeping around them.

Upstream: pkg/controller/controller_utils.go (`RealPodControl.CreatePods`/`DeletePod`: the events
SuccessfulCreate "Created pod: NAME", FailedCreate "Error creating: ERR", SuccessfulDelete "Deleted pod:
NAME", FailedDelete "Error deleting: ERR"; no labels → "unable to create pods, no labels"; no FailedCreate
event when the namespace is terminating; `slowStartBatch`), and the bookkeeping each caller writes around
it (replica_set.go `manageReplicas`, daemon_controller.go `syncNodes`, job_controller.go `manageJob`):
expectations set before the first write, a create never tried or a delete that failed is "observed" by
the controller itself because the informer will never report it.

`sync_pods(key, owner, create=[pods], delete=[pods])`, in that order:
1. Set the expectations once: `creates` = how many pods will be created, `deletes` = the keys of the pods
   to delete (the UID-tracking flavour remembers them; a record is replaced, as upstream's
   SetExpectations).
2. Create in slow-start batches 1, 2, 4, … concurrently; after a batch with a failure the rest are not
   tried and are un-expected. A create refused because the namespace is terminating is no failure and
   records nothing: every create would fail the same way (upstream's callers return nil there too).
3. Delete concurrently; a pod already gone counts as neither deleted nor failed.
4. Return the counts and the first failure (creates first): the caller raises it for the retry.

Departure: upstream's callers each wrap RealPodControl; here the callers hand over the pods they want
made (built by their pure decisions) and the pods to go, and this module owns the loop around the writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from control.api.typed import Pod, TypedObject
from control.apimachinery.meta import key_of
from control.client.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, NotFound, has_status_cause
from control.client.events import EventRecorder
from control.client.paths import resource_path
from control.controllers.shared.base import APIClient
from control.controllers.shared.controller_utils import slow_start_batch

log = logging.getLogger(__name__)

DELETE_WORKERS = 64  # concurrent deletes of one sync (upstream starts one goroutine per pod)


class PodExpectations(Protocol):
    """What the pod control needs of a controller's expectations (both flavours of
    shared/expectations.py have it)."""

    def expect_pods(self, key: str, *, creates: int, deletes: Collection[str]) -> None: ...

    def creation_observed(self, key: str) -> None: ...

    def deletion_observed(self, key: str, pod_key: str) -> None: ...


@dataclass(frozen=True)
class PodWrites:
    """What one `sync_pods` did: pods created (or skipped in a terminating namespace), pods deleted, and
    the first failure (None when every write went through)."""

    created: int = 0
    deleted: int = 0
    error: Exception | None = None


class PodControl:
    """Writes one controller's pods; `owner` in every call is the controller object with its apiVersion and
    kind (the events are about it)."""

    def __init__(self, client: APIClient, recorder: EventRecorder, expectations: PodExpectations, *,
                 name: str, delete_workers: int = DELETE_WORKERS) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations
        self.name = name  # the controller's name: the delete threads are named after it
        self.delete_workers = delete_workers

    def sync_pods(self, key: str, owner: Mapping[str, Any], *, create: Sequence[dict[str, Any]] = (),
                  delete: Sequence[Mapping[str, Any]] = ()) -> PodWrites:
        """Create `create` (each a Pod body) and delete `delete` under the expectations of `key`; nothing
        at all (the expectations untouched) when both are empty."""
        if not create and not delete:
            return PodWrites()
        self.expectations.expect_pods(key, creates=len(create), deletes=[key_of(pod) for pod in delete])
        created, create_error = self._create(key, owner, create) if create else (0, None)
        deleted, delete_error = self._delete(key, owner, delete) if delete else (0, None)
        return PodWrites(created, deleted, create_error or delete_error)

    def _create(self, key: str, owner: Mapping[str, Any],
                pods: Sequence[dict[str, Any]]) -> tuple[int, Exception | None]:
        pending = iter(pods)
        lock = threading.Lock()  # slow_start_batch calls create_one from several threads

        def create_one() -> None:
            with lock:
                pod = next(pending)
            self.create_pod(owner, pod)

        successes, error = slow_start_batch(len(pods), create_one)
        for _ in range(len(pods) - successes):  # never created: the informer will not see them
            self.expectations.creation_observed(key)
        if error is None or isinstance(error, Exception):
            return successes, error
        return successes, Exception(str(error))

    def create_pod(self, owner: Mapping[str, Any], pod: dict[str, Any]) -> None:
        """RealPodControl.createPods: one create with its event; returns quietly when the namespace is
        terminating, raises any other failure."""
        if not Pod(pod).metadata.labels:
            raise ValueError("unable to create pods, no labels")
        namespace = TypedObject(owner).metadata.namespace
        try:
            created = self.client.create(resource_path("v1", "pods", namespace=namespace), pod)
        except ApiError as exc:
            if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                return  # every create would fail the same way; the namespace is going
            self.recorder.eventf(owner, "Warning", "FailedCreate", "Error creating: %s", exc.message)
            raise
        self.recorder.eventf(owner, "Normal", "SuccessfulCreate", "Created pod: %s", created["metadata"]["name"])

    def _delete(self, key: str, owner: Mapping[str, Any],
                pods: Sequence[Mapping[str, Any]]) -> tuple[int, Exception | None]:
        def delete_one(pod: Mapping[str, Any]) -> tuple[bool, Exception | None]:
            metadata = pod["metadata"]
            try:
                self.client.delete(resource_path("v1", "pods", namespace=metadata["namespace"],
                                                 name=metadata["name"]))
            except ApiError as exc:
                self.expectations.deletion_observed(key, key_of(pod))  # the informer will not see it go
                if isinstance(exc, NotFound):
                    return False, None
                self.recorder.eventf(owner, "Warning", "FailedDelete", "Error deleting: %s", exc.message)
                return False, exc
            self.recorder.eventf(owner, "Normal", "SuccessfulDelete", "Deleted pod: %s", metadata["name"])
            return True, None

        with ThreadPoolExecutor(max_workers=min(self.delete_workers, len(pods)),
                                thread_name_prefix=f"{self.name}-delete") as pool:
            results = list(pool.map(delete_one, pods))
        errors = [error for _, error in results if error is not None]
        return sum(1 for done, _ in results if done), errors[0] if errors else None
