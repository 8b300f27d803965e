"""The kubelet's token manager: when a token is asked for again (at 80% of its life, after a day, moved
earlier by the jitter), what a TokenRequest it sends says (bound to the pod, audience and life as the
projection says), the cache key, keeping an unexpired token when a refresh fails, and forgetting a pod's
tokens."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodeagent.volumes.tokens import Token, TokenManager, requires_refresh

T0 = 1_800_000_000.0


@pytest.mark.parametrize(("token", "now", "jitter", "refresh"), [
    pytest.param(Token("t", T0 + 3600, 3600), T0 + 2879, 0, False, id="before-80%"),
    pytest.param(Token("t", T0 + 3600, 3600), T0 + 2881, 0, True, id="after-80%"),
    pytest.param(Token("t", T0 + 3600, 3600), T0 + 2875, 10, True, id="jitter-moves-it-earlier"),
    pytest.param(Token("t", T0 + 3607, 3607), T0 + 2800, 0, False, id="the-admission-default"),
    pytest.param(Token("t", T0 + 7 * 86400, 7 * 86400), T0 + 86401, 0, True, id="older-than-a-day"),
    pytest.param(Token("t", T0 + 7 * 86400, 7 * 86400), T0 + 86399, 0, False, id="younger-than-a-day"),
])
def test_requires_refresh(token, now, jitter, refresh):
    assert requires_refresh(token, now=now, jitter=jitter) is refresh


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class API:
    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.requests: list[tuple[str, str, dict]] = []
        self.fail = False

    def __call__(self, namespace, name, body):
        if self.fail:
            raise ConnectionError("the API server is away")
        self.requests.append((namespace, name, body))
        seconds = body["spec"]["expirationSeconds"]
        return {"status": {"token": f"token-{len(self.requests)}", "expirationTimestamp": iso(self.clock[0] + seconds)}}


def manager_at(now: float) -> tuple[list[float], API, TokenManager]:
    """A manager with no jitter over a fake API, both reading the clock the test moves (clock[0])."""
    clock = [now]
    api = API(clock)
    return clock, api, TokenManager(api, clock=lambda: clock[0], jitter=lambda: 0.0)


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "uid-1"}, "spec": {"serviceAccountName": "robot"}}


def test_tokens_are_bound_to_the_pod_cached_and_refreshed_at_80_percent():
    clock, api, manager = manager_at(T0)
    source = {"path": "token", "expirationSeconds": 3607}
    assert manager.get(POD, source) == "token-1"
    assert api.requests == [("ns", "robot", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": [], "expirationSeconds": 3607,
                 "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-1"}}})]
    clock[0] = T0 + 2800
    assert manager.get(POD, source) == "token-1"
    assert manager.get(POD, {"path": "vault", "audience": "vault", "expirationSeconds": 3607}) == "token-2"
    assert api.requests[1][2]["spec"]["audiences"] == ["vault"]
    clock[0] = T0 + 2900
    assert manager.get(POD, source) == "token-3"
    assert len(api.requests) == 3


def test_a_failed_refresh_keeps_an_unexpired_token_and_fails_once_expired():
    clock, api, manager = manager_at(T0)
    source = {"path": "token", "expirationSeconds": 600}
    assert manager.get(POD, source) == "token-1"
    api.fail = True
    clock[0] = T0 + 590
    assert manager.get(POD, source) == "token-1"
    clock[0] = T0 + 601
    with pytest.raises(ConnectionError):
        manager.get(POD, source)


def test_forget_and_cleanup():
    clock, api, manager = manager_at(T0)
    manager.get(POD, {"expirationSeconds": 600})
    manager.forget("uid-1")
    manager.get(POD, {"expirationSeconds": 600})
    assert len(api.requests) == 2
    clock[0] = T0 + 601
    manager.cleanup()
    assert manager._cache == {}
