"""apiextensions.k8s.io/v1 CustomResourceDefinitions (upstream: k8s.io/apiextensions-apiserver/pkg/registry/
customresourcedefinition/strategy.go, and etcd.go whose Delete adds the cleanup finalizer).

The status (acceptedNames, conditions, storedVersions) is written by the API server's CRD controller
(control/apiserver/crd/controller.py), never taken from a client's create or update.
"""

from __future__ import annotations

from typing import Any

from control.apimachinery.validation import FieldError
from control.apiserver.apiextensions import definitions
from control.apiserver.registry.strategies.base import Strategy


class CustomResourceDefinitionStrategy(Strategy):
    tracks_generation = True
    resets_status_on_create = True

    def defaults(self, obj: dict[str, Any]) -> None:
        definitions.defaults(obj)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return definitions.metadata_errors(obj) + definitions.validate(obj, old)

    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        """The cleanup finalizer keeps the CRD until the controller has deleted its objects."""
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if definitions.CLEANUP_FINALIZER not in finalizers:
            finalizers.append(definitions.CLEANUP_FINALIZER)
