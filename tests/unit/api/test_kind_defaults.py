"""control.api.defaults against upstream's pkg/apis/*/v1/defaults_test.go expectations."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from control.api.defaults import apply_defaults, image_pull_policy


def _pod_spec(**extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "nginx:1.25"}], **extra}


def _template(**extra: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}}, "spec": _pod_spec(**extra)}


@pytest.mark.parametrize(("image", "policy"), [
    pytest.param("nginx", "Always", id="untagged"),
    pytest.param("nginx:latest", "Always", id="latest"),
    pytest.param("nginx:1.25", "IfNotPresent", id="tagged"),
    pytest.param("localhost:5000/x", "Always", id="registry-port-not-a-tag"),
    pytest.param("localhost:5000/x:1", "IfNotPresent", id="registry-port-and-tag"),
    pytest.param("repo@sha256:abc", "IfNotPresent", id="digest"),
    pytest.param("repo:latest@sha256:abc", "IfNotPresent", id="latest-with-digest"),
])
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy
    pod = {"spec": {"containers": [{"name": "a", "image": image}]}}
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_pod_spec_defaults() -> None:
    pod = {"spec": {
        "containers": [{
            "name": "app", "image": "nginx",
            "ports": [{"containerPort": 80}],
            "livenessProbe": {"httpGet": {"port": 80}},
            "readinessProbe": {"tcpSocket": {"port": 80}},
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        }],
        "initContainers": [{"name": "init", "image": "busybox:1.36"}],
        "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}},
                    {"name": "s", "secret": {"secretName": "s"}}],
    }}
    apply_defaults("pods", pod)
    spec = pod["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy", "schedulerName",
                                 "securityContext", "enableServiceLinks")} == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler", "securityContext": {}, "enableServiceLinks": True}
    assert "priority" not in spec and "status" not in pod
    app, init = spec["containers"][0], spec["initContainers"][0]
    for container in (app, init):
        assert container["terminationMessagePath"] == "/dev/termination-log"
        assert container["terminationMessagePolicy"] == "File"
        assert container["resources"] == {}
    assert (app["imagePullPolicy"], init["imagePullPolicy"]) == ("Always", "IfNotPresent")
    assert app["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert app["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                    "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert app["readinessProbe"]["periodSeconds"] == 10
    assert app["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert spec["volumes"] == [{"name": "scratch", "emptyDir": {}},
                               {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
                               {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}}]


def test_pod_user_values_are_kept() -> None:
    container = {"name": "app", "image": "nginx", "imagePullPolicy": "Never", "terminationMessagePath": "/x",
                 "terminationMessagePolicy": "FallbackToLogsOnError", "resources": {"limits": {"cpu": "1"}},
                 "ports": [{"containerPort": 53, "protocol": "UDP"}],
                 "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5, "failureThreshold": 1}}
    spec = {"containers": [container], "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
            "dnsPolicy": "Default", "schedulerName": "mine", "securityContext": {"runAsUser": 1000},
            "enableServiceLinks": False, "volumes": [{"name": "v", "configMap": {"name": "c", "defaultMode": 256}}]}
    pod = {"spec": copy.deepcopy(spec)}
    apply_defaults("pods", pod)
    got = pod["spec"]
    for key in ("restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy", "schedulerName", "securityContext",
                "enableServiceLinks", "volumes"):
        assert got[key] == spec[key]
    kept = got["containers"][0]
    for key in ("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy", "ports"):
        assert kept[key] == container[key]
    assert kept["livenessProbe"]["periodSeconds"] == 5 and kept["livenessProbe"]["failureThreshold"] == 1
    # A Pod (not a template) requests what it limits, unless it says otherwise (upstream SetDefaults_Pod).
    assert kept["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}


def test_empty_string_counts_as_unset() -> None:
    pod = {"spec": {"restartPolicy": "", "containers": [{"name": "a", "image": "x", "imagePullPolicy": ""}]}}
    apply_defaults("pods", pod)
    assert pod["spec"]["restartPolicy"] == "Always"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"


@pytest.mark.parametrize(("plural", "obj", "spec_path"), [
    pytest.param("deployments", {"spec": {"template": _template()}}, ("spec", "template", "spec"), id="deployment"),
    pytest.param("replicasets", {"spec": {"template": _template()}}, ("spec", "template", "spec"), id="replicaset"),
    pytest.param("replicationcontrollers", {"spec": {"template": _template()}}, ("spec", "template", "spec"),
                 id="replicationcontroller"),
    pytest.param("daemonsets", {"spec": {"template": _template()}}, ("spec", "template", "spec"), id="daemonset"),
    pytest.param("statefulsets", {"spec": {"template": _template()}}, ("spec", "template", "spec"), id="statefulset"),
    pytest.param("jobs", {"spec": {"template": _template()}}, ("spec", "template", "spec"), id="job"),
    pytest.param("cronjobs", {"spec": {"jobTemplate": {"spec": {"template": _template()}}}},
                 ("spec", "jobTemplate", "spec", "template", "spec"), id="cronjob"),
])
def test_pod_templates_get_pod_spec_defaults(plural: str, obj: dict[str, Any], spec_path: tuple[str, ...]) -> None:
    apply_defaults(plural, obj)
    spec = obj
    for key in spec_path:
        spec = spec[key]
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize(("plural", "obj", "expected"), [
    pytest.param("services", {"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}},
                 {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                  "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                            {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}, id="service-clusterip"),
    pytest.param("services", {"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080}]}},
                 {"type": "NodePort", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                  "externalTrafficPolicy": "Cluster",
                  "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}, id="service-nodeport"),
    pytest.param("services", {"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}},
                 {"type": "LoadBalancer", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                  "externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": True}, id="service-lb"),
    pytest.param("services", {"spec": {"sessionAffinity": "ClientIP"}},
                 {"type": "ClusterIP", "sessionAffinity": "ClientIP", "internalTrafficPolicy": "Cluster",
                  "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}, id="service-clientip"),
    pytest.param("services", {"spec": {"type": "ExternalName", "externalName": "db.example.com"}},
                 {"type": "ExternalName", "sessionAffinity": "None", "externalName": "db.example.com"},
                 id="service-externalname"),
    pytest.param("deployments", {"spec": {}},
                 {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                  "strategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}}, id="deployment"),
    pytest.param("deployments", {"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}},
                 {"replicas": 0, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                  "strategy": {"type": "Recreate"}}, id="deployment-recreate"),
    pytest.param("deployments", {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0}}}},
                 {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                  "strategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 0}}}, id="deployment-partial"),
    pytest.param("replicasets", {"spec": {}}, {"replicas": 1}, id="replicaset"),
    pytest.param("daemonsets", {"spec": {}},
                 {"revisionHistoryLimit": 10,
                  "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
                 id="daemonset"),
    pytest.param("daemonsets", {"spec": {"updateStrategy": {"type": "OnDelete"}}},
                 {"revisionHistoryLimit": 10, "updateStrategy": {"type": "OnDelete"}}, id="daemonset-ondelete"),
    pytest.param("statefulsets", {"spec": {}},
                 {"replicas": 1, "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
                  "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                  "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}},
                 id="statefulset"),
    pytest.param("jobs", {"spec": {}},
                 {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                  "suspend": False, "podReplacementPolicy": "TerminatingOrFailed"}, id="job"),
    pytest.param("jobs", {"spec": {"parallelism": 3}},
                 {"parallelism": 3, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
                  "podReplacementPolicy": "TerminatingOrFailed"}, id="job-work-queue"),
    pytest.param("jobs", {"spec": {"completions": 5, "backoffLimit": 0, "suspend": True}},
                 {"parallelism": 1, "completions": 5, "backoffLimit": 0, "completionMode": "NonIndexed",
                  "suspend": True, "podReplacementPolicy": "TerminatingOrFailed"}, id="job-user-values"),
    pytest.param("jobs", {"spec": {"podFailurePolicy": {"rules": []}}},
                 {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                  "suspend": False, "podFailurePolicy": {"rules": []}, "podReplacementPolicy": "Failed"},
                 id="job-with-pod-failure-policy"),
    pytest.param("cronjobs", {"spec": {"schedule": "* * * * *"}},
                 {"schedule": "* * * * *", "concurrencyPolicy": "Allow", "suspend": False,
                  "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}, id="cronjob"),
    pytest.param("cronjobs", {"spec": {"concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 0}},
                 {"concurrencyPolicy": "Forbid", "suspend": False, "successfulJobsHistoryLimit": 0,
                  "failedJobsHistoryLimit": 1}, id="cronjob-user-values"),
])
def test_spec_defaults(plural: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    apply_defaults(plural, obj)
    assert obj["spec"] == expected


def test_replication_controller_takes_selector_and_labels_from_template() -> None:
    rc = {"metadata": {"name": "rc"}, "spec": {"template": _template()}}
    apply_defaults("replicationcontrollers", rc)
    assert rc["spec"]["selector"] == {"app": "web"} and rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1
    mine = {"metadata": {"labels": {"own": "x"}}, "spec": {"selector": {"app": "web"}, "template": _template()}}
    apply_defaults("replicationcontrollers", mine)
    assert mine["metadata"]["labels"] == {"own": "x"}


def test_job_labels_come_from_template() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"template": _template(restartPolicy="Never")}}
    apply_defaults("jobs", job)
    assert job["metadata"]["labels"] == {"app": "web"}
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(("plural", "obj", "expected"), [
    pytest.param("namespaces", {"metadata": {"name": "a"}},
                 {"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
                 id="namespace"),
    pytest.param("namespaces", {"spec": {"finalizers": []}, "status": {"phase": "Terminating"}},
                 {"spec": {"finalizers": []}, "status": {"phase": "Terminating"}}, id="namespace-kept"),
    pytest.param("secrets", {"data": {}}, {"data": {}, "type": "Opaque"}, id="secret"),
    pytest.param("secrets", {"type": "kubernetes.io/tls"}, {"type": "kubernetes.io/tls"}, id="secret-typed"),
    pytest.param("endpoints", {"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]},
                 {"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}]},
                 id="endpoints"),
    pytest.param("configmaps", {"data": {"a": "b"}}, {"data": {"a": "b"}}, id="configmap-untouched"),
    pytest.param("nodes", {"spec": {}}, {"spec": {}}, id="node-untouched"),
    pytest.param("leases", {"spec": {}}, {"spec": {}}, id="lease-untouched"),
    pytest.param("widgets", {"spec": {}}, {"spec": {}}, id="unknown-plural"),
])
def test_other_kinds(plural: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    apply_defaults(plural, obj)
    assert obj == expected


@pytest.mark.parametrize("plural", ["pods", "services", "deployments", "replicationcontrollers", "daemonsets",
                                    "statefulsets", "jobs", "cronjobs", "namespaces", "endpoints", "secrets"])
@pytest.mark.parametrize("obj", [
    pytest.param({}, id="empty"),
    pytest.param({"spec": None, "metadata": None, "status": None}, id="nulls"),
    pytest.param({"spec": [], "metadata": "x", "status": 3, "subsets": "x"}, id="wrong-types"),
    pytest.param({"spec": {"containers": "x", "template": [], "strategy": 1, "updateStrategy": "x", "ports": {},
                           "jobTemplate": {"spec": []}, "persistentVolumeClaimRetentionPolicy": 1,
                           "sessionAffinity": "ClientIP", "sessionAffinityConfig": []}}, id="wrong-nested"),
    pytest.param({"spec": {"containers": [None, 1, {"image": 5, "ports": [None], "livenessProbe": []}],
                           "volumes": ["x"], "template": {"metadata": {"labels": []}, "spec": {"containers": [1]}}}},
                 id="wrong-items"),
])
def test_malformed_objects_never_raise(plural: str, obj: dict[str, Any]) -> None:
    apply_defaults(plural, copy.deepcopy(obj))


def test_job_selector_generated_from_uid_unless_manual() -> None:
    from control.api.batch import generate_job_selector

    job = {"metadata": {"name": "pi"}, "spec": {"template": _template(restartPolicy="Never")}}
    generate_job_selector(job, "u-1")
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "app": "web", "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1",
        "batch.kubernetes.io/controller-uid": "u-1"}
    manual = {"metadata": {"name": "pi"}, "spec": {"manualSelector": True, "template": _template()}}
    generate_job_selector(manual, "u-1")
    assert "selector" not in manual["spec"] and manual["spec"]["template"]["metadata"]["labels"] == {"app": "web"}
