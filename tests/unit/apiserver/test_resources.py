"""The resource table matches upstream's discovery facts and every lookup finds what it lists."""

from __future__ import annotations

import pytest

from control.apiserver import resources
from control.apiserver.resources import ALL_VERBS, RESOURCES, by_kind, by_path, storage_key, storage_prefix


@pytest.mark.parametrize("resource", [pytest.param(r, id=f"{r.group or 'core'}/{r.plural}") for r in RESOURCES])
def test_every_resource_round_trips_through_lookups(resource):
    assert by_path(resource.group, resource.version, resource.plural) is resource
    if resource.plural != "bindings":  # pods/binding shares the kind; the top-level resource wins
        assert by_kind(resource.api_version, resource.kind) is resource
    assert storage_key(resource, "ns", "obj").startswith(storage_prefix(resource))


@pytest.mark.parametrize(
    ("group", "plural", "api_version", "kind", "namespaced", "short_names"),
    [
        pytest.param("", "namespaces", "v1", "Namespace", False, ("ns",), id="namespaces"),
        pytest.param("", "pods", "v1", "Pod", True, ("po",), id="pods"),
        pytest.param("", "services", "v1", "Service", True, ("svc",), id="services"),
        pytest.param("", "endpoints", "v1", "Endpoints", True, ("ep",), id="endpoints"),
        pytest.param("", "nodes", "v1", "Node", False, ("no",), id="nodes"),
        pytest.param("", "configmaps", "v1", "ConfigMap", True, ("cm",), id="configmaps"),
        pytest.param("", "secrets", "v1", "Secret", True, (), id="secrets"),
        pytest.param("", "events", "v1", "Event", True, ("ev",), id="events"),
        pytest.param("", "resourcequotas", "v1", "ResourceQuota", True, ("quota",), id="resourcequotas"),
        pytest.param("", "serviceaccounts", "v1", "ServiceAccount", True, ("sa",), id="serviceaccounts"),
        pytest.param("", "replicationcontrollers", "v1", "ReplicationController", True, ("rc",), id="rc"),
        pytest.param("coordination.k8s.io", "leases", "coordination.k8s.io/v1", "Lease", True, (), id="leases"),
        pytest.param("apps", "deployments", "apps/v1", "Deployment", True, ("deploy",), id="deployments"),
        pytest.param("apps", "replicasets", "apps/v1", "ReplicaSet", True, ("rs",), id="replicasets"),
        pytest.param("apps", "daemonsets", "apps/v1", "DaemonSet", True, ("ds",), id="daemonsets"),
        pytest.param("apps", "statefulsets", "apps/v1", "StatefulSet", True, ("sts",), id="statefulsets"),
        pytest.param("batch", "jobs", "batch/v1", "Job", True, (), id="jobs"),
        pytest.param("batch", "cronjobs", "batch/v1", "CronJob", True, ("cj",), id="cronjobs"),
    ],
)
def test_upstream_names_and_scope(group, plural, api_version, kind, namespaced, short_names):
    resource = by_path(group, "v1", plural)
    assert (resource.api_version, resource.kind, resource.namespaced, resource.short_names) == (
        api_version, kind, namespaced, short_names)


def test_category_all_is_exactly_upstreams_set():
    assert {r.plural for r in RESOURCES if "all" in r.categories} == {
        "pods", "services", "replicationcontrollers", "deployments", "replicasets", "daemonsets",
        "statefulsets", "jobs", "cronjobs", "horizontalpodautoscalers"}


@pytest.mark.parametrize(
    ("plural", "verbs"),
    [
        pytest.param("pods", ALL_VERBS, id="pods-full"),
        pytest.param("namespaces", ("create", "delete", "get", "list", "patch", "update", "watch"),
                     id="namespaces-no-deletecollection"),
        pytest.param("bindings", ("create",), id="bindings-create-only"),
    ],
)
def test_verbs(plural, verbs):
    assert by_path("", "v1", plural).verbs == verbs


@pytest.mark.parametrize(
    ("group", "plural", "subresources"),
    [
        pytest.param("", "pods", {"status", "binding", "log", "exec", "attach", "portforward", "eviction"}, id="pods"),
        pytest.param("policy", "poddisruptionbudgets", {"status"}, id="pdb"),
        pytest.param("", "namespaces", {"status", "finalize"}, id="namespaces"),
        pytest.param("", "replicationcontrollers", {"status", "scale"}, id="rc"),
        pytest.param("apps", "deployments", {"status", "scale"}, id="deployments"),
        pytest.param("apps", "daemonsets", {"status"}, id="daemonsets"),
        pytest.param("", "configmaps", set(), id="configmaps"),
    ],
)
def test_subresources(group, plural, subresources):
    assert set(by_path(group, "v1", plural).subresources) == subresources


def test_scale_is_an_autoscaling_v1_scale():
    scale = by_path("apps", "v1", "statefulsets").subresources["scale"]
    assert (scale.group, scale.version, scale.kind, scale.verbs) == ("autoscaling", "v1", "Scale",
                                                                    ("get", "patch", "update"))


@pytest.mark.parametrize(
    ("lookup", "found"),
    [
        pytest.param(lambda: by_path("", "v1", "deployments"), None, id="deployments-not-core"),
        pytest.param(lambda: by_path("apps", "v1beta1", "deployments"), None, id="unserved-version"),
        pytest.param(lambda: by_kind("apps/v1", "Pod"), None, id="kind-in-wrong-group"),
        pytest.param(lambda: by_kind("a/b/c", "Pod"), None, id="malformed-api-version"),
        pytest.param(lambda: by_kind("v1", "Pod").plural, "pods", id="core-kind"),
        pytest.param(lambda: by_kind("batch/v1", "CronJob").plural, "cronjobs", id="group-kind"),
    ],
)
def test_lookups_miss_cleanly(lookup, found):
    assert lookup() == found


@pytest.mark.parametrize(
    ("group", "plural", "namespace", "key"),
    [
        pytest.param("", "pods", "default", "/registry/pods/default/obj", id="namespaced"),
        pytest.param("", "nodes", "ignored", "/registry/nodes/obj", id="cluster-scoped"),
        pytest.param("apps", "deployments", "kube-system", "/registry/deployments/kube-system/obj", id="group"),
    ],
)
def test_storage_keys(group, plural, namespace, key):
    assert storage_key(by_path(group, "v1", plural), namespace, "obj") == key


@pytest.mark.parametrize(("namespace", "name"), [pytest.param("", "x", id="no-namespace"),
                                                 pytest.param("ns", "", id="no-name")])
def test_storage_key_refuses_incomplete_keys(namespace, name):
    with pytest.raises(ValueError):
        storage_key(by_path("", "v1", "pods"), namespace, name)


def test_group_versions_core_first_and_plurals_unique():
    assert resources.ServedResources().group_versions() == [
        ("", "v1"), ("apps", "v1"), ("batch", "v1"), ("autoscaling", "v2"), ("autoscaling", "v1"),
        ("certificates.k8s.io", "v1"), ("networking.k8s.io", "v1"),
        ("storage.k8s.io", "v1"), ("admissionregistration.k8s.io", "v1"), ("apiregistration.k8s.io", "v1"),
        ("node.k8s.io", "v1"), ("coordination.k8s.io", "v1"), ("scheduling.k8s.io", "v1"), ("discovery.k8s.io", "v1"),
        ("policy", "v1"), ("rbac.authorization.k8s.io", "v1"), ("apiextensions.k8s.io", "v1")]
    plurals = [r.plural for r in RESOURCES if not r.storage_version]  # a view shares its stored version's key
    assert len(plurals) == len(set(plurals))  # storage keys carry no group
    assert resources.storage_resource(resources.by_path("autoscaling", "v1", "horizontalpodautoscalers")) is \
        resources.by_path("autoscaling", "v2", "horizontalpodautoscalers")
