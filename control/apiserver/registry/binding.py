"""pods/binding and the `bindings` resource (upstream pkg/registry/core/pod/storage/storage.go BindingREST):
the one write that may set a pod's `spec.nodeName`, which update validation forbids every other writer to
change. It is a REST storage of its own beside the generic store, as upstream: read the pod, let the pod
strategy's `assign_node` decide, write back with compare-and-swap (a lost race is a 409 the scheduler
retries)."""

from __future__ import annotations

from control.apiserver import status
from control.apiserver.registry.store import Registry, encode
from control.apiserver.registry.strategies.pods import assign_node
from control.apiserver.resources import by_path, storage_key
from control.storage.interface import Conflict, KeyNotFound

PODS = by_path("", "v1", "pods")


def bind(registry: Registry, namespace: str, name: str, node_name: str, *, dry_run: bool = False) -> None:
    """Set `spec.nodeName` once, with the PodScheduled condition; a dry run decides the same and stores
    nothing (upstream passes dryRun down to the pod's GuaranteedUpdate)."""
    assert PODS is not None
    pod = registry.must_get(PODS, namespace, name)
    revision = int(pod["metadata"]["resourceVersion"])
    assign_node(pod, node_name, now=registry.clock())
    if dry_run:
        return
    try:
        registry.storage.update(storage_key(PODS, namespace, name), encode(pod), expected_revision=revision)
    except (Conflict, KeyNotFound):
        raise status.conflict("pods/binding", name, status.STALE_OBJECT) from None
