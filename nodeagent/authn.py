"""Who may call the kubelet's API (upstream: pkg/kubelet/server/auth.go and k8s.io/apiserver's
authenticatorfactory DelegatingAuthenticatorConfig as the kubelet builds it — `authentication.anonymous:
false`, `x509.clientCAFile`, `webhook.enabled` with `cacheTTL` 2m; the token cache of
k8s.io/apiserver/pkg/authentication/token/cache).

Every path except `/healthz` needs an authenticated caller, tried in upstream's order:
1. a client certificate the cluster CA issued (checked by TLS itself: the handshake verifies the chain
   and the clientAuth usage; a certificate from another CA is refused there — see the departure below);
   the user is its CN, the groups its O values;
2. a bearer token, which the kubelet asks the API server about with a TokenReview (authentication.k8s.io/v1);
   answers are cached by the token's sha256: allowed for 2 minutes (upstream's cacheTTL), denied for 10
   seconds (upstream caches both for cacheTTL; shorter here so a token just issued or a server that was
   briefly away is not refused for two minutes);
3. nothing else: 401 with a Status, before any handler runs. The read-only port (10255) does not exist.

Authorization follows (authz.py: a SubjectAccessReview per request, cached).

Departure: Go's TLS stack can ask for a client certificate without verifying it and let the
authenticator answer 401; Python's ssl module cannot (`CERT_OPTIONAL` verifies what is sent), so a
certificate from another CA ends the TLS handshake instead of getting a 401. Nothing runs either way.

`decide` is pure; `TokenReviewCache` owns the clock and the cache, the review itself is injected.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from nodeagent.reviewcache import ExpiringAnswers

ALLOWED_TTL = 120.0
DENIED_TTL = 10.0
PUBLIC_PATHS = frozenset({"/healthz"})


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = field(default_factory=tuple)


class Outcome(Enum):
    PUBLIC = "public"        # no credential needed
    ALLOWED = "allowed"      # a user was found
    REVIEW = "review"        # a bearer token the API server must be asked about
    UNAUTHORIZED = "unauthorized"


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    user: User | None = None
    token: str = ""


def user_from_peercert(peercert: Mapping[str, Any] | None) -> User | None:
    """The user of a client certificate TLS verified (ssl's `getpeercert()` dict: subject is a tuple of
    RDNs, each a tuple of (name, value) pairs); None when no certificate was sent."""
    if not peercert:
        return None
    pairs = [pair for rdn in peercert.get("subject", ()) for pair in rdn]
    names = [value for key, value in pairs if key == "commonName"]
    if not names or not names[0]:
        return None
    return User(name=names[0], groups=tuple(value for key, value in pairs if key == "organizationName"))


def bearer_token(header: str) -> str:
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def decide(path: str, *, peercert: Mapping[str, Any] | None, authorization: str) -> Decision:
    """What to do with a request, before any I/O: public path, certificate user, token to review, or 401."""
    if path in PUBLIC_PATHS:
        return Decision(Outcome.PUBLIC)
    user = user_from_peercert(peercert)
    if user is not None:
        return Decision(Outcome.ALLOWED, user=user)
    token = bearer_token(authorization)
    if token:
        return Decision(Outcome.REVIEW, token=token)
    return Decision(Outcome.UNAUTHORIZED)


def user_from_review(review: Mapping[str, Any]) -> User | None:
    """The user a created TokenReview names, None unless `status.authenticated` is true."""
    review_status = review.get("status") or {}
    if review_status.get("authenticated") is not True:
        return None
    user = review_status.get("user") or {}
    name = user.get("username")
    if not isinstance(name, str) or not name:
        return None
    return User(name=name, groups=tuple(g for g in user.get("groups") or [] if isinstance(g, str)))


Review = Callable[[str], Mapping[str, Any]]  # token → the created TokenReview (raises when the server is away)


class TokenReviewCache:
    """Tokens → users through `review`, cached (allowed `allowed_ttl`, denied `denied_ttl`); a failed review
    (API server away) is a denial that is not cached. Thread-safe; keys are sha256 of the tokens."""

    def __init__(self, review: Review, *, clock: Callable[[], float] = time.monotonic,
                 allowed_ttl: float = ALLOWED_TTL, denied_ttl: float = DENIED_TTL) -> None:
        self._review = review
        self._clock = clock
        self._ttl = (allowed_ttl, denied_ttl)
        self._answers: ExpiringAnswers[User | None] = ExpiringAnswers()

    def authenticate(self, token: str) -> User | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        found, cached = self._answers.get(key, now)
        if found:
            return cached
        try:
            user = user_from_review(self._review(token))
        except Exception:  # noqa: BLE001 - no answer is no authentication; the next request asks again
            return None
        self._answers.put(key, user, now=now, ttl=self._ttl[0 if user is not None else 1])
        return user
