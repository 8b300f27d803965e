"""NamespaceLifecycle (upstream: plugin/pkg/admission/namespace/lifecycle/admission.go), first in the chain.

- A namespaced object can only be created in a namespace that exists and is not Terminating (404 / 403
  `NamespaceTerminating`), so a namespace being deleted cannot gain content its controller would never
  remove.
- The immortal namespaces `default`, `kube-system` and `kube-public` may not be deleted (403, upstream's
  message), since the namespace controller really empties a deleted namespace.
"""

from __future__ import annotations

from control.api.typed import Namespace
from control.apiserver import status
from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.resources import Resource, by_path

NAMESPACES = by_path("", "v1", "namespaces")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def check_delete(resource: Resource, name: str) -> None:
    """On DELETE: the immortal namespaces stay."""
    if resource is NAMESPACES and name in IMMORTAL_NAMESPACES:
        raise forbidden(resource, name, "this namespace may not be deleted")


def check_namespace(reader: Reader, resource: Resource, namespace: str, name: str) -> None:
    """Creation of namespaced content needs a live namespace."""
    assert NAMESPACES is not None
    found = reader.get(NAMESPACES, "", namespace)
    if found is None:
        raise status.not_found("namespaces", namespace)
    live = Namespace(found)
    if live.status.phase == "Terminating" or live.metadata.deletion_timestamp:
        raise forbidden(resource, name, f"unable to create new content in namespace {namespace} because "
                        "it is being terminated", reason_cause="NamespaceTerminating")


class NamespaceLifecycle:
    name = "NamespaceLifecycle"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def admit(self, attributes: Attributes) -> None:
        if attributes.operation is Operation.DELETE:
            check_delete(attributes.resource, attributes.name)
        elif attributes.operation is Operation.CREATE and attributes.resource.namespaced:
            check_namespace(self._reader, attributes.resource, attributes.namespace, attributes.name)
