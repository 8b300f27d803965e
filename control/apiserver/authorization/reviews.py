"""The access reviews and SelfSubjectReview (upstream: pkg/registry/authorization/{subjectaccessreview,
localsubjectaccessreview,selfsubjectaccessreview,selfsubjectrulesreview}/rest.go, pkg/registry/
authentication/selfsubjectreview/rest.go, pkg/apis/authorization/validation, and
k8s.io/apiserver/pkg/authorization/util AuthorizationAttributesFrom).

Each is created (201) and answered, never stored. SubjectAccessReview asks about any user (spec.user,
groups, extra, uid), the local one about a user within the URL's namespace, the self ones about the
requester. The answer is the authorizer chain's: `status.allowed`, `denied` for an explicit deny, `reason`.
SelfSubjectRulesReview lists the RBAC rules the requester holds in `spec.namespace` (`incomplete` with the
resolution errors). These functions are pure over the decoded body; the server routes and decodes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.authorizer import Chain
from control.apiserver.authorization.rbac import aggregate_errors
from control.apiserver.status import APIError

AUTHORIZATION = "authorization.k8s.io/v1"
AUTHENTICATION = "authentication.k8s.io/v1"


def _spec(body: Any, kind: str, api_version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(body, dict):
        raise status.bad_request(f"expected a {kind} object")
    if body.get("kind") not in (None, kind) or body.get("apiVersion") not in (None, api_version):
        raise status.bad_request(f"expected kind {kind}, apiVersion {api_version}")
    spec = body.get("spec")
    metadata = body.get("metadata")
    return (dict(spec) if isinstance(spec, dict) else {}), (dict(metadata) if isinstance(metadata, dict) else {})


def _invalid(kind: str, errors: list[FieldError]) -> APIError:
    return status.invalid(kind, "", errors, group="authorization.k8s.io")


def _attribute_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        return [FieldError.invalid("spec.nonResourceAttributes", non_resource,
                                   "cannot be specified in combination with resourceAttributes")]
    if resource is None and non_resource is None:
        return [FieldError.invalid("spec.resourceAttributes", None,
                                   "exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    return []


def _no_subject(spec: Mapping[str, Any]) -> FieldError:
    return FieldError.invalid("spec.user", spec.get("user", ""), "at least one of user or group must be specified")


def attributes_from(user: UserInfo, spec: Mapping[str, Any]) -> Attributes:
    """AuthorizationAttributesFrom: the question a review's spec asks about `user`."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, Mapping):
        return Attributes(user=user, verb=str(resource.get("verb", "")), resource_request=True,
                          namespace=str(resource.get("namespace", "")), api_group=str(resource.get("group", "")),
                          api_version=str(resource.get("version", "")), resource=str(resource.get("resource", "")),
                          subresource=str(resource.get("subresource", "")), name=str(resource.get("name", "")))
    non_resource = spec.get("nonResourceAttributes")
    non_resource = non_resource if isinstance(non_resource, Mapping) else {}
    return Attributes(user=user, verb=str(non_resource.get("verb", "")), path=str(non_resource.get("path", "")))


def _user_from_spec(spec: Mapping[str, Any]) -> UserInfo:
    groups = spec.get("groups") if isinstance(spec.get("groups"), list) else []
    extra = spec.get("extra") if isinstance(spec.get("extra"), Mapping) else {}
    return UserInfo(str(spec.get("user", "")), uid=str(spec.get("uid", "")),
                    groups=tuple(str(g) for g in groups or []),
                    extra=tuple((str(k), tuple(str(v) for v in vs)) for k, vs in (extra or {}).items()
                                if isinstance(vs, list)))


def _answer(kind: str, metadata: dict[str, Any], spec: dict[str, Any], verdict_status: dict[str, Any],
            api_version: str = AUTHORIZATION) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": api_version, "metadata": metadata, "spec": spec, "status": verdict_status}


def _decide(chain: Chain, attributes: Attributes) -> dict[str, Any]:
    verdict = chain.authorize(attributes)
    out: dict[str, Any] = {"allowed": verdict.allowed}
    if verdict.decision.value == "deny":
        out["denied"] = True
    if verdict.reason:
        out["reason"] = verdict.reason
    return out


def subject_access_review(body: Any, chain: Chain) -> dict[str, Any]:
    spec, metadata = _spec(body, "SubjectAccessReview", AUTHORIZATION)
    errors = _attribute_errors(spec)
    if not spec.get("user") and not spec.get("groups"):
        errors.append(_no_subject(spec))
    if errors:
        raise _invalid("SubjectAccessReview", errors)
    return _answer("SubjectAccessReview", metadata, spec, _decide(chain, attributes_from(_user_from_spec(spec), spec)))


def local_subject_access_review(body: Any, namespace: str, chain: Chain) -> dict[str, Any]:
    spec, metadata = _spec(body, "LocalSubjectAccessReview", AUTHORIZATION)
    errors: list[FieldError] = []
    resource = spec.get("resourceAttributes")
    if not isinstance(resource, Mapping):
        errors.append(FieldError.required("spec.resourceAttributes", ""))
    if spec.get("nonResourceAttributes") is not None:
        errors.append(FieldError.invalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                                         "disallowed on this kind of request"))
    if not spec.get("user") and not spec.get("groups"):
        errors.append(_no_subject(spec))
    if errors:
        raise _invalid("LocalSubjectAccessReview", errors)
    if metadata.get("namespace", namespace) != namespace or (resource or {}).get("namespace", namespace) != namespace:
        raise status.bad_request(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    metadata["namespace"] = namespace
    spec["resourceAttributes"] = {**(resource or {}), "namespace": namespace}
    return _answer("LocalSubjectAccessReview", metadata, spec,
                   _decide(chain, attributes_from(_user_from_spec(spec), spec)))


def self_subject_access_review(body: Any, requester: UserInfo, chain: Chain) -> dict[str, Any]:
    spec, metadata = _spec(body, "SelfSubjectAccessReview", AUTHORIZATION)
    if errors := _attribute_errors(spec):
        raise _invalid("SelfSubjectAccessReview", errors)
    return _answer("SelfSubjectAccessReview", metadata, spec, _decide(chain, attributes_from(requester, spec)))


def self_subject_rules_review(body: Any, requester: UserInfo, chain: Chain) -> dict[str, Any]:
    spec, metadata = _spec(body, "SelfSubjectRulesReview", AUTHORIZATION)
    namespace = spec.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise status.bad_request("no namespace on request")
    rules, errors = chain.rbac.rules_for(requester, namespace)
    review_status: dict[str, Any] = {
        "resourceRules": [{k: v for k, v in r.to_json().items() if k != "nonResourceURLs"}
                          for r in rules if not r.non_resource_urls],
        "nonResourceRules": [{"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)}
                             for r in rules if r.non_resource_urls],
        "incomplete": bool(errors)}
    if errors:
        review_status["evaluationError"] = aggregate_errors(errors)
    return _answer("SelfSubjectRulesReview", metadata, spec, review_status)


def self_subject_review(body: Any, requester: UserInfo, *, now: datetime) -> dict[str, Any]:
    """authentication.k8s.io/v1 SelfSubjectReview: who the server thinks the requester is."""
    _, metadata = _spec(body, "SelfSubjectReview", AUTHENTICATION)
    metadata = copy.deepcopy(metadata)
    metadata["creationTimestamp"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"kind": "SelfSubjectReview", "apiVersion": AUTHENTICATION, "metadata": metadata,
            "status": {"userInfo": requester.to_json()}}
