"""PriorityClasses (upstream pkg/registry/scheduling/priorityclass/storage/storage.go and strategy.go).

The two system classes (control/api/priority.py), created at start-up by controlplane/bootstrap.py, cannot be deleted:
upstream's REST.Delete answers 403 Forbidden "this is a system priority class and cannot be deleted".
Everything else is the plain kind's: defaults (preemptionPolicy) and validation come from control.api,
the one-globalDefault rule from the Priority admission plugin (admission/priority.py).
"""

from __future__ import annotations

from typing import Any

from control.api.priority import SYSTEM_PRIORITY_CLASS_NAMES
from control.api.typed import TypedObject
from control.apiserver.admission.chain import forbidden
from control.apiserver.registry.strategies.base import Strategy


class PriorityClassStrategy(Strategy):
    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        name = TypedObject(obj).metadata.name
        if name in SYSTEM_PRIORITY_CLASS_NAMES:
            raise forbidden(self.resource, name, "this is a system priority class and cannot be deleted")
