"""Versions served as a converted view of the stored version: autoscaling/v1 HorizontalPodAutoscalers over
the stored autoscaling/v2 objects (upstream serves every version of a group from one storage version
through its conversion functions; here only the views in `VIEWS` exist, so the registry, the watch cache and
the strategies keep knowing one version per resource).

Every read converts the stored object out, every write converts the body in (control/api/autoscaling.py)
and goes through the registry under the storage resource, so defaults, validation, admission and the
resourceVersion checks are those of the stored version. Tables print the stored object (the columns are
the same). Not done: watching a view (405; clients watch the preferred version, which is the stored one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.api import autoscaling
from control.apiserver.resources import Resource

Convert = Callable[[Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class View:
    to_storage: Convert  # a body written to the view → the stored version
    from_storage: Convert  # a stored object → the view


VIEWS: Mapping[tuple[str, str, str], View] = {
    ("autoscaling", "v1", "horizontalpodautoscalers"): View(autoscaling.from_v1, autoscaling.to_v1),
}


def view_of(resource: Resource) -> View | None:
    return VIEWS.get((resource.group, resource.version, resource.plural)) if resource.storage_version else None
