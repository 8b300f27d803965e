"""The AdmissionReview a webhook is sent and what its answer means (pure).

Upstream: k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go (`CreateAdmissionObjects`,
`VerifyAdmissionResponse`), pkg/admission/plugin/webhook/errors (`ToStatusErr`: `admission webhook "x"
denied the request: msg`, at least 400), pkg/webhook/error.go (`ErrCallingWebhook`: `failed calling webhook
"x": ...`) and mutating/dispatcher.go (a JSONPatch applied to the object).

Departure: the request is AdmissionReview v1 in shape; a webhook that lists only `v1beta1` gets the same body
under `admission.k8s.io/v1beta1` (the two differ only in defaults the server fills in anyway).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from control.apiserver.admission.webhook.matching import GroupVersionResource
from control.apiserver.fieldmanager.patch import PatchError, json_patch
from control.apiserver.status import APIError

_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class CallError(Exception):
    """upstream ErrCallingWebhook: the webhook could not be asked, or answered nonsense; its failurePolicy
    decides. `str()` is upstream's message."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')
        self.webhook = webhook
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    version: str
    kind: str

    def to_json(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class Subject:
    """What is being admitted, as the review names it: `kind`/`resource` as the webhook matched it,
    `request_kind`/`request_resource` as the client sent it."""

    kind: Kind
    resource: GroupVersionResource
    request_kind: Kind
    request_resource: GroupVersionResource
    subresource: str
    name: str
    namespace: str
    operation: str
    user: Mapping[str, Any]
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None
    dry_run: bool


def _gvr(gvr: GroupVersionResource) -> dict[str, str]:
    return {"group": gvr.group, "version": gvr.version, "resource": gvr.resource}


def admission_request(uid: str, subject: Subject) -> dict[str, Any]:
    """The AdmissionRequest (also `request` in CEL expressions)."""
    request: dict[str, Any] = {"uid": uid, "kind": subject.kind.to_json(), "resource": _gvr(subject.resource)}
    if subject.subresource:
        request["subResource"] = subject.subresource
    request["requestKind"] = subject.request_kind.to_json()
    request["requestResource"] = _gvr(subject.request_resource)
    if subject.subresource:
        request["requestSubResource"] = subject.subresource
    if subject.name:
        request["name"] = subject.name
    if subject.namespace:
        request["namespace"] = subject.namespace
    request["operation"] = subject.operation
    request["userInfo"] = dict(subject.user)
    request["object"] = subject.obj
    request["oldObject"] = subject.old
    request["dryRun"] = subject.dry_run
    if subject.operation in _OPTIONS:
        request["options"] = {"kind": _OPTIONS[subject.operation], "apiVersion": "meta.k8s.io/v1"}
    return request


def review_version(versions: Sequence[str]) -> str:
    return "admission.k8s.io/v1" if "v1" in versions or not versions else "admission.k8s.io/v1beta1"


def admission_review(request: Mapping[str, Any], *, api_version: str) -> dict[str, Any]:
    return {"kind": "AdmissionReview", "apiVersion": api_version, "request": dict(request)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A webhook's answer: allowed or not (`status`, the metav1.Status it gave), a JSON patch (a list of
    operations, mutating webhooks only), warnings for the client and audit annotations."""

    allowed: bool
    status: Mapping[str, Any] = field(default_factory=dict)
    patch: list[Any] | None = None
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)


def read_response(webhook: str, body: bytes, *, uid: str, api_version: str) -> Verdict:
    """The Verdict in a webhook's HTTP answer; CallError for anything upstream's VerifyAdmissionResponse
    refuses."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CallError(webhook, f"failed to decode response: {exc}") from None
    if not isinstance(review, dict):
        raise CallError(webhook, "webhook response was absent")
    if review.get("apiVersion") != api_version or review.get("kind") != "AdmissionReview":
        raise CallError(webhook, f"expected webhook response of {api_version}, Kind=AdmissionReview, got "
                                 f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallError(webhook, "webhook response was absent")
    if response.get("uid") != uid:
        raise CallError(webhook, f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    patch = None
    if response.get("patch"):
        patch_type = response.get("patchType")
        if not patch_type:
            raise CallError(webhook, "webhook returned response.patch but not response.patchType")
        if patch_type != "JSONPatch":
            raise CallError(webhook, f'webhook returned invalid response.patchType of "{patch_type}"')
        try:
            patch = json.loads(base64.b64decode(response["patch"], validate=True))
        except (ValueError, TypeError, binascii.Error) as exc:
            raise CallError(webhook, f"failed to decode patch: {exc}") from None
        if not isinstance(patch, list):
            raise CallError(webhook, "failed to decode patch: a JSON patch is a list of operations")
    status = response.get("status")
    warnings = response.get("warnings")
    annotations = response.get("auditAnnotations")
    return Verdict(allowed=response.get("allowed") is True, status=status if isinstance(status, dict) else {},
                   patch=patch,
                   warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
                   audit_annotations={str(k): str(v) for k, v in annotations.items()}
                   if isinstance(annotations, dict) else {})


def denied(webhook: str, status: Mapping[str, Any]) -> APIError:
    """upstream ToStatusErr: the webhook's Status, at least 400, its message after `admission webhook "x"
    denied the request`."""
    denied_by = f'admission webhook "{webhook}" denied the request'
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    message, reason = status.get("message") or "", status.get("reason") or ""
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = status.get("details")
    return APIError(code, str(reason), text, details=details if isinstance(details, dict) else None)


def apply_patch(obj: Mapping[str, Any], patch: list[Any]) -> dict[str, Any]:
    """The object with a webhook's JSONPatch applied; PatchError when it does not apply."""
    patched = json_patch(obj, patch)
    if not isinstance(patched, dict):
        raise PatchError("the patched object is not an object")
    return patched
