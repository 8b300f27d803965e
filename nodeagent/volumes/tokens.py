"""The kubelet's service account token manager (upstream: pkg/kubelet/token/token_manager.go), which
projected `serviceAccountToken` volume sources read their tokens from.

A token is asked for with a TokenRequest bound to the pod (`POST .../serviceaccounts/NAME/token`, audience
and expirationSeconds as the source says; no audience means the API server's own) and kept in a cache
keyed by (namespace, account, audiences, expiration, pod uid), as upstream's keyFunc. A cached token is
asked for again once

- less than 20% of its life (`expirationSeconds`) is left before `status.expirationTimestamp`, or
- it is older than 24 hours (upstream maxTTL),

each moved up to 10 s earlier by a random jitter so many pods do not refresh in the same second. A failed
refresh of a token that has not expired yet keeps serving the cached one (the API server may be briefly
unreachable); once expired, the error is the mount's. `forget(pod_uid)` drops a deleted pod's tokens and
`cleanup` the expired ones.

`requires_refresh` is the pure decision; the clock and the jitter are injected.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

log = logging.getLogger(__name__)
MAX_TTL_SECONDS = 24 * 60 * 60
MAX_JITTER_SECONDS = 10.0
REFRESH_FRACTION = 0.2  # refresh when a fifth of the life is left: at 80% of it


class TokenRequester(Protocol):
    """Creates the TokenRequest for a service account and returns the API server's answer."""

    def __call__(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Token:
    """A token the API server issued: the JWT, when it expires and the life that was asked for."""

    token: str
    expires_at: float
    expiration_seconds: int


def requires_refresh(token: Token, *, now: float, jitter: float) -> bool:
    """Upstream requiresRefresh: within 20% of its life of the expiry, or older than a day (both moved
    `jitter` seconds earlier)."""
    issued_at = token.expires_at - token.expiration_seconds
    if now > issued_at + MAX_TTL_SECONDS - jitter:
        return True
    return now > token.expires_at - token.expiration_seconds * REFRESH_FRACTION - jitter


def _timestamp(value: Any) -> float:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


class TokenManager:
    def __init__(self, request: TokenRequester, *, clock: Callable[[], float] = time.time,
                 jitter: Callable[[], float] = lambda: random.uniform(0, MAX_JITTER_SECONDS)) -> None:
        self._request = request
        self._clock = clock
        self._jitter = jitter
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, tuple[str, ...], int, str], Token] = {}

    def get(self, pod: Mapping[str, Any], source: Mapping[str, Any]) -> str:
        """The token for a `serviceAccountToken` projection of `pod`, from the cache or asked for; raises
        what the request raises when there is no usable cached token."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace, account = meta.get("namespace") or "default", spec.get("serviceAccountName") or "default"
        audiences = (source["audience"],) if source.get("audience") else ()
        seconds = int(source.get("expirationSeconds") or 3600)
        key = (namespace, account, audiences, seconds, meta.get("uid", ""))
        with self._lock:
            cached = self._cache.get(key)
        now = self._clock()
        if cached is not None and not requires_refresh(cached, now=now, jitter=self._jitter()):
            return cached.token
        body: dict[str, Any] = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": list(audiences), "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name", ""),
                               "uid": meta.get("uid", "")}}}
        try:
            answer = self._request(namespace, account, body)
        except Exception as exc:  # any failure: an unexpired cached token still serves
            if cached is not None and now < cached.expires_at:
                log.warning("refreshing the token of %s/%s for pod %s failed, keeping the cached one: %s",
                            namespace, account, meta.get("name"), exc)
                return cached.token
            raise
        status = answer.get("status") or {}
        token = Token(str(status.get("token") or ""), _timestamp(status.get("expirationTimestamp")), seconds)
        with self._lock:
            self._cache[key] = token
        return token.token

    def forget(self, pod_uid: str) -> None:
        """Drop the tokens of a pod that is gone (upstream DeleteServiceAccountToken)."""
        with self._lock:
            for key in [key for key in self._cache if key[4] == pod_uid]:
                del self._cache[key]

    def cleanup(self) -> None:
        """Drop expired tokens (upstream's periodic cleanup)."""
        now = self._clock()
        with self._lock:
            for key in [key for key, token in self._cache.items() if token.expires_at < now]:
                del self._cache[key]
