"""control.api.validation (core, apps, batch, policy) against upstream's field paths, error types and messages."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from control.api.defaults import apply_defaults
from control.api.validation import validate
from control.api.validation.apps import STATEFULSET_UPDATE_MESSAGE
from control.api.validation.core import POD_UPDATE_MESSAGE
from control.apimachinery.validation import ErrorType

Obj = dict[str, Any]


def _pod_spec(**extra: Any) -> Obj:
    return {
        "containers": [{
            "name": "web", "image": "nginx:1.25",
            "ports": [{"name": "http", "containerPort": 80}],
            "env": [{"name": "MODE", "value": "prod"}],
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/nginx/conf.d"}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
        }],
        "initContainers": [{"name": "setup", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}],
        "volumes": [{"name": "config", "configMap": {"name": "nginx-conf"}}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        **extra,
    }


def _template(**extra: Any) -> Obj:
    return {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": _pod_spec(**extra)}


def _meta(name: str = "web") -> Obj:
    return {"name": name, "namespace": "default", "labels": {"app": "web"},
            "annotations": {"example.com/owner": "team-a"}}


VALID: dict[str, Obj] = {
    "pods": {"metadata": _meta(), "spec": _pod_spec()},
    "services": {"metadata": _meta(), "spec": {"selector": {"app": "web"}, "ports": [
        {"name": "http", "port": 80, "targetPort": "http"}, {"name": "metrics", "port": 9090, "targetPort": 9090}]}},
    "deployments": {"metadata": _meta(), "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                                  "template": _template()}},
    "replicasets": {"metadata": _meta(), "spec": {"replicas": 2, "selector": {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front", "back"]}]}, "template": _template()}},
    "daemonsets": {"metadata": _meta(), "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template()}},
    "statefulsets": {"metadata": _meta(), "spec": {"serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                                                   "template": _template()}},
    "replicationcontrollers": {"metadata": _meta(), "spec": {"replicas": 1, "selector": {"app": "web"},
                                                             "template": _template()}},
    "jobs": {"metadata": _meta("pi"), "spec": {"backoffLimit": 4, "template": _template(restartPolicy="Never")}},
    "cronjobs": {"metadata": _meta("report"), "spec": {
        "schedule": "*/15 9-17 * jan-jun mon-fri", "concurrencyPolicy": "Forbid",
        "jobTemplate": {"spec": {"template": _template(restartPolicy="OnFailure")}}}},
    "namespaces": {"metadata": {"name": "team-a", "labels": {"env": "prod"}}},
    "configmaps": {"metadata": _meta("nginx-conf"), "data": {"default.conf": "server {}", "KEY_NAME": "v"},
                   "binaryData": {"logo.png": "iVBORw0KGgo="}},
    "secrets": {"metadata": _meta("creds"), "type": "Opaque", "data": {"password": "aHVudGVyMg=="},
                "stringData": {"user": "admin"}},
    "endpoints": {"metadata": _meta(), "subsets": [{"addresses": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                                                    "ports": [{"port": 80}]}]},
    "nodes": {"metadata": {"name": "node-1.example.com", "labels": {"kubernetes.io/hostname": "node-1"}}},
    "events": {"metadata": _meta("web.17a2b3c4"), "involvedObject": {"kind": "Pod", "name": "web"},
               "reason": "Started"},
    "leases": {"metadata": _meta("controller"), "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 15}},
    "resourcequotas": {"metadata": _meta("quota"), "spec": {"hard": {"pods": "10", "requests.cpu": "4",
                                                                     "requests.memory": 8589934592}}},
    "serviceaccounts": {"metadata": _meta("builder")},
    "controllerrevisions": {"metadata": _meta("web-5d8f9c7b6"), "revision": 2,
                            "data": {"spec": {"template": {"$patch": "replace"}}}},
}


@pytest.mark.parametrize("plural", sorted(VALID))
def test_valid_manifests_pass(plural: str) -> None:
    """As the server sees them: defaulted first, as upstream's decoder does before any validation."""
    obj = copy.deepcopy(VALID[plural])
    apply_defaults(plural, obj)
    assert [e.message for e in validate(plural, obj)] == []
    assert [e.message for e in validate(plural, obj, old=copy.deepcopy(obj))] == []


def _edit(plural: str, change: Callable[[Obj], object]) -> Obj:
    obj = copy.deepcopy(VALID[plural])
    apply_defaults(plural, obj)
    change(obj)
    return obj


def _container(obj: Obj) -> Obj:
    return obj["spec"]["containers"][0]


def _tpl(obj: Obj) -> Obj:
    return obj["spec"]["template"]["spec"]


CASES = [
    # metadata
    pytest.param("pods", lambda o: o["metadata"].pop("name"), "metadata.name", ErrorType.REQUIRED, id="name-required"),
    pytest.param("pods", lambda o: o["metadata"].update(name="Web_1"), "metadata.name", ErrorType.INVALID,
                 id="name-subdomain"),
    pytest.param("services", lambda o: o["metadata"].update(name="1web"), "metadata.name", ErrorType.INVALID,
                 id="service-name-dns1035"),
    pytest.param("namespaces", lambda o: o["metadata"].update(name="a.b"), "metadata.name", ErrorType.INVALID,
                 id="namespace-name-label"),
    pytest.param("pods", lambda o: o["metadata"]["labels"].update({"bad key": "x"}), "metadata.labels",
                 ErrorType.INVALID, id="label-key"),
    pytest.param("pods", lambda o: o["metadata"]["annotations"].update({"/x": "y"}), "metadata.annotations",
                 ErrorType.INVALID, id="annotation-key"),
    # pods
    pytest.param("pods", lambda o: o["spec"].update(containers=[]), "spec.containers", ErrorType.REQUIRED,
                 id="containers-required"),
    pytest.param("pods", lambda o: _container(o).pop("name"), "spec.containers[0].name", ErrorType.REQUIRED,
                 id="container-name-required"),
    pytest.param("pods", lambda o: _container(o).update(name="Web"), "spec.containers[0].name", ErrorType.INVALID,
                 id="container-name-label"),
    pytest.param("pods", lambda o: o["spec"]["initContainers"][0].update(name="web"), "spec.initContainers[0].name",
                 ErrorType.DUPLICATE, id="container-name-duplicate"),
    pytest.param("pods", lambda o: _container(o).pop("image"), "spec.containers[0].image", ErrorType.REQUIRED,
                 id="image-required"),
    pytest.param("pods", lambda o: _container(o)["ports"][0].update(containerPort=70000),
                 "spec.containers[0].ports[0].containerPort", ErrorType.INVALID, id="container-port-range"),
    pytest.param("pods", lambda o: _container(o)["ports"][0].update(protocol="HTTP"),
                 "spec.containers[0].ports[0].protocol", ErrorType.NOT_SUPPORTED, id="container-port-protocol"),
    pytest.param("pods", lambda o: _container(o)["ports"][0].update(name="HTTP_1"),
                 "spec.containers[0].ports[0].name", ErrorType.INVALID, id="container-port-name"),
    pytest.param("pods", lambda o: _container(o)["ports"].append({"name": "http", "containerPort": 81}),
                 "spec.containers[0].ports[1].name", ErrorType.DUPLICATE, id="container-port-name-duplicate"),
    pytest.param("pods", lambda o: _container(o)["env"].append({"name": "1BAD"}), "spec.containers[0].env[1].name",
                 ErrorType.INVALID, id="env-name"),
    pytest.param("pods", lambda o: _container(o)["resources"]["limits"].update(memory="lots"),
                 "spec.containers[0].resources.limits[memory]", ErrorType.INVALID, id="quantity-parse"),
    pytest.param("pods", lambda o: _container(o)["resources"]["requests"].update(cpu="1"),
                 "spec.containers[0].resources.requests[cpu]", ErrorType.INVALID, id="request-over-limit"),
    pytest.param("pods", lambda o: o["spec"].update(restartPolicy="Sometimes"), "spec.restartPolicy",
                 ErrorType.NOT_SUPPORTED, id="restart-policy"),
    pytest.param("pods", lambda o: o["spec"].update(dnsPolicy="Google"), "spec.dnsPolicy", ErrorType.NOT_SUPPORTED,
                 id="dns-policy"),
    pytest.param("pods", lambda o: o["spec"]["volumes"].append({"name": "config", "emptyDir": {}}),
                 "spec.volumes[1].name", ErrorType.DUPLICATE, id="volume-duplicate"),
    pytest.param("pods", lambda o: o["spec"]["volumes"][0].update(name="Config"), "spec.volumes[0].name",
                 ErrorType.INVALID, id="volume-name"),
    pytest.param("pods", lambda o: _container(o)["volumeMounts"][0].update(name="x"),
                 "spec.containers[0].volumeMounts[0].name", ErrorType.INVALID, id="mount-unknown-volume"),
    pytest.param("pods", lambda o: o["spec"].update(terminationGracePeriodSeconds=-1),
                 "spec.terminationGracePeriodSeconds", ErrorType.INVALID, id="grace-negative"),
    # services
    pytest.param("services", lambda o: o["spec"].pop("ports"), "spec.ports", ErrorType.REQUIRED, id="ports-required"),
    pytest.param("services", lambda o: o["spec"]["ports"][0].update(port=0), "spec.ports[0].port", ErrorType.INVALID,
                 id="service-port-range"),
    pytest.param("services", lambda o: o["spec"]["ports"][1].pop("name"), "spec.ports[1].name", ErrorType.REQUIRED,
                 id="service-port-name-required"),
    pytest.param("services", lambda o: o["spec"]["ports"][1].update(name="http"), "spec.ports[1].name",
                 ErrorType.DUPLICATE, id="service-port-name-duplicate"),
    pytest.param("services", lambda o: o["spec"]["ports"][0].update(protocol="ICMP"), "spec.ports[0].protocol",
                 ErrorType.NOT_SUPPORTED, id="service-protocol"),
    pytest.param("services", lambda o: o["spec"]["ports"][0].update(targetPort="no--pe"), "spec.ports[0].targetPort",
                 ErrorType.INVALID, id="service-target-port-name"),
    pytest.param("services", lambda o: o["spec"]["ports"][0].update(targetPort=0), "spec.ports[0].targetPort",
                 ErrorType.INVALID, id="service-target-port-number"),
    pytest.param("services", lambda o: o["spec"]["ports"][0].update(nodePort=70000), "spec.ports[0].nodePort",
                 ErrorType.INVALID, id="service-node-port"),
    pytest.param("services", lambda o: o["spec"].update(type="Magic"), "spec.type", ErrorType.NOT_SUPPORTED,
                 id="service-type"),
    pytest.param("services", lambda o: o["spec"].update(sessionAffinity="Sticky"), "spec.sessionAffinity",
                 ErrorType.NOT_SUPPORTED, id="session-affinity"),
    pytest.param("services", lambda o: o["spec"].update(type="ExternalName"), "spec.externalName",
                 ErrorType.REQUIRED, id="external-name-required"),
    # apps
    pytest.param("deployments", lambda o: o["spec"].pop("selector"), "spec.selector", ErrorType.REQUIRED,
                 id="selector-required"),
    pytest.param("deployments", lambda o: o["spec"].update(selector={}), "spec.selector", ErrorType.INVALID,
                 id="selector-empty"),
    pytest.param("deployments", lambda o: o["spec"].update(selector={"matchExpressions": [
        {"key": "app", "operator": "Near", "values": ["x"]}]}), "spec.selector", ErrorType.INVALID,
                 id="selector-bad-operator"),
    pytest.param("deployments", lambda o: o["spec"]["selector"]["matchLabels"].update(app="api"),
                 "spec.template.metadata.labels", ErrorType.INVALID, id="selector-mismatch"),
    pytest.param("deployments", lambda o: o["spec"].update(replicas=-1), "spec.replicas", ErrorType.INVALID,
                 id="replicas-negative"),
    pytest.param("deployments", lambda o: _tpl(o).update(restartPolicy="Never"), "spec.template.spec.restartPolicy",
                 ErrorType.NOT_SUPPORTED, id="template-restart-policy"),
    pytest.param("deployments", lambda o: _tpl(o)["containers"][0].pop("image"),
                 "spec.template.spec.containers[0].image", ErrorType.REQUIRED, id="template-pod-spec"),
    pytest.param("deployments", lambda o: o["spec"]["strategy"].update(type="BlueGreen"), "spec.strategy.type",
                 ErrorType.NOT_SUPPORTED, id="deployment-strategy"),
    pytest.param("replicasets", lambda o: o["spec"]["template"]["metadata"].update(labels={"tier": "db"}),
                 "spec.template.metadata.labels", ErrorType.INVALID, id="replicaset-mismatch"),
    pytest.param("daemonsets", lambda o: o["spec"]["updateStrategy"].update(type="Rolling"),
                 "spec.updateStrategy.type", ErrorType.NOT_SUPPORTED, id="daemonset-strategy"),
    pytest.param("statefulsets", lambda o: o["spec"].update(podManagementPolicy="Random"), "spec.podManagementPolicy",
                 ErrorType.NOT_SUPPORTED, id="statefulset-policy"),
    pytest.param("replicationcontrollers", lambda o: o["spec"].update(selector={}), "spec.selector",
                 ErrorType.REQUIRED, id="rc-selector-required"),
    pytest.param("replicationcontrollers", lambda o: o["spec"].update(selector={"app": "db"}),
                 "spec.template.metadata.labels", ErrorType.INVALID, id="rc-selector-mismatch"),
    pytest.param("replicationcontrollers", lambda o: o["spec"].pop("template"), "spec.template", ErrorType.REQUIRED,
                 id="rc-template-required"),
    pytest.param("replicationcontrollers", lambda o: o["spec"].update(replicas=-2), "spec.replicas", ErrorType.INVALID,
                 id="rc-replicas"),
    # batch
    pytest.param("jobs", lambda o: _tpl(o).update(restartPolicy="Always"), "spec.template.spec.restartPolicy",
                 ErrorType.REQUIRED, id="job-restart-policy"),
    pytest.param("jobs", lambda o: o["spec"].update(parallelism=-1), "spec.parallelism", ErrorType.INVALID,
                 id="job-parallelism"),
    pytest.param("jobs", lambda o: o["spec"].update(completions=-1), "spec.completions", ErrorType.INVALID,
                 id="job-completions"),
    pytest.param("jobs", lambda o: o["spec"].update(backoffLimit=-1), "spec.backoffLimit", ErrorType.INVALID,
                 id="job-backoff"),
    pytest.param("jobs", lambda o: o["spec"].update(selector={"matchLabels": {"app": "other"}}),
                 "spec.template.metadata.labels", ErrorType.INVALID, id="job-selector-mismatch"),
    pytest.param("jobs", lambda o: (_tpl(o).update(restartPolicy="OnFailure"), o["spec"].update(podFailurePolicy={
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]})),
                 "spec.template.spec.restartPolicy", ErrorType.INVALID, id="job-failure-policy-needs-never"),
    pytest.param("jobs", lambda o: o["spec"].update(podFailurePolicy={"rules": [
        {"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}}]}),
                 "spec.podFailurePolicy.rules[0].action", ErrorType.NOT_SUPPORTED, id="job-failure-policy-action"),
    pytest.param("jobs", lambda o: o["spec"].update(podFailurePolicy={"rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [0]}}]}),
                 "spec.podFailurePolicy.rules[0].onExitCodes.values", ErrorType.INVALID, id="job-failure-policy-zero"),
    pytest.param("jobs", lambda o: o["spec"].update(podReplacementPolicy="Sometimes"), "spec.podReplacementPolicy",
                 ErrorType.NOT_SUPPORTED, id="job-replacement-policy"),
    pytest.param("cronjobs", lambda o: o["spec"].update(timeZone="Mars/Olympus"), "spec.timeZone",
                 ErrorType.INVALID, id="cron-time-zone"),
    pytest.param("cronjobs", lambda o: o["spec"].update(timeZone="Local"), "spec.timeZone",
                 ErrorType.INVALID, id="cron-local-time-zone"),
    pytest.param("cronjobs", lambda o: o["spec"].update(schedule="CRON_TZ=UTC 0 * * * *"), "spec.schedule",
                 ErrorType.INVALID, id="cron-tz-in-schedule"),
    pytest.param("cronjobs", lambda o: o["spec"].pop("schedule"), "spec.schedule", ErrorType.REQUIRED,
                 id="cron-schedule-required"),
    pytest.param("cronjobs", lambda o: o["spec"].update(schedule="* * * *"), "spec.schedule", ErrorType.INVALID,
                 id="cron-four-fields"),
    pytest.param("cronjobs", lambda o: o["spec"].update(schedule="61 * * * *"), "spec.schedule", ErrorType.INVALID,
                 id="cron-minute-range"),
    pytest.param("cronjobs", lambda o: o["spec"].update(schedule="@fortnightly"), "spec.schedule", ErrorType.INVALID,
                 id="cron-descriptor"),
    pytest.param("cronjobs", lambda o: o["spec"].update(concurrencyPolicy="Sometimes"), "spec.concurrencyPolicy",
                 ErrorType.NOT_SUPPORTED, id="cron-concurrency"),
    pytest.param("cronjobs", lambda o: o["spec"]["jobTemplate"]["spec"]["template"]["spec"].update(
        restartPolicy="Always"), "spec.jobTemplate.spec.template.spec.restartPolicy", ErrorType.REQUIRED,
                 id="cron-job-template"),
    # the rest of core
    pytest.param("configmaps", lambda o: o["data"].update({"bad/key": "x"}), "data[bad/key]", ErrorType.INVALID,
                 id="configmap-key"),
    pytest.param("configmaps", lambda o: o["data"].update(big="x" * (1024 * 1024)), "data", ErrorType.TOO_LONG,
                 id="configmap-size"),
    pytest.param("secrets", lambda o: o["data"].update(token="not base64!"), "data[token]", ErrorType.INVALID,
                 id="secret-base64"),
    pytest.param("secrets", lambda o: o["data"].update({"..x": "eA=="}), "data[..x]", ErrorType.INVALID,
                 id="secret-key"),
    pytest.param("endpoints", lambda o: o["subsets"][0]["addresses"][0].update(ip="10.0.0.300"),
                 "subsets[0].addresses[0].ip", ErrorType.INVALID, id="endpoint-ip"),
    pytest.param("endpoints", lambda o: o["subsets"][0]["addresses"][0].pop("ip"), "subsets[0].addresses[0].ip",
                 ErrorType.REQUIRED, id="endpoint-ip-required"),
    pytest.param("endpoints", lambda o: o["subsets"][0]["ports"][0].update(port=0), "subsets[0].ports[0].port",
                 ErrorType.INVALID, id="endpoint-port"),
    pytest.param("events", lambda o: o.pop("involvedObject"), "involvedObject", ErrorType.REQUIRED,
                 id="event-involved-object"),
    pytest.param("leases", lambda o: o["spec"].update(leaseDurationSeconds=0), "spec.leaseDurationSeconds",
                 ErrorType.INVALID, id="lease-duration"),
    pytest.param("resourcequotas", lambda o: o["spec"]["hard"].update(pods="ten"), "spec.hard[pods]",
                 ErrorType.INVALID, id="quota-quantity"),
    pytest.param("resourcequotas", lambda o: o["spec"]["hard"].update(pods="-1"), "spec.hard[pods]",
                 ErrorType.INVALID, id="quota-negative"),
    pytest.param("resourcequotas", lambda o: o["spec"]["hard"].update({"bad key": "1"}), "spec.hard[bad key]",
                 ErrorType.INVALID, id="quota-key"),
]


@pytest.mark.parametrize(("plural", "change", "field", "error_type"), CASES)
def test_rule_violations(plural: str, change: Callable[[Obj], object], field: str, error_type: ErrorType) -> None:
    errors = validate(plural, _edit(plural, change))
    assert (field, error_type) in [(e.field, e.type) for e in errors], [e.message for e in errors]


@pytest.mark.parametrize(("plural", "change", "message"), [
    pytest.param("pods", lambda o: _container(o).pop("image"), "spec.containers[0].image: Required value",
                 id="image"),
    pytest.param("pods", lambda o: _container(o)["resources"]["requests"].update(cpu="1"),
                 'spec.containers[0].resources.requests[cpu]: Invalid value: "1": '
                 "must be less than or equal to cpu limit of 500m", id="request-limit"),
    pytest.param("pods", lambda o: _container(o)["volumeMounts"][0].update(mountPropagation="Bidirectional"),
                 "spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation "
                 "is available only to privileged containers", id="bidirectional"),
    pytest.param("deployments", lambda o: _tpl(o)["containers"][0]["volumeMounts"][0].update(
        mountPropagation="Bidirectional"), "spec.template.spec.containers[0].volumeMounts[0].mountPropagation: "
                 "Forbidden: Bidirectional mount propagation is available only to privileged containers",
                 id="bidirectional-template"),
    pytest.param("pods", lambda o: _container(o)["volumeMounts"][0].update(mountPropagation="Shared"),
                 'spec.containers[0].volumeMounts[0].mountPropagation: Unsupported value: "Shared": supported '
                 'values: "Bidirectional", "HostToContainer", "None"', id="propagation-mode"),
    pytest.param("deployments", lambda o: _tpl(o).update(restartPolicy="Never"),
                 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
                 id="template-restart"),
    pytest.param("deployments", lambda o: o["spec"].update(selector={"matchLabels": {"app": "api"}}),
                 'spec.template.metadata.labels: Invalid value: {"app":"web","tier":"front"}: '
                 "`selector` does not match template `labels`", id="mismatch"),
    pytest.param("deployments", lambda o: o["spec"].update(selector={}),
                 "spec.selector: Invalid value: {}: empty selector is invalid for deployment", id="empty-selector"),
    pytest.param("jobs", lambda o: _tpl(o).update(restartPolicy="Always"),
                 'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
                 id="job-restart"),
    pytest.param("cronjobs", lambda o: o["spec"].update(schedule="* * * *"),
                 'spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]',
                 id="cron-fields"),
    pytest.param("configmaps", lambda o: o["data"].update({"a b": "x"}),
                 "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, "
                 "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                 "'[-._a-zA-Z0-9]+')", id="config-key"),
])
def test_messages(plural: str, change: Callable[[Obj], object], message: str) -> None:
    assert message in [e.message for e in validate(plural, _edit(plural, change))]


@pytest.mark.parametrize(("plural", "change", "field", "error_type", "message"), [
    pytest.param("pods", lambda o: _container(o).update(image="nginx:1.26"), None, None, None, id="pod-image-ok"),
    pytest.param("pods", lambda o: o["spec"].update(activeDeadlineSeconds=30), None, None, None,
                 id="pod-deadline-ok"),
    pytest.param("pods", lambda o: o["spec"].update(tolerations=[{"key": "k", "operator": "Exists"}]), None, None,
                 None, id="pod-toleration-added"),
    pytest.param("pods", lambda o: _container(o).update(command=["sleep"]), "spec", ErrorType.FORBIDDEN,
                 f"spec: Forbidden: {POD_UPDATE_MESSAGE}", id="pod-spec-immutable"),
    pytest.param("pods", lambda o: o["spec"].update(nodeName="node-1"), "spec", ErrorType.FORBIDDEN, None,
                 id="pod-node-name"),
    pytest.param("services", lambda o: o["spec"].update(clusterIP="10.96.0.11"), "spec.clusterIP", ErrorType.INVALID,
                 'spec.clusterIP: Invalid value: "10.96.0.11": field is immutable', id="cluster-ip-immutable"),
    pytest.param("services", lambda o: o["spec"].pop("clusterIP"), None, None, None, id="cluster-ip-omitted"),
    pytest.param("deployments", lambda o: o["spec"]["selector"]["matchLabels"].update(tier="front"), "spec.selector",
                 ErrorType.INVALID, None, id="selector-immutable"),
    pytest.param("deployments", lambda o: o["spec"].update(replicas=5), None, None, None, id="scale-ok"),
    pytest.param("statefulsets", lambda o: o["spec"].update(serviceName="other"), "spec", ErrorType.FORBIDDEN,
                 f"spec: Forbidden: {STATEFULSET_UPDATE_MESSAGE}", id="statefulset-spec"),
    pytest.param("jobs", lambda o: _tpl(o)["containers"][0].update(image="other"), "spec.template",
                 ErrorType.INVALID, None, id="job-template-immutable"),
    pytest.param("secrets", lambda o: o.update(type="Other"), "type", ErrorType.INVALID, None, id="secret-type"),
])
def test_updates(plural: str, change: Callable[[Obj], object], field: str | None, error_type: ErrorType | None,
                 message: str | None) -> None:
    old = _edit(plural, lambda o: None)
    if plural == "services":
        old["spec"]["clusterIP"] = "10.96.0.10"
    new = copy.deepcopy(old)
    change(new)
    errors = validate(plural, new, old=old)
    if field is None:
        assert [e.message for e in errors] == []
    else:
        assert (field, error_type) in [(e.field, e.type) for e in errors], [e.message for e in errors]
    if message is not None:
        assert message in [e.message for e in errors]


@pytest.mark.parametrize(("plural", "obj", "field"), [
    pytest.param("pods", {"metadata": {"name": "p"}, "spec": []}, "spec", id="spec-list"),
    pytest.param("pods", {"metadata": {"name": "p"}, "spec": {"containers": "x"}}, "spec.containers",
                 id="containers-string"),
    pytest.param("pods", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "x", "ports": [{"containerPort": "80"}]}]}}, "spec.containers[0].ports[0].containerPort",
                 id="port-string"),
    pytest.param("pods", {"metadata": {"name": 5}, "spec": {"containers": [7]}}, "metadata.name", id="name-number"),
    pytest.param("pods", {"metadata": {"name": "p", "labels": ["a"]}}, "metadata.labels", id="labels-list"),
    pytest.param("services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": True}]}}, "spec.ports[0].port",
                 id="port-bool"),
    pytest.param("deployments", {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": 1}}}},
                 "spec.selector.matchLabels[a]", id="selector-value-number"),
    pytest.param("deployments", {"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": "x"}}},
                 "spec.selector.matchExpressions", id="expressions-string"),
    pytest.param("cronjobs", {"metadata": {"name": "c"}, "spec": {"schedule": 5}}, "spec.schedule", id="schedule-int"),
    pytest.param("configmaps", {"metadata": {"name": "c"}, "data": {"a": 1}}, "data[a]", id="data-number"),
    pytest.param("resourcequotas", {"metadata": {"name": "q"}, "spec": {"hard": {"cpu": [1]}}}, "spec.hard[cpu]",
                 id="hard-list"),
    pytest.param("pods", ["not", "an", "object"], "", id="object-list"),
])
def test_malformed_types_are_field_errors(plural: str, obj: Any, field: str) -> None:
    errors = validate(plural, obj)
    assert field in [e.field for e in errors], [e.message for e in errors]
    assert all(e.message for e in errors)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            paths += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths += _paths(child, (*prefix, index))
    return paths


@settings(max_examples=300, deadline=None)
@given(plural=st.sampled_from(["pods", "services", "deployments", "statefulsets", "jobs", "cronjobs", "secrets"]),
       data=st.data(), replacement=_JSON, as_old=st.booleans())
def test_validate_never_raises(plural: str, data: st.DataObject, replacement: Any, as_old: bool) -> None:
    valid = copy.deepcopy(VALID[plural])
    apply_defaults(plural, valid)
    broken = copy.deepcopy(valid)
    path = data.draw(st.sampled_from(_paths(broken)))
    parent = broken
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = replacement
    apply_defaults(plural, broken)
    new, old = (valid, broken) if as_old else (broken, valid)
    errors = validate(plural, new, old=old)
    assert all(isinstance(e.message, str) for e in errors)


def test_controller_revision_data_is_mandatory_and_immutable_and_revision_not_negative() -> None:
    obj = copy.deepcopy(VALID["controllerrevisions"])
    broken = {**obj, "revision": -1}
    broken.pop("data")
    assert sorted((e.field, e.type) for e in validate("controllerrevisions", broken)) == [
        ("data", ErrorType.REQUIRED), ("revision", ErrorType.INVALID)]
    changed = {**obj, "data": {"spec": {}}, "revision": 3}
    assert [(e.field, e.type) for e in validate("controllerrevisions", changed, old=obj)] == [
        ("data", ErrorType.INVALID)]
