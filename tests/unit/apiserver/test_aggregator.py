"""The aggregation layer's decisions (control/apiserver/aggregator/backends.py, proxy.identity_headers): which
APIServices are proxied, the Available condition before dialling (upstream's reasons and messages), the
remote groups in `/apis` and in aggregated discovery, and the identity headers."""

from __future__ import annotations

import pytest

from control.apiserver.aggregator import backends
from control.apiserver.aggregator.proxy import identity_headers
from control.apiserver.authentication.tokens import UserInfo


def api_service(group: str = "g.example.com", version: str = "v1", **spec) -> dict:
    return {"metadata": {"name": f"{version}.{group}"},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 100, "versionPriority": 10, **spec}}


BACKEND = backends.backend_of(api_service(service={"namespace": "ns", "name": "svc"}))
SERVICE = {"spec": {"ports": [{"name": "https", "port": 443}]}}


def test_only_service_backed_apiservices_are_proxied() -> None:
    assert backends.backend_of(api_service()) is None
    assert BACKEND is not None
    assert (BACKEND.namespace, BACKEND.service, BACKEND.port, BACKEND.group_version) == \
        ("ns", "svc", 443, "g.example.com/v1")


@pytest.mark.parametrize(("service", "endpoints", "routing", "expected"), [
    pytest.param(None, None, True, ("ServiceNotFound", 'service/svc in "ns" is not present'), id="no service"),
    pytest.param({"spec": {"ports": [{"port": 8443}]}}, None, True,
                 ("ServicePortError", 'service/svc in "ns" is not listening on port 443'), id="port"),
    pytest.param(SERVICE, None, True, ("EndpointsNotFound", 'cannot find endpoints for service/svc in "ns"'),
                 id="no endpoints"),
    pytest.param(SERVICE, {"subsets": [{"addresses": [], "ports": [{"name": "https", "port": 8443}]}]}, True,
                 ("MissingEndpoints", 'endpoints for service/svc in "ns" have no addresses with port name "https"'),
                 id="no addresses"),
    pytest.param(SERVICE, {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "https"}]}]}, True,
                 None, id="ready"),
    pytest.param(SERVICE, None, False, None, id="ClusterIP routing needs no endpoints"),
])
def test_service_condition(service, endpoints, routing: bool, expected) -> None:
    assert BACKEND is not None
    found = backends.service_condition(BACKEND, service, endpoints, endpoint_routing=routing)
    assert (found if found is None else (found["reason"], found["message"])) == expected


def test_remote_groups_in_discovery() -> None:
    one = backends.backend_of(api_service(version="v1", service={"name": "s"}))
    two = backends.backend_of(api_service(version="v2", versionPriority=20, service={"name": "s"}))
    local = backends.backend_of(api_service(group="apps", service={"name": "s"}))
    assert one is not None and two is not None and local is not None
    entries = backends.group_list_entries([one, two, local], {"apps"})
    assert entries == [{"name": "g.example.com",
                        "versions": [{"groupVersion": "g.example.com/v2", "version": "v2"},
                                     {"groupVersion": "g.example.com/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": "g.example.com/v2", "version": "v2"}}]
    document = backends.aggregated_group("g.example.com", {"v1": {"resources": [
        {"name": "things", "singularName": "thing", "namespaced": True, "kind": "Thing", "verbs": ["get"]},
        {"name": "things/status", "namespaced": True, "kind": "Thing", "verbs": ["get"]}]}})
    resource = document["versions"][0]["resources"][0]
    assert (resource["resource"], resource["scope"], resource["responseKind"]["kind"]) == ("things", "Namespaced",
                                                                                         "Thing")
    assert [s["subresource"] for s in resource["subresources"]] == ["status"]


def test_identity_headers() -> None:
    headers = identity_headers(UserInfo("jane", groups=("dev",), extra=(("scopes", ("a", "b")),)))
    assert headers["X-Remote-User"] == "jane"
    assert headers.getall("X-Remote-Group") == ["dev", "system:authenticated"]
    assert headers.getall("X-Remote-Extra-scopes") == ["a", "b"]
