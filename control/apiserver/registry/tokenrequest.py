"""serviceaccounts/token: the TokenRequest API (upstream pkg/registry/core/serviceaccount/storage/token.go,
pkg/apis/authentication/validation ValidateTokenRequest, the v1 defaults of TokenRequestSpec).

`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token` with an authentication.k8s.io/v1 TokenRequest
answers 201 with the same object, `status.token` and `status.expirationTimestamp` filled; nothing is stored.

- `spec.expirationSeconds` defaults to 3600; below 600 or above 2^32 is 422 with upstream's messages.
- `spec.audiences` empty means the API server's own audiences (`--api-audiences`, default the issuer).
- `spec.boundObjectRef` (v1 Pod, Secret or Node) must exist; a pod must run as this service account; a
  `uid` given must match (409 otherwise, as upstream); the token is then valid only while it exists. A
  pod-bound token names the pod's node too.
- A node (`system:node:<name>`) may ask only for a token bound, by name and uid, to a pod scheduled on
  itself (upstream's NodeRestriction admission of serviceaccounts/token, with its messages); the Node
  authorizer has already checked that a pod of the node runs as the account.
- A pod-bound token asking for exactly 3607 seconds for the API server's audiences (what ServiceAccount
  admission writes into every pod) is made valid for a year, with `warnafter` at the hour, as upstream
  does with `--service-account-extend-token-expiration` (on by default): clients that never re-read the
  file keep working. The expiration timestamp answered is the one asked for, so the kubelet still
  refreshes the file hourly.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.admission.chain import forbidden
from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization.node import node_identity
from control.apiserver.registry.store import Registry
from control.apiserver.resources import Resource, by_path
from control.util import satoken

GROUP_VERSION = "authentication.k8s.io/v1"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
WARN_ONLY_EXPIRATION_SECONDS = 3607  # upstream token.WarnOnlyBoundTokenExpirationSeconds
EXTENDED_EXPIRATION_SECONDS = 365 * 24 * 60 * 60  # upstream token.ExpirationExtensionSeconds


@dataclass(frozen=True)
class TokenIssuer:
    """The API server's side of service account tokens: the key it signs with, the `iss` it writes and
    the audiences it accepts (upstream --service-account-issuer, --api-audiences)."""

    key: rsa.RSAPrivateKey
    issuer: str = satoken.DEFAULT_ISSUER
    audiences: tuple[str, ...] = (satoken.DEFAULT_ISSUER,)
    extend_expiration: bool = True


def _resource(plural: str) -> Resource:
    found = by_path("", "v1", plural)
    assert found is not None
    return found


def _ref(obj: dict[str, Any]) -> satoken.Ref:
    meta = obj.get("metadata") or {}
    return satoken.Ref(meta.get("name", ""), meta.get("uid", ""))


def _spec(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise status.bad_request("expected a TokenRequest object")
    if body.get("kind") not in (None, "TokenRequest") or body.get("apiVersion") not in (None, GROUP_VERSION):
        raise status.bad_request(f"expected kind TokenRequest, apiVersion {GROUP_VERSION}")
    spec = body.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}


def validate(spec: dict[str, Any], name: str) -> int:
    """The expiration asked for (defaulted), or 422 as upstream's ValidateTokenRequest."""
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_EXPIRATION_SECONDS
    errors = []
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        errors.append(FieldError.invalid("spec.expirationSeconds", seconds, "must be an integer"))
    elif seconds < MIN_EXPIRATION_SECONDS:
        errors.append(FieldError.invalid("spec.expirationSeconds", seconds,
                                         "may not specify a duration less than 10 minutes"))
    elif seconds > MAX_EXPIRATION_SECONDS:
        errors.append(FieldError.invalid("spec.expirationSeconds", seconds,
                                         "may not specify a duration larger than 2^32 seconds"))
    audiences = spec.get("audiences")
    if audiences is not None and (not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences)):
        errors.append(FieldError.invalid("spec.audiences", audiences, "must be a list of strings"))
    if errors:
        raise status.invalid("TokenRequest", name, errors, group="authentication.k8s.io")
    assert isinstance(seconds, int)
    return seconds


def _bound_object(registry: Registry, namespace: str, account: str, ref: Any) -> dict[str, satoken.Ref]:
    """The claims naming the bound object (and a pod's node); 400/404/409 as upstream."""
    if not isinstance(ref, dict):
        raise status.bad_request("spec.boundObjectRef: expected an object")
    kind, api_version, name = str(ref.get("kind") or ""), ref.get("apiVersion", "v1"), ref.get("name") or ""
    plural = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}.get(kind)
    if api_version != "v1" or plural is None:
        group_version = api_version if "/" in str(api_version) else f"/{api_version}"  # Go's GroupVersionKind
        raise status.bad_request(f"cannot bind token to object of type {group_version}, Kind={kind}")
    obj = registry.get(_resource(plural), "" if plural == "nodes" else namespace, name)
    if obj is None:
        raise status.not_found(plural, name)
    refs = {kind.lower(): _ref(obj)}
    if plural == "pods":
        spec = obj.get("spec") or {}
        if (spec.get("serviceAccountName") or "default") != account:
            raise status.bad_request(f'cannot bind token for serviceaccount "{account}" to pod running with '
                                     "different serviceaccount name.")
        if node_name := spec.get("nodeName"):
            node = registry.get(_resource("nodes"), "", node_name)
            if node is not None:
                refs["node"] = _ref(node)
    if ref.get("uid") and ref["uid"] != refs[kind.lower()].uid:
        raise status.conflict(kind, name, f"the UID in the bound object reference ({ref['uid']}) does not match "
                              "the UID in record. The object might have been deleted and then recreated")
    return refs


def node_refusal(node: str, ref: Any, pod: dict[str, Any] | None) -> str | None:
    """Why a node may not have this token (upstream NodeRestriction admitServiceAccount), or None."""
    if not isinstance(ref, dict) or ref.get("apiVersion", "v1") != "v1" or ref.get("kind") != "Pod" \
            or not ref.get("name"):
        return "node requested token not bound to a pod"
    if not ref.get("uid"):
        return "node requested token with a pod binding without a uid"
    if pod is None:
        return None  # the binding's own 404 follows
    if ref["uid"] != (pod.get("metadata") or {}).get("uid"):
        return (f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. The "
                "object might have been deleted and then recreated")
    if (pod.get("spec") or {}).get("nodeName") != node:
        return "node requested token bound to a pod scheduled on a different node"
    return None


def create_token(registry: Registry, issuer: TokenIssuer, namespace: str, name: str, body: Any, *,
                 now: datetime | None = None) -> dict[str, Any]:
    """The answered TokenRequest for `body` (see the module notes)."""
    spec = _spec(body)
    seconds = validate(spec, name)
    account = registry.get(_resource("serviceaccounts"), namespace, name)
    if account is None:
        raise status.not_found("serviceaccounts", name)
    node, is_node = node_identity(authn.current_user.get())
    if is_node:
        ref = spec.get("boundObjectRef")
        pod = registry.get(_resource("pods"), namespace, str(ref.get("name") or "")) if isinstance(ref, dict) \
            and ref.get("kind") == "Pod" else None
        if (why := node_refusal(node, ref, pod)) is not None:
            raise forbidden(_resource("serviceaccounts"), name, why)
    audiences = tuple(spec.get("audiences") or issuer.audiences)
    bound = _bound_object(registry, namespace, name, spec["boundObjectRef"]) if spec.get("boundObjectRef") else {}
    moment = now or datetime.now(UTC)
    issued_at = int(moment.timestamp())
    expires_at, warn_after = issued_at + seconds, None
    if (issuer.extend_expiration and "pod" in bound and seconds == WARN_ONLY_EXPIRATION_SECONDS
            and set(audiences) <= set(issuer.audiences)):
        expires_at, warn_after = issued_at + EXTENDED_EXPIRATION_SECONDS, issued_at + seconds
    claims = satoken.BoundClaims(namespace=namespace, account=_ref(account), audiences=audiences,
                                 issued_at=issued_at, expires_at=expires_at, warn_after=warn_after,
                                 token_id=str(uuid.uuid4()), **bound)
    token = satoken.sign(issuer.key, satoken.bound_payload(issuer.issuer, claims))
    expiration = datetime.fromtimestamp(issued_at + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    metadata = dict(body.get("metadata") or {}) if isinstance(body.get("metadata"), dict) else {}
    metadata.update({"name": name, "namespace": namespace,
                     "creationTimestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ")})
    out_spec = {**spec, "audiences": list(audiences), "expirationSeconds": seconds}
    return {"kind": "TokenRequest", "apiVersion": GROUP_VERSION, "metadata": metadata, "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": expiration}}
