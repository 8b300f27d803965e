"""One ordered admission chain, entered once per write (upstream: k8s.io/apiserver/pkg/admission —
interfaces.go `Attributes`, `MutationInterface`, `ValidationInterface`; chain.go `chainAdmissionHandler`;
the kube-apiserver's plugin order in pkg/kubeapiserver/options/plugins.go).

A write builds one `Attributes` and enters `Chain.admit` once: every mutating plugin in order, then the
caller's `prepare` (the strategy's PrepareForCreate/PrepareForUpdate, which upstream's store runs after
mutating admission), then every validating plugin in order, then the body of the `with` — the storage
write — runs. A validating plugin that must keep its decision true until the write is done (quota, which
counts the stored objects) enters a context on the `hold` stack it is given; the chain leaves it after the
write, on success or failure.

Plugins decide for themselves which operations, resources and subresources they look at; a plugin that
has nothing to say returns. The order is the list's: the registry builds the chain once
(admission/plugins.py `chain`), so webhook and Pod Security plugins join by being inserted there.

Departures: no `ObjectInterfaces`, no user info in the attributes (plugins that need the requester read
`authentication.tokens.current_user`, set per request); quota's check runs on a dry run too, as upstream.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from control.apiserver.audit import context as audit_context
from control.apiserver.resources import Resource
from control.apiserver.status import APIError


class Operation(enum.Enum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a plugin is told about one write. `obj` is the object being written (mutating plugins change it
    in place; None for a delete), `old` the stored one (None for a create). `name` is the object's name;
    `generate_name` the prefix it was generated from, which a Forbidden answer names instead, as upstream."""

    operation: Operation
    resource: Resource
    namespace: str
    name: str
    obj: dict[str, Any] | None = None
    old: dict[str, Any] | None = None
    subresource: str = ""
    generate_name: str = ""
    dry_run: bool = False
    # what plugins note for the audit log (upstream Attributes.AddAnnotation): webhooks' auditAnnotations
    annotations: dict[str, str] = field(default_factory=dict)


class Reader(Protocol):
    """What plugins read: the stored objects, through the registry."""

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]: ...


class MutatingPlugin(Protocol):
    name: str

    def admit(self, attributes: Attributes) -> None:
        """Change `attributes.obj` in place, or raise an APIError to refuse the write."""


class ValidatingPlugin(Protocol):
    name: str

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        """Raise an APIError to refuse the write; enter on `hold` what must stay held until it is done."""


class Chain:
    """The mutating plugins, then the validating ones, each list in its order."""

    def __init__(self, mutating: Sequence[MutatingPlugin], validating: Sequence[ValidatingPlugin]) -> None:
        self.mutating = tuple(mutating)
        self.validating = tuple(validating)

    @contextmanager
    def admit(self, attributes: Attributes, *, prepare: Callable[[], None] | None = None) -> Iterator[None]:
        """Admit one write: mutate, `prepare`, validate; the body of the `with` is the write. What the
        plugins annotated goes to the request's audit event, refused or not."""
        try:
            for mutating in self.mutating:
                mutating.admit(attributes)
            if prepare is not None:
                prepare()
            with ExitStack() as hold:
                for validating in self.validating:
                    validating.validate(attributes, hold)
                yield
        finally:
            audit_context.add_annotations(attributes.annotations)


def forbidden(resource: Resource, name: str, why: str, *, reason_cause: str | None = None) -> APIError:
    """Upstream's admission refusal: 403 Forbidden `<resource> "<name>" is forbidden: <why>`."""
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    details: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    if reason_cause:
        details["causes"] = [{"reason": reason_cause, "message": why, "field": "metadata.namespace"}]
    return APIError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', details=details)
