"""Discovery documents have the shape and content kubectl and client-go read."""

from __future__ import annotations

import pytest

from control.apiserver.endpoints import discovery
from control.apiserver.resources import ServedResources
from control.util.version import KUBERNETES_MINOR, KUBERNETES_VERSION

TABLE = ServedResources()  # the built-in table: no custom resources


def _entries(group: str, version: str = "v1") -> dict[str, dict]:
    return {entry["name"]: entry for entry in discovery.api_resource_list(TABLE, group, version)["resources"]}


def test_version_info():
    info = discovery.version_info(platform="linux/amd64", python_version="3.11.9")
    assert info["major"] == "1" and info["minor"] == KUBERNETES_MINOR
    assert info["gitVersion"] == KUBERNETES_VERSION and info["platform"] == "linux/amd64"
    assert set(info) == {"major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion",
                         "compiler", "platform"}


def test_api_versions():
    assert discovery.api_versions("10.0.0.1:6443") == {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]}


def test_api_group_list_has_named_groups_with_preferred_version():
    groups = {g["name"]: g for g in discovery.api_group_list(TABLE)["groups"]}
    assert set(groups) == {"apps", "batch", "autoscaling", "coordination.k8s.io", "scheduling.k8s.io",
                           "discovery.k8s.io", "policy", "networking.k8s.io", "storage.k8s.io",
                           "certificates.k8s.io", "node.k8s.io", "apiregistration.k8s.io",
                           "admissionregistration.k8s.io", "apiextensions.k8s.io", "metrics.k8s.io",
                           "rbac.authorization.k8s.io", "authentication.k8s.io", "authorization.k8s.io"}
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert groups["apps"]["versions"] == [{"groupVersion": "apps/v1", "version": "v1"}]
    assert groups["autoscaling"]["preferredVersion"] == {"groupVersion": "autoscaling/v2", "version": "v2"}
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]


def test_metrics_group_lists_node_and_pod_metrics_as_metrics_server_does():
    """kubectl top looks the group up in /apis, then the resources in /apis/metrics.k8s.io/v1beta1."""
    assert discovery.api_group(TABLE, "metrics.k8s.io")["preferredVersion"] == {
        "groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
    document = discovery.api_resource_list(TABLE, "metrics.k8s.io", "v1beta1")
    assert document["resources"] == [
        {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]}]


@pytest.mark.parametrize(
    ("group", "found"),
    [pytest.param("batch", True, id="served"), pytest.param("policy", True, id="policy"),
     pytest.param("example.com", False, id="unserved"),
     pytest.param("", False, id="core-is-not-a-named-group")],
)
def test_api_group(group, found):
    document = discovery.api_group(TABLE, group)
    assert (document is not None) == found
    if found:
        assert document["kind"] == "APIGroup" and document["name"] == group


@pytest.mark.parametrize(
    ("group", "name", "expected"),
    [
        pytest.param("", "pods/status", {"kind": "Pod", "verbs": ["get", "patch", "update"], "singularName": ""},
                     id="pods-status"),
        pytest.param("", "pods/log", {"kind": "Pod", "verbs": ["get"]}, id="pods-log"),
        pytest.param("", "pods/exec", {"kind": "PodExecOptions", "verbs": ["create", "get"]}, id="pods-exec"),
        pytest.param("", "pods/binding", {"kind": "Binding", "verbs": ["create"]}, id="pods-binding"),
        pytest.param("", "namespaces/finalize", {"kind": "Namespace", "verbs": ["update"], "namespaced": False},
                     id="namespaces-finalize"),
        pytest.param("", "replicationcontrollers/scale", {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                     id="rc-scale"),
        pytest.param("apps", "deployments/scale",
                     {"group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
                      "namespaced": True}, id="deployments-scale"),
        pytest.param("apps", "deployments",
                     {"singularName": "deployment", "kind": "Deployment", "shortNames": ["deploy"],
                      "categories": ["all"], "namespaced": True}, id="deployments"),
        pytest.param("", "bindings", {"kind": "Binding", "verbs": ["create"], "singularName": "binding"},
                     id="bindings"),
        pytest.param("coordination.k8s.io", "leases", {"kind": "Lease", "singularName": "lease"}, id="leases"),
    ],
)
def test_resource_entries(group, name, expected):
    entry = _entries(group)[name]
    assert {key: entry[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("group", "name"),
    [pytest.param("", "pods/status", id="status-has-no-group"), pytest.param("", "secrets", id="no-short-names"),
     pytest.param("", "configmaps", id="no-categories")],
)
def test_empty_fields_are_left_out(group, name):
    entry = _entries(group)[name]
    assert "group" not in entry and "categories" not in entry
    if name == "secrets":
        assert "shortNames" not in entry


def test_category_all_in_discovery():
    with_all = {name for group in ("", "apps", "batch", "coordination.k8s.io")
                for name, entry in _entries(group).items() if "all" in entry.get("categories", [])}
    assert with_all == {"pods", "services", "replicationcontrollers", "deployments", "replicasets", "daemonsets",
                        "statefulsets", "jobs", "cronjobs"}


def test_resource_lists():
    core = discovery.api_resource_list(TABLE, "", "v1")
    assert core["groupVersion"] == "v1" and "apiVersion" not in core
    names = [entry["name"] for entry in core["resources"]]
    assert names == sorted(names)
    apps = discovery.api_resource_list(TABLE, "apps", "v1")
    assert (apps["kind"], apps["apiVersion"], apps["groupVersion"]) == ("APIResourceList", "v1", "apps/v1")
    assert discovery.api_resource_list(TABLE, "apps", "v1beta1") is None
    assert discovery.CONTENT_TYPE == "application/json"
