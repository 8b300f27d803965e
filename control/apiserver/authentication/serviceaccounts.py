"""Service account tokens → users (upstream: pkg/serviceaccount/jwt.go JWTTokenAuthenticator, claims.go
and legacy.go validators, pkg/serviceaccount/util.go UserInfo).

A token signed by this server's key (control/util/satoken.py checks signature, issuer, audience and time)
is then checked against the store, as upstream's validators do:

- bound tokens: the ServiceAccount must exist with the token's uid, and so must the pod, Secret or Node it
  is bound to; an object whose deletion started more than 60 s ago counts as gone (upstream lets a pod
  being deleted use its token for that long).
- legacy tokens: the ServiceAccount with its uid, and the Secret must still hold this very token.

The user is `system:serviceaccount:<ns>:<name>` with the account's uid, groups `system:serviceaccounts`
and `system:serviceaccounts:<ns>`, and extra `authentication.kubernetes.io/pod-name`, `pod-uid`,
`node-name`, `node-uid` and `credential-id` (`JTI=<jti>`) where the token names them.

Any failure is "not authenticated" (the request gets 401); the reason is logged at debug level only.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import rsa

from control.apiserver.authentication.tokens import Authenticator, UserInfo
from control.util import satoken

log = logging.getLogger(__name__)
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
DELETION_GRACE_SECONDS = 60
EXTRA_PREFIX = "authentication.kubernetes.io/"
DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
DISCOVERY_CACHE_CONTROL = "public, max-age=3600"  # upstream's serviceaccount openidmetadata handler


class Getter(Protocol):
    """The stored object, or None (plural is `serviceaccounts`, `pods`, `secrets`, `nodes`)."""

    def __call__(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None: ...


def groups(namespace: str) -> tuple[str, ...]:
    return (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}")


def user_info(namespace: str, account: satoken.Ref, *, extra: dict[str, str] | None = None) -> UserInfo:
    return UserInfo(satoken.username(namespace, account.name), uid=account.uid, groups=groups(namespace),
                    extra=tuple((EXTRA_PREFIX + key, (value,)) for key, value in sorted((extra or {}).items())))


def _deleted_long_ago(obj: dict[str, Any], now: float) -> bool:
    stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not stamp:
        return False
    when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    return when < now - DELETION_GRACE_SECONDS


def _live(get: Getter, plural: str, namespace: str, ref: satoken.Ref, what: str, now: float) -> dict[str, Any]:
    obj = get(plural, namespace, ref.name)
    where = f"{namespace}/{ref.name}" if namespace else ref.name
    if obj is None or _deleted_long_ago(obj, now):
        raise satoken.TokenError(f"{what} {where} has been deleted")
    uid = (obj.get("metadata") or {}).get("uid", "")
    if uid != ref.uid:
        raise satoken.TokenError(f"{what} UID ({uid}) does not match claim ({ref.uid})")
    return obj


def check_bound(claims: satoken.BoundClaims, get: Getter, *, now: float) -> UserInfo:
    """The user of a verified bound token whose objects still exist (upstream claims.go Validate)."""
    namespace = claims.namespace
    _live(get, "serviceaccounts", namespace, claims.account, "service account", now)
    extra: dict[str, str] = {}
    if claims.pod is not None:
        _live(get, "pods", namespace, claims.pod, "pod", now)
        extra.update({"pod-name": claims.pod.name, "pod-uid": claims.pod.uid})
    if claims.secret is not None:
        _live(get, "secrets", namespace, claims.secret, "secret", now)
    if claims.node is not None:
        if claims.pod is None and claims.secret is None:  # a node-bound token: the node itself must live
            _live(get, "nodes", "", claims.node, "node", now)
        extra.update({"node-name": claims.node.name, "node-uid": claims.node.uid})
    if claims.token_id:
        extra["credential-id"] = f"JTI={claims.token_id}"
    return user_info(namespace, claims.account, extra=extra)


def check_legacy(payload: dict[str, Any], token: str, get: Getter, *, now: float) -> UserInfo:
    """The user of a verified legacy token whose Secret still holds it (upstream legacy.go Validate)."""
    fields = (satoken.LEGACY_NAMESPACE, satoken.LEGACY_SECRET_NAME, satoken.LEGACY_ACCOUNT_NAME,
              satoken.LEGACY_ACCOUNT_UID)
    namespace, secret_name, name, uid = (payload.get(key) for key in fields)
    if not all(isinstance(value, str) and value for value in (namespace, secret_name, name, uid)):
        raise satoken.TokenError("the legacy token's claims are incomplete")
    assert isinstance(namespace, str) and isinstance(secret_name, str)
    account = satoken.Ref(str(name), str(uid))
    _live(get, "serviceaccounts", namespace, account, "service account", now)
    secret = get("secrets", namespace, secret_name)
    if secret is None or _deleted_long_ago(secret, now):
        raise satoken.TokenError(f"secret {namespace}/{secret_name} has been deleted")
    stored = base64.b64decode((secret.get("data") or {}).get("token") or "").decode(errors="replace")
    if stored != token:
        raise satoken.TokenError("the token in the secret does not match the token presented")
    return user_info(namespace, account)


class ServiceAccountAuthenticator:
    """JWT bearer tokens → users; `authenticate` reads the store (call it off the event loop)."""

    def __init__(self, keys: Sequence[rsa.RSAPublicKey], *, issuers: Sequence[str], audiences: Sequence[str],
                 get: Getter, clock: Callable[[], float] = time.time) -> None:
        self.keys = tuple(keys)
        self.issuers = (*issuers, satoken.LEGACY_ISSUER)
        self.audiences = tuple(audiences)
        self._get = get
        self._clock = clock

    def authenticate(self, token: str) -> UserInfo | None:
        token = token.strip()
        if not satoken.looks_like_jwt(token):
            return None
        now = self._clock()
        try:
            payload = satoken.verify(token, self.keys, issuers=self.issuers, audiences=self.audiences, now=now)
            if payload.get("iss") == satoken.LEGACY_ISSUER:
                return check_legacy(payload, token, self._get, now=now)
            return check_bound(satoken.parse_bound(payload), self._get, now=now)
        except satoken.TokenError as exc:
            log.debug("service account token refused: %s", exc)
            return None


class FirstOf:
    """The first of several authenticators that knows a token (the TokenReview's view of every kind)."""

    def __init__(self, *authenticators: Authenticator | None) -> None:
        self._authenticators = [a for a in authenticators if a is not None]

    def authenticate(self, token: str) -> UserInfo | None:
        for authenticator in self._authenticators:
            if (user := authenticator.authenticate(token)) is not None:
                return user
        return None


def openid_configuration(issuer: str, jwks_uri: str) -> dict[str, Any]:
    """The OIDC discovery document (upstream pkg/serviceaccount/openidmetadata.go openIDMetadata)."""
    return {"issuer": issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": [satoken.ALGORITHM]}
