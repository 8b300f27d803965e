"""Who a bearer token is, and the TokenReview API that lets others ask (upstream: k8s.io/apiserver/pkg/
authentication/token/tokenfile, pkg/registry/authentication/tokenreview/storage.go, the types of
k8s.io/api/authentication/v1 TokenReview).

The static tokens are the admin token (`DIR/admin.kubeconfig`) and the node token (`DIR/node-token`: its
password, or the whole `K10…::node:<password>` string); service account tokens (JWTs) are
serviceaccounts.py's.

`POST /apis/authentication.k8s.io/v1/tokenreviews` answers for both kinds with upstream's shape:
`status.authenticated`, `status.user` (username, uid, groups), `status.audiences`, and `status.error` for a
token nobody knows. Kubelets call it to authenticate bearer tokens sent to them (nodeagent/authn.py), as
upstream's webhook token authenticator does. The review is not stored (create only, as upstream); a
caller needs `create` on tokenreviews (upstream's system:auth-delegator role grants it).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from control.apiserver import status

GROUP_VERSION = "authentication.k8s.io/v1"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated (or impersonated) user; `groups` leave out `system:authenticated`, which every
    authenticated user has and `to_json` adds."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = field(default_factory=tuple)
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        groups = [*self.groups, *(() if AUTHENTICATED in self.groups else (AUTHENTICATED,))]
        user: dict[str, Any] = {"username": self.username, "groups": groups}
        if self.uid:
            user["uid"] = self.uid
        if self.extra:
            user["extra"] = {key: list(values) for key, values in self.extra}
        return user


# Who sent the request being served (set by the server's authentication filter). asyncio.to_thread copies
# the context, so the registry thread sees it: upstream passes user.Info in the request context the same way,
# and the few strategies that record the requester (CertificateSigningRequests) read it from there.
current_user: ContextVar[UserInfo | None] = ContextVar("current_user", default=None)

ADMIN = UserInfo("system:admin", groups=("system:masters",))
NODE = UserInfo("system:node-token", groups=("system:nodes",))  # any node's join credential, not one node


class TokenAuthenticator:
    """Tokens → users, compared in constant time; `replace` swaps the table of the server's own tokens (the
    node token changes form once the CA exists), `add` registers a token of a component in this process
    (the controllers' service accounts, slimkube/controlplane.py), which `replace` keeps."""

    def __init__(self, tokens: Mapping[str, UserInfo]) -> None:
        self._added: list[tuple[bytes, UserInfo]] = []
        self._tokens = [(token.encode(), user) for token, user in tokens.items() if token]

    def replace(self, tokens: Mapping[str, UserInfo]) -> None:
        self._tokens = [(token.encode(), user) for token, user in tokens.items() if token] + self._added

    def add(self, token: str, user: UserInfo) -> None:
        if not token:
            raise ValueError("an empty token authenticates nobody")
        self._added = [*self._added, (token.encode(), user)]
        self._tokens = [*self._tokens, (token.encode(), user)]

    def authenticate(self, token: str) -> UserInfo | None:
        candidate = token.strip().encode()
        found = None
        for known, user in self._tokens:  # no early exit: every entry is compared
            if hmac.compare_digest(candidate, known):
                found = user
        return found

    def authenticate_header(self, header: str) -> UserInfo | None:
        scheme, _, token = header.partition(" ")
        return self.authenticate(token) if scheme.lower() == "bearer" and token.strip() else None


class Authenticator(Protocol):
    def authenticate(self, token: str) -> UserInfo | None: ...


def token_review(body: Any, authenticator: Authenticator) -> dict[str, Any]:
    """The created TokenReview for a request body (400/422 for a malformed one, as upstream)."""
    if not isinstance(body, dict):
        raise status.bad_request("expected a TokenReview object")
    if body.get("kind") not in (None, "TokenReview") or body.get("apiVersion") not in (None, GROUP_VERSION):
        raise status.bad_request(f"expected kind TokenReview, apiVersion {GROUP_VERSION}")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        # upstream: `if len(tokenReview.Spec.Token) == 0 { return nil, apierrors.NewBadRequest(...) }`
        raise status.bad_request("token is required for TokenReview in authentication")
    audiences = spec.get("audiences")
    user = authenticator.authenticate(token)
    review_status: dict[str, Any] = {"authenticated": user is not None, "user": user.to_json() if user else {}}
    if user is None:
        review_status["error"] = "invalid bearer token"
    if isinstance(audiences, list) and user is not None:
        review_status["audiences"] = audiences
    metadata = body.get("metadata")
    return {"kind": "TokenReview", "apiVersion": GROUP_VERSION,
            "metadata": dict(metadata) if isinstance(metadata, dict) else {}, "spec": dict(spec),
            "status": review_status}
