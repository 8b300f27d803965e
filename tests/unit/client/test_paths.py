"""REST paths for core and named groups, namespaced or not, with subresources."""

from __future__ import annotations

import pytest

from control.client.paths import resource_path


@pytest.mark.parametrize(("args", "kwargs", "expected"), [
    pytest.param(("v1", "pods"), {"namespace": "ns", "name": "p", "subresource": "status"},
                 "/api/v1/namespaces/ns/pods/p/status", id="core-subresource"),
    pytest.param(("apps/v1", "deployments"), {}, "/apis/apps/v1/deployments", id="group-all-namespaces"),
    pytest.param(("v1", "nodes"), {"name": "n1"}, "/api/v1/nodes/n1", id="cluster-scoped"),
    pytest.param(("v1", "namespaces"), {"name": "ns"}, "/api/v1/namespaces/ns", id="namespace-object"),
    pytest.param(("coordination.k8s.io/v1", "leases"), {"namespace": "kube-node-lease"},
                 "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", id="dotted-group"),
    pytest.param(("apps/v1", "deployments"), {"namespace": "ns", "name": "d", "subresource": "scale"},
                 "/apis/apps/v1/namespaces/ns/deployments/d/scale", id="scale"),
    pytest.param(("v1", "configmaps"), {"namespace": "ns", "name": "a/b?c"},
                 "/api/v1/namespaces/ns/configmaps/a%2Fb%3Fc", id="name-is-quoted"),
])
def test_resource_path(args, kwargs, expected):
    assert resource_path(*args, **kwargs) == expected


def test_a_subresource_needs_a_name():
    with pytest.raises(ValueError):
        resource_path("v1", "pods", namespace="ns", subresource="status")
