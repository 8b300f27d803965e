"""ResourceQuota counting and checks (quota.py), as upstream's evaluators and admission plugin count."""

from __future__ import annotations

import pytest

from control.api import quota
from control.apimachinery.quantity import Quantity


def pod(*containers, init=(), phase="Pending", **spec):
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers), "initContainers": list(init), **spec},
            "status": {"phase": phase}}


def container(name="c", requests=None, limits=None):
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "resources": resources}


def q(hard, scopes=None, name="q"):
    spec = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("obj,resource,expected", [
    pytest.param(pod(container(requests={"cpu": "100m"}), container(requests={"cpu": "200m"})), "requests.cpu",
                 "300m", id="sum-of-app-containers"),
    pytest.param(pod(container(requests={"cpu": "100m"}), init=[container("i", requests={"cpu": "1"})]),
                 "requests.cpu", "1", id="bigger-init-container-wins"),
    pytest.param(pod(container(limits={"memory": "64Mi"})), "requests.memory", "64Mi", id="limit-counts-as-request"),
    pytest.param(pod(container(limits={"memory": "64Mi"})), "limits.memory", "64Mi", id="limits"),
    pytest.param(pod(container()), "pods", "1", id="pod-count"),
    pytest.param(pod(container()), "count/pods", "1", id="object-count"),
])
def test_pod_usage(obj, resource, expected):
    assert quota.usage("pods", obj)[resource] == Quantity(expected)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pods_count_nothing(phase):
    assert quota.usage("pods", pod(container(requests={"cpu": "1"}), phase=phase)) == {}


@pytest.mark.parametrize("kind,nodeports,lbs", [
    pytest.param("ClusterIP", "0", "0", id="cluster-ip"),
    pytest.param("NodePort", "2", "0", id="node-port"),
    pytest.param("LoadBalancer", "2", "1", id="load-balancer"),
])
def test_service_usage(kind, nodeports, lbs):
    used = quota.usage("services", {"spec": {"type": kind, "ports": [{"port": 1}, {"port": 2}]}})
    assert used["services"] == Quantity("1")
    assert used["services.nodeports"] == Quantity(nodeports)
    assert used["services.loadbalancers"] == Quantity(lbs)


def test_group_resources_are_counted_by_group():
    assert quota.usage("deployments", {}, group="apps") == {"count/deployments.apps": Quantity("1")}


def test_check_allows_up_to_the_limit_and_names_what_is_exceeded():
    hard = q({"pods": "2", "requests.cpu": "1"})
    delta = quota.usage("pods", pod(container(requests={"cpu": "500m"})))
    used = quota.used_in("pods", [pod(container(requests={"cpu": "500m"}))])
    assert quota.check(hard, used, delta) is None
    used = quota.used_in("pods", [pod(container(requests={"cpu": "500m"}))] * 2)
    assert quota.check(hard, used, delta) == (
        "exceeded quota: q, requested: pods=1,requests.cpu=500m, used: pods=2,requests.cpu=1, "
        "limited: pods=2,requests.cpu=1")


def test_unconstrained_resources_are_ignored():
    delta = quota.usage("pods", pod(container(requests={"memory": "10Gi"})))
    assert quota.check(q({"pods": "10"}), {}, delta) is None


def test_constrained_compute_must_be_specified():
    obj = pod(container("app"))
    message = quota.check(q({"limits.memory": "1Gi"}), {}, quota.usage("pods", obj), obj=obj)
    assert message == "must specify limits.memory for: app"


@pytest.mark.parametrize("scopes,obj,expected", [
    pytest.param(["BestEffort"], pod(container()), True, id="best-effort"),
    pytest.param(["BestEffort"], pod(container(requests={"cpu": "1"})), False, id="not-best-effort"),
    pytest.param(["Terminating"], pod(container(), activeDeadlineSeconds=5), True, id="terminating"),
    pytest.param(["NotTerminating"], pod(container(), activeDeadlineSeconds=5), False, id="not-terminating"),
])
def test_scopes(scopes, obj, expected):
    assert quota.matches_scope(q({"pods": "1"}, scopes), "pods", obj) is expected


def test_scoped_quota_does_not_apply_to_other_kinds():
    assert not quota.matches_scope(q({"pods": "1"}, ["BestEffort"]), "services", {})
    assert quota.matches_scope(q({"services": "1"}), "services", {})


@pytest.mark.parametrize("hard,scopes,plural,obj,group,expected", [
    pytest.param({"pods": "1"}, None, "pods", pod(container()), "", True, id="pod-count"),
    pytest.param({"limits.memory": "1Gi"}, None, "pods", pod(container()), "", True,
                 id="compute-the-pod-must-specify"),
    pytest.param({"services": "1"}, None, "pods", pod(container()), "", False, id="other-kind"),
    pytest.param({"pods": "1"}, None, "pods", pod(container(), phase="Succeeded"), "", False,
                 id="finished-pod-counts-nothing"),
    pytest.param({"pods": "1"}, ["BestEffort"], "pods", pod(container(requests={"cpu": "1"})), "", False,
                 id="out-of-scope"),
    pytest.param({"count/deployments.apps": "1"}, None, "deployments", {}, "apps", True, id="object-count"),
    pytest.param({"services.nodeports": "1"}, None, "services", {"spec": {"type": "ClusterIP"}}, "", True,
                 id="zero-amount-still-checked"),
    pytest.param({"resourcequotas": "1"}, None, "resourcequotas", q({"pods": "1"}), "", False,
                 id="quotas-are-not-checked"),
])
def test_counts(hard, scopes, plural, obj, group, expected):
    assert quota.counts(q(hard, scopes), plural, obj, group=group) is expected


# -- status.used, as the resource quota controller computes it --------------------------------------------


@pytest.mark.parametrize(("name", "source"), [
    pytest.param("pods", ("", "pods"), id="pods"),
    pytest.param("requests.cpu", ("", "pods"), id="requests"),
    pytest.param("limits.memory", ("", "pods"), id="limits"),
    pytest.param("memory", ("", "pods"), id="bare-memory"),
    pytest.param("services.nodeports", ("", "services"), id="nodeports"),
    pytest.param("services.loadbalancers", ("", "services"), id="loadbalancers"),
    pytest.param("configmaps", ("", "configmaps"), id="configmaps"),
    pytest.param("persistentvolumeclaims", ("", "persistentvolumeclaims"), id="pvcs"),
    pytest.param("count/pods", ("", "pods"), id="count-core"),
    pytest.param("count/deployments.apps", ("apps", "deployments"), id="count-group"),
    pytest.param("requests.storage", ("", "persistentvolumeclaims"), id="storage"),
    pytest.param("gold.storageclass.storage.k8s.io/requests.storage", ("", "persistentvolumeclaims"),
                 id="storage-of-a-class"),
    pytest.param("gold.storageclass.storage.k8s.io/persistentvolumeclaims", ("", "persistentvolumeclaims"),
                 id="claims-of-a-class"),
    pytest.param("example.com/widgets", None, id="unknown"),
    pytest.param("count/", None, id="count-empty"),
])
def test_counted_by(name, source):
    assert quota.counted_by(name) == source


def test_status_used_sums_every_hard_resource_zero_included():
    pods = [
        pod(container(requests={"cpu": "250m", "memory": "64Mi"}, limits={"cpu": "500m", "memory": "128Mi"}),
            phase="Running"),
        # The init container's 1 cpu is more than the app containers' sum: it counts instead.
        pod(container(requests={"cpu": "100m", "memory": "64Mi"}), container("d", requests={"cpu": "100m"}),
            init=[container("i", requests={"cpu": "1"})], phase="Running"),
        pod(container(requests={"cpu": "4"}), phase="Succeeded"),  # finished: counts nothing
    ]
    services = [{"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}},
                {"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}, {"spec": {"type": "ClusterIP"}}]
    hard = {"pods": "10", "requests.cpu": "4", "cpu": "4", "requests.memory": "1Gi", "limits.cpu": "2",
            "limits.memory": "1Gi", "services": "5", "services.nodeports": "5", "services.loadbalancers": "1",
            "secrets": "3", "count/pods": "10", "requests.storage": "1Gi"}
    used = quota.status_used(q(hard), {("", "pods"): pods, ("", "services"): services, ("", "secrets"): []})
    assert used == {"pods": "2", "requests.cpu": "1250m", "cpu": "1250m", "requests.memory": "128Mi",
                    "limits.cpu": "500m", "limits.memory": "128Mi", "services": "3", "services.nodeports": "3",
                    "services.loadbalancers": "1", "secrets": "0", "count/pods": "2"}


def test_status_used_of_a_scoped_quota_counts_only_the_pods_in_scope():
    pods = [pod(container(requests={"cpu": "1"}), phase="Running"), pod(container(), phase="Running")]
    assert quota.status_used(q({"pods": "5"}, scopes=["BestEffort"]), {("", "pods"): pods}) == {"pods": "1"}
    assert quota.status_used(q({"pods": "5"}, scopes=["NotBestEffort"]), {("", "pods"): pods}) == {"pods": "1"}
    assert quota.status_used(q({"pods": "5"}), {("", "pods"): pods}) == {"pods": "2"}


# -- PersistentVolumeClaims (pkg/quota/v1/evaluator/core/persistent_volume_claims.go) -----------------------


def claim(storage=None, storage_class=None, *, beta_class=None, allocated=None):
    spec = {"resources": {"requests": {"storage": storage}} if storage else {}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    metadata = {"name": "data"}
    if beta_class is not None:
        metadata["annotations"] = {"volume.beta.kubernetes.io/storage-class": beta_class}
    status = {"allocatedResources": {"storage": allocated}} if allocated else {}
    return {"metadata": metadata, "spec": spec, "status": status}


GOLD = "gold.storageclass.storage.k8s.io/"


@pytest.mark.parametrize("obj,expected", [
    pytest.param(claim("1Gi", "gold"), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                        "requests.storage": "1Gi", GOLD + "persistentvolumeclaims": "1",
                                        GOLD + "requests.storage": "1Gi"}, id="class-and-request"),
    pytest.param(claim("1Gi"), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                "requests.storage": "1Gi"}, id="no-class-no-class-charge"),
    pytest.param(claim("1Gi", ""), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                    "requests.storage": "1Gi"}, id="empty-class-is-none"),
    pytest.param(claim(None, "gold"), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                       GOLD + "persistentvolumeclaims": "1"}, id="no-request-no-storage"),
    pytest.param(claim("1Gi", "silver", beta_class="gold"),
                 {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "1Gi",
                  GOLD + "persistentvolumeclaims": "1", GOLD + "requests.storage": "1Gi"},
                 id="beta-annotation-wins"),
    pytest.param(claim("1Gi", "gold", allocated="2Gi"),
                 {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "2Gi",
                  GOLD + "persistentvolumeclaims": "1", GOLD + "requests.storage": "2Gi"},
                 id="larger-allocation-counts"),
    pytest.param(claim("2Gi", allocated="1Gi"), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                                 "requests.storage": "2Gi"}, id="smaller-allocation-does-not"),
    pytest.param(claim("1500m"), {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
                                  "requests.storage": "2"}, id="whole-bytes-rounded-up"),
])
def test_claim_usage(obj, expected):
    assert quota.usage("persistentvolumeclaims", obj) == {k: Quantity(v) for k, v in expected.items()}


def test_claims_are_checked_against_storage_and_per_class_limits():
    hard = {"requests.storage": "10Gi", GOLD + "requests.storage": "3Gi", GOLD + "persistentvolumeclaims": "2"}
    gold_quota = q(hard, name="storage")
    existing = [claim("2Gi", "gold"), claim("4Gi", "silver")]
    used = quota.used_in("persistentvolumeclaims", existing)
    assert quota.counts(gold_quota, "persistentvolumeclaims", claim("1Gi", "gold"))
    assert quota.check(gold_quota, used, quota.usage("persistentvolumeclaims", claim("1Gi", "gold"))) is None
    assert quota.check(gold_quota, used, quota.usage("persistentvolumeclaims", claim("2Gi", "gold"))) == (
        f"exceeded quota: storage, requested: {GOLD}requests.storage=2Gi, used: {GOLD}requests.storage=2Gi, "
        f"limited: {GOLD}requests.storage=3Gi")
    # Another class is held only by the total.
    assert quota.check(gold_quota, used, quota.usage("persistentvolumeclaims", claim("4Gi", "silver"))) is None
    assert quota.check(gold_quota, used, quota.usage("persistentvolumeclaims", claim("5Gi", "silver"))) == (
        "exceeded quota: storage, requested: requests.storage=5Gi, used: requests.storage=6Gi, "
        "limited: requests.storage=10Gi")


def test_status_used_counts_claims_as_admission_does():
    claims = [claim("2Gi", "gold"), claim("4Gi", "silver"), claim(None, "gold")]
    hard = {"persistentvolumeclaims": "5", "requests.storage": "10Gi", GOLD + "requests.storage": "3Gi",
            GOLD + "persistentvolumeclaims": "4", "count/persistentvolumeclaims": "5"}
    used = quota.status_used(q(hard), {("", "persistentvolumeclaims"): claims})
    admitted = quota.used_in("persistentvolumeclaims", claims)
    assert used == {name: str(admitted[name]) for name in hard}
    assert used == {"persistentvolumeclaims": "3", "requests.storage": "6Gi", GOLD + "requests.storage": "2Gi",
                    GOLD + "persistentvolumeclaims": "2", "count/persistentvolumeclaims": "3"}
