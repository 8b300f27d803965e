"""ResourceQuota admission (upstream: plugin/pkg/admission/resourcequota/admission.go and controller.go),
last in the chain.

On create, usage of the namespace plus the new object must fit every matching quota's `spec.hard`, else
403 with upstream's `exceeded quota:` message. Usage is computed from the stored objects (the quota
controller keeps `status.used` current for readers), so the check and the storage write of two creates a
quota counts must not interleave, or both could take the last unit: `QuotaAdmission.admit` holds the
namespace's lock from the check until the caller's write is done. A create no quota of its namespace
counts (most creates, and every create in a namespace without quotas) takes no lock at all and runs in
parallel. Upstream batches the evaluations per namespace through a work queue and writes `status.used`
with compare-and-swap instead; the effect a client sees is the same.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from control.api import quota
from control.api.typed import TypedObject
from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.resources import Resource, by_path

RESOURCE_QUOTAS = by_path("", "v1", "resourcequotas")


def counting_quotas(reader: Reader, resource: Resource, namespace: str,
                    obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ResourceQuotas of `namespace` that count `obj` (see quota.counts)."""
    assert RESOURCE_QUOTAS is not None
    return [q for q in reader.list_all(RESOURCE_QUOTAS, namespace)
            if quota.counts(q, resource.plural, obj, group=resource.group)]


def check_quota(reader: Reader, resource: Resource, namespace: str, obj: Mapping[str, Any]) -> None:
    """403 when creating `obj` would exceed a ResourceQuota of its namespace."""
    quotas = counting_quotas(reader, resource, namespace, obj)
    if not quotas:
        return
    delta = quota.usage(resource.plural, obj, group=resource.group)
    existing = reader.list_all(resource, namespace)
    for one in quotas:
        scoped = [o for o in existing if quota.matches_scope(one, resource.plural, o)]
        used = quota.used_in(resource.plural, scoped, group=resource.group)
        message = quota.check(one, used, delta, obj=obj)
        if message:
            raise forbidden(resource, TypedObject(obj).metadata.name, message)


class QuotaAdmission:
    """Quota admission of creates, serialised per namespace and only where a quota counts."""

    name = "ResourceQuota"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader
        self._guard = threading.Lock()
        # Dropped when no create holds it any more, so namespaces that come and go leave nothing behind.
        self._locks: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()

    def _lock(self, namespace: str) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(namespace)
            if lock is None:
                lock = self._locks[namespace] = threading.Lock()
            return lock

    @contextmanager
    def admit(self, resource: Resource, namespace: str, obj: Mapping[str, Any]) -> Iterator[None]:
        """403 if `obj` exceeds a quota; else the body of the `with` (the write) runs admitted."""
        if not counting_quotas(self._reader, resource, namespace, obj):
            yield
            return
        with self._lock(namespace):
            check_quota(self._reader, resource, namespace, obj)  # again, now that no counted create runs
            yield

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        if attributes.operation is Operation.CREATE and attributes.obj is not None and not attributes.subresource:
            hold.enter_context(self.admit(attributes.resource, attributes.namespace, attributes.obj))
