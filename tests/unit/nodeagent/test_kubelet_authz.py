"""What the kubelet asks the API server about a caller (nodeagent/authz.py): the path → node subresource
table (upstream pkg/kubelet/server/auth_test.go), the SubjectAccessReview it sends, upstream's refusal
texts, and the cache's lifetimes (allowed 5 minutes, refused 30 seconds, failures never cached)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent import authz
from nodeagent.authn import User
from nodeagent.authz import Check, ReviewFailed, SubjectAccessReviewCache
from tests.support.fake_clock import FakeClock

ALICE = User("alice", ("devs",))


@pytest.mark.parametrize(("method", "path", "expected"), [
    pytest.param("GET", "/stats/summary", [("get", "stats")], id="stats"),
    pytest.param("GET", "/stats", [("get", "stats")], id="stats-root"),
    pytest.param("GET", "/statsz", [("get", "proxy")], id="not-a-subpath"),
    pytest.param("GET", "/metrics", [("get", "metrics")], id="metrics"),
    pytest.param("GET", "/metrics/resource", [("get", "metrics")], id="metrics-resource"),
    pytest.param("GET", "/logs/syslog", [("get", "log")], id="node-logs"),
    pytest.param("GET", "/spec/", [("get", "spec")], id="spec"),
    pytest.param("GET", "/pods", [("get", "pods"), ("get", "proxy")], id="pods-falls-back-to-proxy"),
    pytest.param("GET", "/configz", [("get", "configz"), ("get", "proxy")], id="configz"),
    pytest.param("GET", "/containerLogs/ns/p/c", [("get", "proxy")], id="container-logs"),
    pytest.param("POST", "/exec/ns/p/c", [("create", "proxy")], id="exec-post"),
    pytest.param("GET", "/exec/ns/p/c", [("get", "proxy")], id="exec-websocket"),
    pytest.param("POST", "/portForward/ns/p", [("create", "proxy")], id="port-forward"),
    pytest.param("PUT", "/run/ns/p/c", [("update", "proxy")], id="put"),
    pytest.param("PATCH", "/x", [("patch", "proxy")], id="patch"),
    pytest.param("DELETE", "/x", [("delete", "proxy")], id="delete"),
    pytest.param("OPTIONS", "/pods", [("", "pods"), ("", "proxy")], id="unknown-method"),
])
def test_checks(method: str, path: str, expected: list[tuple[str, str]]) -> None:
    assert authz.checks(method, path) == tuple(Check(verb, sub) for verb, sub in expected)


def test_review_spec_and_texts() -> None:
    check = Check("create", "proxy")
    assert authz.review_spec(ALICE, "node-1", check) == {
        "resourceAttributes": {"verb": "create", "version": "v1", "resource": "nodes", "subresource": "proxy",
                               "name": "node-1"},
        "user": "alice", "groups": ["devs"]}
    assert authz.forbidden_text(ALICE, check) == (
        "Forbidden (user=alice, verb=create, resource=nodes, subresource=proxy)")
    assert authz.error_text(ALICE, check) == (
        "Authorization error (user=alice, verb=create, resource=nodes, subresource=proxy)")


def test_cache_lifetimes() -> None:
    clock = FakeClock(0.0)
    answers = {"alice": True, "bob": False}
    asked: list[str] = []

    def review(spec: dict[str, Any]) -> dict[str, Any]:
        asked.append(spec["user"])
        return {"status": {"allowed": answers[spec["user"]]}}

    cache = SubjectAccessReviewCache(review, node="n", clock=clock.monotonic)
    bob = User("bob")
    check = Check("get", "proxy")
    assert cache.allowed(ALICE, check) and not cache.allowed(bob, check)
    answers.update(alice=False, bob=True)
    clock.step(29)
    assert cache.allowed(ALICE, check) and not cache.allowed(bob, check)  # both cached
    clock.step(2)
    assert cache.allowed(ALICE, check) and cache.allowed(bob, check)  # the refusal expired at 30 s
    clock.step(270)
    assert not cache.allowed(ALICE, check)  # the allowance expired at 5 minutes
    assert asked == ["alice", "bob", "bob", "alice"]
    cache.allowed(ALICE, Check("get", "stats"))
    assert asked[-1] == "alice" and len(asked) == 5  # another subresource is another question


def test_a_failed_review_is_an_error_and_not_cached() -> None:
    calls: list[int] = []

    def review(spec: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("API server away")
        return {"status": {"allowed": True}}

    cache = SubjectAccessReviewCache(review, node="n", clock=FakeClock(0.0).monotonic)
    with pytest.raises(ReviewFailed):
        cache.allowed(ALICE, Check("get", "pods"))
    assert cache.allowed(ALICE, Check("get", "pods")) and len(calls) == 2
