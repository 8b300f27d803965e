"""The ClusterRole aggregation controller (clusterroleaggregation/controller.py): the pure union (upstream
clusterroleaggregation_controller_test.go's cases) and the controller on the fake API server, following label
changes both ways."""

from __future__ import annotations

import threading

import pytest

from control.client.informer import InformerFactory
from control.controllers.clusterroleaggregation.controller import ClusterRoleAggregationController, aggregated_rules
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

PATH = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
SELECTOR = {"clusterRoleSelectors": [{"matchLabels": {"foo": "bar"}}]}


def role(name, rules, labels=None, aggregation=None):
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name, "labels": labels or {}}, "rules": rules}
    if aggregation is not None:
        obj["aggregationRule"] = aggregation
    return obj


def rule(verb, resource):
    return {"verbs": [verb], "apiGroups": [""], "resources": [resource]}


@pytest.mark.parametrize(("roles", "expected"), [
    pytest.param([], [], id="nothing-matches"),
    pytest.param([role("b", [rule("get", "pods")], {"foo": "bar"}), role("a", [rule("list", "pods")], {"foo": "bar"})],
                 [rule("list", "pods"), rule("get", "pods")], id="sorted-by-name"),
    pytest.param([role("a", [rule("get", "pods")], {"foo": "bar"}), role("b", [rule("get", "pods")], {"foo": "bar"})],
                 [rule("get", "pods")], id="duplicates-once"),
    pytest.param([role("a", [rule("get", "pods")], {"foo": "other"})], [], id="label-mismatch"),
])
def test_aggregated_rules(roles, expected):
    target = role("agg", [], aggregation=SELECTOR)
    assert aggregated_rules(target, [target, *roles]) == expected


def test_not_aggregated():
    assert aggregated_rules(role("plain", [rule("get", "pods")]), []) is None


@pytest.fixture
def api():
    api = FakeAPIServer()
    stop = threading.Event()
    factory = InformerFactory(api.client("informers"))
    controller = ClusterRoleAggregationController(api.client("aggregator"), factory)
    factory.start(stop)
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    yield api.client("user")
    stop.set()
    thread.join(5)


def test_controller_follows_labels(api):
    api.create(PATH, role("agg", [], aggregation=SELECTOR))
    api.create(PATH, role("one", [rule("get", "pods")], {"foo": "bar"}))
    assert wait_until(lambda: api.get(f"{PATH}/agg").get("rules") == [rule("get", "pods")])
    one = api.get(f"{PATH}/one")
    one["metadata"]["labels"] = {}
    api.update(f"{PATH}/one", one)
    assert wait_until(lambda: api.get(f"{PATH}/agg").get("rules") == [])
