"""CustomResourceDefinitions and custom objects shared by the CRD tests (unit and e2e)."""

from __future__ import annotations

import copy
from typing import Any

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas",
                                          "message": "replicas must not exceed maxReplicas"}],
            "properties": {
                "size": {"type": "string", "enum": ["small", "large"]},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "maxReplicas": {"type": "integer", "default": 10},
                "color": {"type": "string", "default": "blue", "pattern": "^[a-z]+$"},
                "email": {"type": "string", "format": "email"},
                "port": {"x-kubernetes-int-or-string": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string", "nullable": True},
            },
        },
        "status": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
        },
    },
}


def widget_crd(*, scope: str = "Namespaced", group: str = "example.com", plural: str = "widgets",
               kind: str = "Widget", short_names: tuple[str, ...] = ("wd",)) -> dict[str, Any]:
    """Widgets: v1 (storage; status and scale subresources, printer columns, a schema with defaults, an
    enum, a CEL rule) and v1beta1 (served, unknown fields kept)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind, "shortNames": list(short_names),
                      "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                          "statusReplicasPath": ".status.replicas",
                                                          "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                     {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                     {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                 ]},
                {"name": "v1beta1", "served": True, "storage": False,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
            ],
        },
    }


def widget(name: str, *, api_version: str = "example.com/v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Widget", "metadata": {"name": name}, "spec": spec}
