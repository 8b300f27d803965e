"""Who may do what on the kubelet's API (upstream: pkg/kubelet/server/auth.go
nodeAuthorizerAttributesGetter.GetRequestAttributes, server.go InstallAuthFilter, and the webhook
authorizer of k8s.io/apiserver/plugin/pkg/authorizer/webhook as the kubelet configures it —
`authorization.mode: Webhook`, `cacheAuthorizedTTL` 5m, `cacheUnauthorizedTTL` 30s).

After authentication (authn.py), each request becomes the question the API server would ask about the
node object: verb from the HTTP method (POST create, GET get, PUT update, PATCH patch, DELETE delete),
resource `nodes`, name the node's, and a subresource from the path: `/stats/…` → `stats`, `/metrics…` →
`metrics`, `/logs/…` → `log`, `/spec/…` → `spec`, `/pods` → `pods`, `/healthz` → `healthz`, `/configz` →
`configz`, everything else (exec, attach, portForward, containerLogs, run) → `proxy`. The fine-grained ones
(pods, healthz, configz) fall back to `proxy`, as upstream's KubeletFineGrainedAuthz does, so a holder of
`nodes/proxy` keeps everything. Each question is a SubjectAccessReview to the API server, cached by its
whole spec: allowed answers 5 minutes, denied ones 30 seconds. A review that fails (API server away) is
not cached and answers 500 `Authorization error (…)`; a denial is 403 `Forbidden (user=…, verb=…,
resource=…, subresource=…)`, upstream's plain-text bodies.

`checks` and `review_spec` are pure; `SubjectAccessReviewCache` owns the clock and the cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.authn import User
from nodeagent.reviewcache import ExpiringAnswers

ALLOWED_TTL = 300.0
DENIED_TTL = 30.0
_METHOD_VERBS = {"POST": "create", "GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_SUBPATHS = (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log"), ("/spec", "spec"))
_FINE_GRAINED = (("/pods", "pods"), ("/healthz", "healthz"), ("/configz", "configz"))


@dataclass(frozen=True)
class Check:
    """One question about the node object: `verb` on `nodes/<subresource>`."""

    verb: str
    subresource: str


def _is_subpath(path: str, prefix: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] == "/")


def checks(method: str, path: str) -> tuple[Check, ...]:
    """The questions for one request, in order; the first allowed one admits it."""
    verb = _METHOD_VERBS.get(method.upper(), "")
    for prefix, subresource in _SUBPATHS:
        if _is_subpath(path, prefix):
            return (Check(verb, subresource),)
    for prefix, subresource in _FINE_GRAINED:
        if _is_subpath(path, prefix):
            return Check(verb, subresource), Check(verb, "proxy")
    return (Check(verb, "proxy"),)


def review_spec(user: User, node: str, check: Check) -> dict[str, Any]:
    """The SubjectAccessReview spec the webhook authorizer sends."""
    return {"resourceAttributes": {"verb": check.verb, "version": "v1", "resource": "nodes",
                                   "subresource": check.subresource, "name": node},
            "user": user.name, "groups": list(user.groups)}


def forbidden_text(user: User, check: Check) -> str:
    return f"Forbidden (user={user.name}, verb={check.verb}, resource=nodes, subresource={check.subresource})"


def error_text(user: User, check: Check) -> str:
    return f"Authorization error (user={user.name}, verb={check.verb}, resource=nodes, subresource={check.subresource})"


class ReviewFailed(Exception):
    """The API server could not be asked; the answer is 500 and nothing is cached."""


Review = Callable[[dict[str, Any]], Mapping[str, Any]]  # spec → the created SubjectAccessReview


class SubjectAccessReviewCache:
    """`allowed(user, check)` through `review`, cached per spec (allowed `allowed_ttl`, denied `denied_ttl`).
    Thread-safe."""

    def __init__(self, review: Review, *, node: str, clock: Callable[[], float] = time.monotonic,
                 allowed_ttl: float = ALLOWED_TTL, denied_ttl: float = DENIED_TTL) -> None:
        self._review = review
        self._node = node
        self._clock = clock
        self._ttl = (allowed_ttl, denied_ttl)
        self._answers: ExpiringAnswers[bool] = ExpiringAnswers()

    def allowed(self, user: User, check: Check) -> bool:
        """Raises ReviewFailed when the API server cannot answer (nothing is cached then)."""
        spec = review_spec(user, self._node, check)
        key = json.dumps(spec, sort_keys=True)
        now = self._clock()
        found, cached = self._answers.get(key, now)
        if found:
            return bool(cached)
        try:
            answer = self._review(spec)
        except Exception as exc:
            raise ReviewFailed(str(exc)) from exc
        allowed = (answer.get("status") or {}).get("allowed") is True
        self._answers.put(key, allowed, now=now, ttl=self._ttl[0 if allowed else 1])
        return allowed
