"""CustomResourceDefinition conversion webhooks: objects sent to a webhook in a ConversionReview to change
their version (`spec.conversion.strategy: Webhook`).

Upstream: k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go (the request
`{uid, desiredAPIVersion, objects}`, the answer's `result.status` Success or its message, as many
`convertedObjects` as sent, each in the desired apiVersion, with the same kind, name, namespace and uid;
errors 500 `conversion webhook for <group>/<version>, Kind=<kind> failed: <why>`), reached as admission
webhooks are (control/apiserver/admission/webhook/client.py: `url` or `service`, `caBundle`, endpoint or
ClusterIP routing), with upstream's 30 s timeout.

Departures: one review per object (upstream sends a list's objects in one review); only labels and
annotations of the converted metadata are taken, as upstream's restrictions allow, the rest kept.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from control.apiserver import status
from control.apiserver.admission.webhook import client
from control.apiserver.status import APIError

TIMEOUT_SECONDS = 30.0


class WebhookConverter:
    """Converts custom objects through the definition's webhook; one per server."""

    def __init__(self, reader: client.Reader, *, endpoint_routing: bool, poster: client.Poster | None = None) -> None:
        self._reader = reader
        self._endpoint_routing = endpoint_routing
        self._poster = poster or client.Poster()

    def convert(self, obj: dict[str, Any], desired: str, webhook: Mapping[str, Any]) -> None:
        """`obj` in the apiVersion `desired`, in place; APIError 500 when the webhook fails."""
        if obj.get("apiVersion") == desired:
            return
        kind = f"{obj.get('apiVersion', '')}, Kind={obj.get('kind', '')}"
        try:
            converted = self._ask(obj, desired, webhook)
        except (client.ResolveError, RuntimeError, ValueError) as exc:
            raise status.internal_error(f"conversion webhook for {kind} failed: {exc}") from None
        except _Refused as exc:
            raise APIError(500, "InternalError", f"conversion webhook for {kind} failed: {exc}") from None
        metadata = obj.get("metadata") or {}
        new_metadata = converted.get("metadata") or {}
        for key in ("labels", "annotations"):
            if key in new_metadata:
                metadata[key] = new_metadata[key]
        obj.clear()
        obj.update({**converted, "metadata": metadata})

    def _ask(self, obj: Mapping[str, Any], desired: str, webhook: Mapping[str, Any]) -> dict[str, Any]:
        versions = webhook.get("conversionReviewVersions") or ["v1"]
        api_version = "apiextensions.k8s.io/v1" if "v1" in versions else "apiextensions.k8s.io/v1beta1"
        uid = str(uuid.uuid4())
        review = {"kind": "ConversionReview", "apiVersion": api_version,
                  "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [obj]}}
        target = client.resolve(webhook.get("clientConfig") or {}, self._reader,
                                endpoint_routing=self._endpoint_routing, timeout=TIMEOUT_SECONDS)
        answer = json.loads(self._poster.post(target, json.dumps(review).encode(), timeout=TIMEOUT_SECONDS))
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise ValueError("no response provided")
        if response.get("uid") != uid:
            raise ValueError(f"expected response.uid={uid}, got {response.get('uid', '')}")
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise _Refused(result.get("message") or "conversion failed")
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != 1 or not isinstance(converted[0], dict):
            count = len(converted) if isinstance(converted, list) else 0
            raise ValueError(f"expected 1 converted objects, got {count}")
        one: dict[str, Any] = converted[0]
        if one.get("apiVersion") != desired:
            raise ValueError(f"invalid converted object at index 0: expected apiVersion {desired}, got "
                             f"{one.get('apiVersion', '')}")
        if one.get("kind") != obj.get("kind"):
            raise ValueError(f"invalid converted object at index 0: expected kind {obj.get('kind', '')}, got "
                             f"{one.get('kind', '')}")
        return one


class _Refused(Exception):
    """The webhook answered with a result other than Success; its message."""
