"""Defaulting of API objects on create and update, per resource.

Upstream: pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go, pkg/apis/batch/v1/defaults.go and
pkg/apis/coordination/v1 (nothing), plus the few values the registries' strategies set on create
(`spec.finalizers: ["kubernetes"]` of a namespace, from pkg/registry/core/namespace/strategy.go).
Upstream runs these functions while decoding a request body, so every stored object and every object
that reaches validation carries them; the registry here calls `apply_defaults` at the same point.

Rules kept from upstream, because clients and controllers read the defaulted values back:

* A value the user set is never replaced. Go cannot tell a missing string from "", so a string default
  also fills ""; a pointer field (`replicas`, `suspend`, `backoffLimit`, ...) is only filled when absent
  or null, so `replicas: 0` and `suspend: false` stay as written.
* Sub-objects are only created where upstream creates them (`resources: {}`, `securityContext: {}`,
  `strategy.rollingUpdate` only for a RollingUpdate strategy, a volume without any source becomes an
  emptyDir); nothing is created just to hold nothing.
* `imagePullPolicy` is "Always" for an image without a tag or with tag "latest" (and no digest), else
  "IfNotPresent" — the tag being what follows the last ':' of the last path component, so the port of a
  registry (`localhost:5000/app`) is not a tag.
* A Pod, but not a pod template, gets each container's `requests` from its `limits` where a resource has
  a limit and no request (upstream SetDefaults_Pod): the QoS class is computed from the result.

Defaulting runs before validation, on anything a client sent: a field of the wrong JSON type is left
alone (validation reports it) and defaulting never raises.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from control.api.autoscaling import default_hpa
from control.api.priority import PREEMPT_LOWER_PRIORITY

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SESSION_AFFINITY_TIMEOUT_SECONDS = 10800  # three hours, upstream DefaultClientIPServiceAffinitySeconds
DEFAULT_FILE_MODE = 0o644  # 420: configMap, secret, projected and downwardAPI volumes
DEFAULT_REVISION_HISTORY_LIMIT = 10

_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_SOURCES = ("configMap", "secret", "projected", "downwardAPI")


def _dict(parent: Any, key: str) -> dict[str, Any] | None:
    """`parent[key]` when both are JSON objects, else None (absent, null, or the wrong type)."""
    if not isinstance(parent, dict):
        return None
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _dicts(parent: Any, key: str) -> list[dict[str, Any]]:
    """The JSON objects in the list `parent[key]`; other items and other types are skipped."""
    value = parent.get(key) if isinstance(parent, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _child(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """`parent[key]`, created as {} when absent or null; None when it holds something else."""
    if parent.get(key) is None:
        parent[key] = {}
    return _dict(parent, key)


def _default(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set `obj[key]` when unset: absent or null, or "" for a string default (Go's zero value)."""
    current = obj.get(key)
    if current is None or (isinstance(value, str) and current == ""):
        obj[key] = copy.deepcopy(value)


def image_pull_policy(image: str) -> str:
    """Upstream SetDefaults_Container: pull "latest" (and untagged) images every time, others once."""
    if "@" in image:
        return "IfNotPresent"
    last_component = image.rsplit("/", 1)[-1]
    _, colon, tag = last_component.rpartition(":")
    return "Always" if not colon or tag == "latest" else "IfNotPresent"


def _probe(probe: dict[str, Any]) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        _default(probe, key, value)
    _handler(probe)


def _handler(handler: dict[str, Any]) -> None:
    """A probe's or lifecycle hook's action (upstream SetDefaults_HTTPGetAction)."""
    if (http_get := _dict(handler, "httpGet")) is not None:
        _default(http_get, "path", "/")
        _default(http_get, "scheme", "HTTP")


def _container(container: dict[str, Any]) -> None:
    image = container.get("image")
    if isinstance(image, str) and image:
        _default(container, "imagePullPolicy", image_pull_policy(image))
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    _default(container, "resources", {})
    for port in _dicts(container, "ports"):
        _default(port, "protocol", "TCP")
    for key in _PROBES:
        if (probe := _dict(container, key)) is not None:
            _probe(probe)
    if (lifecycle := _dict(container, "lifecycle")) is not None:
        for hook in ("postStart", "preStop"):
            if (handler := _dict(lifecycle, hook)) is not None:
                _handler(handler)
    for env in _dicts(container, "env"):
        if (field_ref := _dict(_dict(env, "valueFrom"), "fieldRef")) is not None:
            _default(field_ref, "apiVersion", "v1")


def _volume(volume: dict[str, Any]) -> None:
    if set(volume) <= {"name"}:
        volume["emptyDir"] = {}  # upstream SetDefaults_Volume: a volume without a source is scratch space
    for source in _MODE_SOURCES:
        if (found := _dict(volume, source)) is not None:
            _default(found, "defaultMode", DEFAULT_FILE_MODE)


def default_pod_spec(spec: dict[str, Any]) -> None:
    """Upstream SetDefaults_PodSpec and what it calls for containers, probes and volumes."""
    _default(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "schedulerName", "default-scheduler")
    _default(spec, "securityContext", {})
    _default(spec, "enableServiceLinks", True)
    for container in _dicts(spec, "initContainers") + _dicts(spec, "containers"):
        _container(container)
    for volume in _dicts(spec, "volumes"):
        _volume(volume)


def _template(template: dict[str, Any] | None) -> None:
    """A pod template (`spec.template` of every controller) gets the pod spec defaults."""
    if (spec := _dict(template, "spec")) is not None:
        default_pod_spec(spec)


def _requests_from_limits(spec: dict[str, Any]) -> None:
    for container in _dicts(spec, "initContainers") + _dicts(spec, "containers"):
        resources = _dict(container, "resources")
        limits = _dict(resources, "limits")
        if resources is None or not limits:
            continue
        if (requests := _child(resources, "requests")) is not None:
            for name, limit in limits.items():
                requests.setdefault(name, copy.deepcopy(limit))


def _pod(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is not None:
        default_pod_spec(spec)
        _requests_from_limits(spec)


def _service(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is None:
        return
    _default(spec, "type", "ClusterIP")
    _default(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP" and (config := _child(spec, "sessionAffinityConfig")) is not None:
        if (client_ip := _child(config, "clientIP")) is not None:
            _default(client_ip, "timeoutSeconds", DEFAULT_SESSION_AFFINITY_TIMEOUT_SECONDS)
    for port in _dicts(spec, "ports"):
        _default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        _default(spec, "externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)
    if spec["type"] != "ExternalName":
        _default(spec, "internalTrafficPolicy", "Cluster")


def _deployment(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is None:
        return
    _default(spec, "replicas", 1)
    if (strategy := _child(spec, "strategy")) is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and (rolling := _child(strategy, "rollingUpdate")) is not None:
            _default(rolling, "maxUnavailable", "25%")
            _default(rolling, "maxSurge", "25%")
    _default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    _default(spec, "progressDeadlineSeconds", 600)
    _template(_dict(spec, "template"))


def _replica_set(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is not None:
        _default(spec, "replicas", 1)
        _template(_dict(spec, "template"))


def _replication_controller(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_ReplicationController: selector and labels come from the template's labels."""
    if (spec := _dict(obj, "spec")) is None:
        return
    template = _dict(spec, "template")
    template_labels = _dict(_dict(template, "metadata"), "labels")
    if template_labels:
        if not spec.get("selector"):
            spec["selector"] = dict(template_labels)
        if (metadata := _child(obj, "metadata")) is not None and not metadata.get("labels"):
            metadata["labels"] = dict(template_labels)
    _default(spec, "replicas", 1)
    _template(template)


def _daemon_set(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is None:
        return
    if (strategy := _child(spec, "updateStrategy")) is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and (rolling := _child(strategy, "rollingUpdate")) is not None:
            _default(rolling, "maxUnavailable", 1)
            _default(rolling, "maxSurge", 0)
    _default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    _template(_dict(spec, "template"))


def _stateful_set(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is None:
        return
    _default(spec, "replicas", 1)
    _default(spec, "podManagementPolicy", "OrderedReady")
    if (strategy := _child(spec, "updateStrategy")) is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and (rolling := _child(strategy, "rollingUpdate")) is not None:
            _default(rolling, "partition", 0)
    _default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    if (retention := _child(spec, "persistentVolumeClaimRetentionPolicy")) is not None:
        _default(retention, "whenDeleted", "Retain")
        _default(retention, "whenScaled", "Retain")
    _template(_dict(spec, "template"))


def _job(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_Job: a job with neither completions nor parallelism runs one pod once; with
    only parallelism it is a work queue (completions stays unset)."""
    if (spec := _dict(obj, "spec")) is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", 6)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    # JobPodReplacementPolicy (on by default since 1.29): with a pod failure policy a replacement waits
    # for the failed pod to be fully terminated.
    _default(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    template = _dict(spec, "template")
    template_labels = _dict(_dict(template, "metadata"), "labels")
    if template_labels and (metadata := _child(obj, "metadata")) is not None and not metadata.get("labels"):
        metadata["labels"] = dict(template_labels)
    _template(template)


def _cron_job(obj: dict[str, Any]) -> None:
    if (spec := _dict(obj, "spec")) is None:
        return
    _default(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    _template(_dict(_dict(_dict(spec, "jobTemplate"), "spec"), "template"))


def _namespace(obj: dict[str, Any]) -> None:
    if (spec := _child(obj, "spec")) is not None:
        _default(spec, "finalizers", ["kubernetes"])
    if (status := _child(obj, "status")) is not None:
        _default(status, "phase", "Active")


def _secret(obj: dict[str, Any]) -> None:
    _default(obj, "type", "Opaque")


def _endpoints(obj: dict[str, Any]) -> None:
    for subset in _dicts(obj, "subsets"):
        for port in _dicts(subset, "ports"):
            _default(port, "protocol", "TCP")


def _endpoint_slice(obj: dict[str, Any]) -> None:
    """Upstream discovery/v1 SetDefaults_EndpointPort (name "", protocol TCP). `endpoints` has no omitempty
    upstream (a nil list is written as null); an empty list is stored instead, because typed clients (the
    official Python client) refuse an EndpointSlice without it."""
    if obj.get("endpoints") is None:
        obj["endpoints"] = []
    for port in _dicts(obj, "ports"):
        _default(port, "protocol", "TCP")
        if port.get("name") is None:
            port["name"] = ""


def _priority_class(obj: dict[str, Any]) -> None:
    """Upstream scheduling/v1 SetDefaults_PriorityClass; `value` has no omitempty upstream, so its zero is
    always written (a protobuf or JSON body may leave it out)."""
    _default(obj, "preemptionPolicy", PREEMPT_LOWER_PRIORITY)
    _default(obj, "value", 0)


def _persistent_volume(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_PersistentVolume: a new volume is Available, kept (Retain) after its claim goes,
    and a filesystem. A provisioner writes the class's reclaimPolicy (Delete by default) itself."""
    if (spec := _child(obj, "spec")) is not None:
        _default(spec, "persistentVolumeReclaimPolicy", "Retain")
        _default(spec, "volumeMode", "Filesystem")
    if (status := _child(obj, "status")) is not None:
        _default(status, "phase", "Available")


def _persistent_volume_claim(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_PersistentVolumeClaim (+ SetDefaults_PersistentVolumeClaimSpec)."""
    if (spec := _child(obj, "spec")) is not None:
        _default(spec, "volumeMode", "Filesystem")
    if (status := _child(obj, "status")) is not None:
        _default(status, "phase", "Pending")


def _limit_range(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_LimitRangeItem, for Container items: the default limit is the max where unset,
    the default request the default limit, else the min."""
    for item in _dicts(_dict(obj, "spec"), "limits"):
        if item.get("type") != "Container":
            continue
        default, request = dict(item.get("default") or {}), dict(item.get("defaultRequest") or {})
        for source, target in (("max", default), ("default", request), ("min", request)):
            values = default if source == "default" else item.get(source) or {}
            if isinstance(values, dict):
                for key, value in values.items():
                    target.setdefault(key, value)
        for key, value in (("default", default), ("defaultRequest", request)):
            if value:
                item[key] = value


def _storage_class(obj: dict[str, Any]) -> None:
    """Upstream storage/v1 SetDefaults_StorageClass."""
    _default(obj, "reclaimPolicy", "Delete")
    _default(obj, "volumeBindingMode", "Immediate")


def _ingress_class(obj: dict[str, Any]) -> None:
    """Upstream networking/v1 SetDefaults_IngressClass: parameters without a scope are cluster-scoped."""
    if (parameters := _dict(_dict(obj, "spec"), "parameters")) is not None:
        _default(parameters, "scope", "Cluster")


def _network_policy(obj: dict[str, Any]) -> None:
    """Upstream networking/v1 SetDefaults_NetworkPolicy and SetDefaults_NetworkPolicyPort: ports are TCP
    unless said; without policyTypes a policy is an Ingress one, and an Egress one too when it has egress
    rules. `podSelector` is a struct without omitempty: always written."""
    if (spec := _child(obj, "spec")) is None:
        return
    _default(spec, "podSelector", {})
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec, direction):
            for port in _dicts(rule, "ports"):
                _default(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _csi_driver(obj: dict[str, Any]) -> None:
    """Upstream storage/v1 SetDefaults_CSIDriver."""
    if (spec := _child(obj, "spec")) is None:
        return
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False)):
        _default(spec, key, value)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _certificate_signing_request(obj: dict[str, Any]) -> None:
    """Upstream certificates/v1 SetDefaults_CertificateSigningRequestCondition: a condition's status is
    True unless said."""
    for condition in _dicts(_dict(obj, "status"), "conditions"):
        _default(condition, "status", "True")


def _webhook_configuration(obj: dict[str, Any], *, mutating: bool) -> None:
    """Upstream admissionregistration/v1 SetDefaults_ValidatingWebhook / MutatingWebhook, SetDefaults_Rule
    and SetDefaults_ServiceReference."""
    for webhook in _dicts(obj, "webhooks"):
        _default(webhook, "failurePolicy", "Fail")
        _default(webhook, "matchPolicy", "Equivalent")
        _default(webhook, "namespaceSelector", {})
        _default(webhook, "objectSelector", {})
        _default(webhook, "timeoutSeconds", 10)
        if mutating:
            _default(webhook, "reinvocationPolicy", "Never")
        for rule in _dicts(webhook, "rules"):
            _default(rule, "scope", "*")
        if (service := _dict(_dict(webhook, "clientConfig"), "service")) is not None:
            _default(service, "port", 443)


def _match_resources(match: dict[str, Any] | None) -> None:
    """Upstream admissionregistration/v1 SetDefaults_MatchResources and SetDefaults_NamedRuleWithOperations."""
    if match is None:
        return
    _default(match, "matchPolicy", "Equivalent")
    _default(match, "namespaceSelector", {})
    _default(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in _dicts(match, key):
            _default(rule, "scope", "*")


def _validating_admission_policy(obj: dict[str, Any]) -> None:
    """Upstream SetDefaults_ValidatingAdmissionPolicySpec: failurePolicy Fail, the match defaults."""
    if (spec := _dict(obj, "spec")) is not None:
        _default(spec, "failurePolicy", "Fail")
        _match_resources(_dict(spec, "matchConstraints"))


def _validating_admission_policy_binding(obj: dict[str, Any]) -> None:
    _match_resources(_dict(_dict(obj, "spec"), "matchResources"))


def _api_service(obj: dict[str, Any]) -> None:
    """Upstream apiregistration/v1 SetDefaults_ServiceReference: port 443."""
    if (service := _dict(_dict(obj, "spec"), "service")) is not None:
        _default(service, "port", 443)


_DEFAULTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "pods": _pod,
    "services": _service,
    "endpoints": _endpoints,
    "namespaces": _namespace,
    "secrets": _secret,
    "replicationcontrollers": _replication_controller,
    "deployments": _deployment,
    "replicasets": _replica_set,
    "daemonsets": _daemon_set,
    "statefulsets": _stateful_set,
    "jobs": _job,
    "cronjobs": _cron_job,
    "priorityclasses": _priority_class,
    "endpointslices": _endpoint_slice,
    "horizontalpodautoscalers": default_hpa,
    "persistentvolumes": _persistent_volume,
    "persistentvolumeclaims": _persistent_volume_claim,
    "limitranges": _limit_range,
    "storageclasses": _storage_class,
    "ingressclasses": _ingress_class,
    "networkpolicies": _network_policy,
    "csidrivers": _csi_driver,
    "certificatesigningrequests": _certificate_signing_request,
    "validatingwebhookconfigurations": lambda obj: _webhook_configuration(obj, mutating=False),
    "mutatingwebhookconfigurations": lambda obj: _webhook_configuration(obj, mutating=True),
    "validatingadmissionpolicies": _validating_admission_policy,
    "validatingadmissionpolicybindings": _validating_admission_policy_binding,
    "apiservices": _api_service,
}


def apply_defaults(plural: str, obj: dict[str, Any]) -> None:
    """Fill in the defaults of a `plural` object in place; resources without defaults are left alone."""
    if isinstance(obj, dict) and (defaulter := _DEFAULTERS.get(plural)) is not None:
        defaulter(obj)
