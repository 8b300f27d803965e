"""Priority (upstream: plugin/pkg/admission/priority/admission.go), a mutating and a validating plugin.

- Mutating (upstream's Admit, before the strategy validates): a created pod's spec.priority,
  priorityClassName and preemptionPolicy come from its PriorityClass or the globalDefault one (403 for an
  unknown class or a priority that disagrees with it); a pod update that leaves them out keeps them.
- Validating (upstream's Validate): at most one globalDefault PriorityClass.
The decisions are control.api.priority's; here the classes are read and the answer raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any

from control.api import priority
from control.api.typed import TypedObject
from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.resources import by_path

PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")


def _priority_classes(reader: Reader) -> list[dict[str, Any]]:
    assert PRIORITY_CLASSES is not None
    return reader.list_all(PRIORITY_CLASSES, "")


class PodPriority:
    """The mutating half: pods' priority from their class."""

    name = "Priority"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def admit(self, attributes: Attributes) -> None:
        obj, old = attributes.obj, attributes.old
        if attributes.resource.plural != "pods" or attributes.subresource or obj is None:
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict) or attributes.operation is Operation.DELETE:
            return
        if old is not None:
            old_spec = old.get("spec")
            if isinstance(old_spec, Mapping):
                priority.keep_on_update(spec, old_spec)
            return
        why = priority.admit_pod(spec, _priority_classes(self._reader))
        if why is not None:
            raise forbidden(attributes.resource, attributes.generate_name or attributes.name, why)


class OneGlobalDefault:
    """The validating half: one globalDefault PriorityClass."""

    name = "Priority"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        obj = attributes.obj
        if attributes.resource.plural != "priorityclasses" or attributes.subresource or obj is None:
            return
        why = priority.check_global_default(obj, _priority_classes(self._reader), update=attributes.old is not None)
        if why is not None:
            raise forbidden(attributes.resource, TypedObject(obj).metadata.name, why)
