"""Who may call the kubelet's API (nodeagent/authn.py): the decision per request, the users of client
certificates and TokenReviews, and the TokenReview cache's TTLs."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent import authn
from nodeagent.authn import Decision, Outcome, TokenReviewCache, User
from tests.support.fake_clock import FakeClock

CLIENT_CERT = {"subject": ((("organizationName", "system:masters"),),
                           (("commonName", "kube-apiserver-kubelet-client"),))}
API_CLIENT = User("kube-apiserver-kubelet-client", ("system:masters",))


@pytest.mark.parametrize(("path", "peercert", "authorization", "expected"), [
    pytest.param("/healthz", None, "", Decision(Outcome.PUBLIC), id="healthz-public"),
    pytest.param("/healthz", None, "Bearer nope", Decision(Outcome.PUBLIC), id="healthz-ignores-token"),
    pytest.param("/pods", None, "", Decision(Outcome.UNAUTHORIZED), id="pods-nothing"),
    pytest.param("/healthz/", None, "", Decision(Outcome.UNAUTHORIZED), id="only-exact-healthz"),
    pytest.param("/containerLogs/ns/p/c", {}, "", Decision(Outcome.UNAUTHORIZED), id="empty-peercert"),
    pytest.param("/pods", None, "Basic dXNlcjpwdw==", Decision(Outcome.UNAUTHORIZED), id="basic-auth-ignored"),
    pytest.param("/pods", None, "Bearer ", Decision(Outcome.UNAUTHORIZED), id="empty-bearer"),
    pytest.param("/pods", None, "Bearer abc ", Decision(Outcome.REVIEW, token="abc"), id="bearer-review"),
    pytest.param("/pods", None, "bearer abc", Decision(Outcome.REVIEW, token="abc"), id="scheme-any-case"),
    pytest.param("/stats/summary", CLIENT_CERT, "", Decision(Outcome.ALLOWED, user=API_CLIENT), id="cert"),
    pytest.param("/pods", CLIENT_CERT, "Bearer x", Decision(Outcome.ALLOWED, user=API_CLIENT),
                 id="cert-before-token"),
    pytest.param("/pods", {"subject": ((("organizationName", "x"),),)}, "", Decision(Outcome.UNAUTHORIZED),
                 id="cert-without-cn"),
])
def test_decide(path: str, peercert: Any, authorization: str, expected: Decision) -> None:
    assert authn.decide(path, peercert=peercert, authorization=authorization) == expected


@pytest.mark.parametrize(("review", "expected"), [
    pytest.param({"status": {"authenticated": True, "user": {"username": "system:admin",
                                                             "groups": ["system:masters", 3]}}},
                 User("system:admin", ("system:masters",)), id="allowed"),
    pytest.param({"status": {"authenticated": False, "error": "invalid bearer token"}}, None, id="denied"),
    pytest.param({"status": {"authenticated": "true", "user": {"username": "x"}}}, None, id="not-a-bool"),
    pytest.param({"status": {"authenticated": True, "user": {}}}, None, id="no-username"),
    pytest.param({}, None, id="no-status"),
])
def test_user_from_review(review: dict, expected: User | None) -> None:
    assert authn.user_from_review(review) == expected


def _reviewer(answers: dict[str, bool]) -> tuple[list[str], Any]:
    asked: list[str] = []

    def review(token: str) -> dict:
        asked.append(token)
        if token not in answers:
            raise ConnectionError("API server away")
        return {"status": {"authenticated": answers[token], "user": {"username": f"user-{token}"}}}

    return asked, review


def test_allowed_tokens_are_cached_two_minutes_denied_ten_seconds() -> None:
    clock = FakeClock(1000.0)
    asked, review = _reviewer({"good": True, "bad": False})
    cache = TokenReviewCache(review, clock=clock.monotonic)
    assert cache.authenticate("good") == User("user-good")
    assert cache.authenticate("bad") is None
    clock.step(9.9)
    assert cache.authenticate("good") == User("user-good") and cache.authenticate("bad") is None
    assert asked == ["good", "bad"]
    clock.step(0.2)  # the denial expired, the allowance not
    assert cache.authenticate("bad") is None and cache.authenticate("good") == User("user-good")
    assert asked == ["good", "bad", "bad"]
    clock.step(110.0)  # 120.1 s after the first review
    cache.authenticate("good")
    assert asked == ["good", "bad", "bad", "good"]


def test_a_failed_review_denies_and_is_not_cached() -> None:
    asked, review = _reviewer({})
    cache = TokenReviewCache(review, clock=FakeClock(0.0).monotonic)
    assert cache.authenticate("t") is None and cache.authenticate("t") is None
    assert asked == ["t", "t"]


def test_cache_is_keyed_by_a_hash_not_the_token() -> None:
    _, review = _reviewer({"secret-token": True})
    cache = TokenReviewCache(review, clock=FakeClock(0.0).monotonic)
    cache.authenticate("secret-token")
    assert all("secret-token" not in key for key in cache._answers._entries)
