"""ServerDiscovery (control/controllers/shared/discovery.py) over the real server's discovery documents
(control/apiserver/endpoints/discovery.py builds them from the resource table): each group's preferred version,
subresources left out, a failing group version reported (ErrGroupDiscoveryFailed's message) and the rest
kept; and the controllers of this part registered under upstream's names with the manager's settings."""

from __future__ import annotations

from control.apiserver.endpoints import discovery as documents
from control.apiserver.resources import (
    COMPONENT_STATUSES,
    METRICS_RESOURCES,
    RESOURCES,
    REVIEW_RESOURCES,
    ServedResources,
)
from control.client.errors import ApiError, NotFound
from control.controllers.manager import CONTROLLERS, ControllerManagerConfiguration
from control.controllers.shared.discovery import ServerDiscovery


class DocumentGetter:
    """GETs answered with the documents the API server serves; `broken` group versions answer 503."""

    def __init__(self, *broken: str) -> None:
        self.broken = set(broken)

    def get(self, path, *, params=None):
        if path == "/apis":
            return documents.api_group_list(ServedResources())
        group_version = path.removeprefix("/api/").removeprefix("/apis/")
        if group_version in self.broken:
            raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request")
        for group, version in {(r.group, r.version) for r in RESOURCES + METRICS_RESOURCES + REVIEW_RESOURCES}:
            if group_version == (f"{group}/{version}" if group else version):
                return documents.api_resource_list(ServedResources(), group, version)
        raise NotFound(404, "NotFound", path)


def test_every_served_resource_of_the_preferred_versions():
    result = ServerDiscovery(DocumentGetter()).preferred_resources()
    assert not result.failed
    found = {(r.api_version, r.plural) for r in result.resources}
    # of autoscaling only v2, the preferred version (v1 is a view of the same objects)
    assert found == {(r.api_version, r.plural) for r in (*RESOURCES, *METRICS_RESOURCES, *REVIEW_RESOURCES,
                                                         COMPONENT_STATUSES)
                     if not r.storage_version}
    # the metrics API cannot be deleted or watched: the namespace and garbage collectors pass it by
    assert not any(r.supports("delete") or r.supports("watch") for r in result.resources
                   if r.api_version == "metrics.k8s.io/v1beta1")
    pods = next(r for r in result.resources if r.plural == "pods" and r.api_version == "v1")
    assert pods.kind == "Pod" and pods.namespaced and pods.supports("list", "watch", "delete", "deletecollection")
    namespaces = next(r for r in result.resources if r.plural == "namespaces")
    assert not namespaces.namespaced and not namespaces.supports("deletecollection")


def test_a_failing_group_version_is_reported_and_the_rest_kept():
    result = ServerDiscovery(DocumentGetter("apps/v1")).preferred_resources()
    assert set(result.failed) == {"apps/v1"}
    assert result.error_message() == ("unable to retrieve the complete list of server APIs: apps/v1: 503 "
                                      "ServiceUnavailable: the server is currently unable to handle the request")
    assert "deployments" not in {r.plural for r in result.resources}
    assert "configmaps" in {r.plural for r in result.resources}


def test_controllers_registered_under_upstream_names_with_upstream_defaults():
    assert {"garbagecollector", "podgc", "namespace", "serviceaccount", "root-ca-cert-publisher"} <= set(CONTROLLERS)
    config = ControllerManagerConfiguration()
    assert config.terminated_pod_gc_threshold == 12500 and config.root_ca_pem == ""
