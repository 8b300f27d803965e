"""LimitRanger and TaintNodesByCondition through the real registry, and LimitRange objects' own defaults and
validation (control/api/limitranger.py, control/apiserver/admission/limitranger.py, nodetaint.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

PODS = by_path("", "v1", "pods")
NODES = by_path("", "v1", "nodes")
NAMESPACES = by_path("", "v1", "namespaces")
LIMIT_RANGES = by_path("", "v1", "limitranges")
CLAIMS = by_path("", "v1", "persistentvolumeclaims")
SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")


@pytest.fixture
def registry(tmp_path: Any) -> Iterator[Registry]:
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
        registry.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "default"}})  # the controller's
        yield registry
    finally:
        storage.close()


def limit_range(registry: Registry, *items: dict[str, Any]) -> dict[str, Any]:
    return registry.create(LIMIT_RANGES, "ns", {"metadata": {"name": "limits"}, "spec": {"limits": list(items)}})


def pod(name: str = "p", **resources: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1", "resources": resources}]}}


def test_limit_range_defaults_follow_upstream(registry: Registry) -> None:
    """A Container item's default limit is its max, the default request its default (else its min)."""
    stored = limit_range(registry, {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
                         {"type": "Pod", "max": {"cpu": "4"}})
    container, pod_item = stored["spec"]["limits"]
    assert container["default"] == {"cpu": "2"}
    assert container["defaultRequest"] == {"cpu": "2", "memory": "64Mi"}
    assert "default" not in pod_item and "defaultRequest" not in pod_item


@pytest.mark.parametrize(("item", "field", "message"), [
    pytest.param({"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}, "spec.limits[0].min[cpu]",
                 "min value 2 is greater than max value 1", id="min-over-max"),
    pytest.param({"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}},
                 "spec.limits[0].defaultRequest[cpu]", "default request value 2 is greater than default limit value 1",
                 id="request-over-default"),
    pytest.param({"type": "Pod", "default": {"cpu": "1"}}, "spec.limits[0].default",
                 "may not be specified when `type` is 'Pod'", id="pod-default"),
    pytest.param({"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}},
                 "spec.limits[0].maxLimitRequestRatio[cpu]", "ratio 500m is less than 1", id="ratio-under-1"),
    pytest.param({"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}, "spec.limits[0].limits",
                 "either minimum or maximum storage value is required, but neither was provided", id="claim"),
])
def test_limit_range_validation(registry: Registry, item: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(APIError) as refused:
        limit_range(registry, item)
    assert refused.value.code == 422
    causes = refused.value.status["details"]["causes"]
    assert any(c["field"] == field and message in c["message"] for c in causes), causes


def test_defaults_land_on_containers_with_upstreams_annotation(registry: Registry) -> None:
    limit_range(registry, {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
                           "defaultRequest": {"cpu": "100m"}})
    created = registry.create(PODS, "ns", pod(limits={"memory": "64Mi"}))
    resources = created["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"cpu": "100m", "memory": "64Mi"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == \
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c"


@pytest.mark.parametrize(("item", "resources", "message"), [
    pytest.param({"type": "Container", "max": {"cpu": "1"}}, {"limits": {"cpu": "2"}},
                 "maximum cpu usage per Container is 1, but limit is 2", id="container-max"),
    pytest.param({"type": "Container", "min": {"memory": "64Mi"}}, {"requests": {"memory": "32Mi"}},
                 "minimum memory usage per Container is 64Mi, but request is 32Mi", id="container-min"),
    pytest.param({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
                 {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}},
                 "cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000", id="ratio"),
    pytest.param({"type": "Pod", "max": {"memory": "1Gi"}}, {"limits": {"memory": "2Gi"}},
                 "maximum memory usage per Pod is 1Gi, but limit is 2Gi", id="pod-max"),
    pytest.param({"type": "Pod", "max": {"memory": "1Gi"}}, {},
                 "maximum memory usage per Pod is 1Gi.  No limit is specified", id="pod-max-unset"),
])
def test_bounds_refuse_with_upstreams_message(registry: Registry, item: dict[str, Any],
                                              resources: dict[str, Any], message: str) -> None:
    limit_range(registry, item)
    with pytest.raises(APIError) as refused:
        registry.create(PODS, "ns", pod(**resources))
    assert refused.value.code == 403
    assert refused.value.status["message"] == f'pods "p" is forbidden: {message}'
    assert registry.get(PODS, "ns", "p") is None


def test_claims_are_bounded_on_create_and_resize(registry: Registry) -> None:
    limit_range(registry, {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}})
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}}
    registry.create(CLAIMS, "ns", claim)
    with pytest.raises(APIError, match=r'persistentvolumeclaims "data" is forbidden: maximum storage usage per '
                                       r"PersistentVolumeClaim is 2Gi, but request is 3Gi"):
        registry.patch(CLAIMS, "ns", "data", "merge", {"spec": {"resources": {"requests": {"storage": "3Gi"}}}})


def test_new_nodes_are_tainted_not_ready_once(registry: Registry) -> None:
    created = registry.create(NODES, "", {"metadata": {"name": "n1"}})
    assert created["spec"]["taints"] == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    own = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"},
           {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    assert registry.create(NODES, "", {"metadata": {"name": "n2"}, "spec": {"taints": own}})["spec"]["taints"] == own
    cleared = registry.patch(NODES, "", "n1", "merge", {"spec": {"taints": None}})  # updates are left alone
    assert "taints" not in cleared["spec"]
