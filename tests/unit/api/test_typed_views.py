"""The typed views read wire dicts as upstream's decoded Go structs would: fields by their JSON names,
absent or null fields as zero values (nil for pointers), nested structs and lists without copying, and
the dict under a view is the object itself."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

import pytest

import control.api.typed as typed
from control.api.typed import apps, base, batch, coordination, core, discovery, meta, policy, storage
from control.api.typed.base import EMPTY, View, ViewList

MODULES = (meta, core, apps, batch, discovery, policy, storage, coordination)
VIEW_CLASSES = sorted({cls for module in MODULES for _, cls in inspect.getmembers(module, inspect.isclass)
                       if issubclass(cls, View) and cls.__module__ == module.__name__}, key=lambda c: c.__name__)

# Go field names whose JSON name keeps an initialism upper case (podCIDR, hostIP, machineID, …).
_INITIALISMS = {"cidr": "CIDR", "cidrs": "CIDRs", "ip": "IP", "ips": "IPs", "id": "ID", "uuid": "UUID",
                "pid": "PID", "ipc": "IPC", "api": "API", "fqdn": "FQDN"}


def _descriptors(cls: type) -> dict[str, object]:
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, base._Field | base._Nested | base._Pointer | base._NestedList):
                found[name] = value
    return found


def _json_name(attribute: str) -> str:
    head, *rest = attribute.rstrip("_").split("_")
    return head + "".join(_INITIALISMS.get(part, part.capitalize()) for part in rest)


@pytest.mark.parametrize("cls", VIEW_CLASSES, ids=lambda cls: cls.__name__)
def test_every_property_reads_the_json_field_of_its_name(cls: type):
    descriptors = _descriptors(cls)
    for attribute, descriptor in descriptors.items():
        assert descriptor.key == _json_name(attribute), (cls.__name__, attribute)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", VIEW_CLASSES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("raw", [pytest.param({}, id="absent"), pytest.param(None, id="no-dict")])
def test_absent_fields_read_as_zero_values(cls: type, raw):
    view = cls(raw)
    for attribute, descriptor in _descriptors(cls).items():
        value = getattr(view, attribute)
        if isinstance(descriptor, base._Pointer):
            assert value is None, attribute
        elif isinstance(descriptor, base._Nested):
            assert isinstance(value, descriptor.wrap) and value.raw == {}, attribute
        elif isinstance(descriptor, base._NestedList):
            assert isinstance(value, ViewList) and len(value) == 0 and list(value) == [], attribute
        else:
            assert value == descriptor.zero, attribute  # type: ignore[attr-defined]
            assert value in ("", 0, False, None, EMPTY, ()), attribute


@pytest.mark.parametrize("cls", VIEW_CLASSES, ids=lambda cls: cls.__name__)
def test_null_fields_read_as_zero_values(cls: type):
    raw = {descriptor.key: None for descriptor in _descriptors(cls).values()}  # type: ignore[attr-defined]
    empty = cls({})
    view = cls(raw)
    for attribute in _descriptors(cls):
        assert getattr(view, attribute) == getattr(empty, attribute), attribute


POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
                 "labels": {"app": "web"}, "annotations": {"a": "b"}, "x-unknown": {"kept": True},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                      "uid": "s-1", "controller": True},
                                     {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c-1"}]},
    "spec": {"nodeName": "node-a", "hostNetwork": True, "terminationGracePeriodSeconds": 0,
             "containers": [{"name": "app", "image": "nginx", "command": ["nginx"],
                             "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
                             "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {}}}],
                             "resources": {"requests": {"cpu": "100m"}},
                             "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 3},
                             "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}}}],
             "tolerations": [{"key": "k", "operator": "Exists"}],
             "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]},
    "status": {"phase": "Running", "podIP": "10.244.0.5",
               "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"name": "app", "ready": True, "restartCount": 2,
                                      "state": {"running": {"startedAt": "2024-01-02T03:04:05Z"}},
                                      "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]},
}


def test_a_pod_reads_like_the_go_struct():
    pod = typed.Pod(POD)
    assert pod.kind == "Pod" and pod.key == "prod/web-0"
    assert pod.metadata.resource_version == "42" and pod.metadata.deletion_timestamp is None
    assert pod.metadata.controller_ref is not None and pod.metadata.controller_ref.kind == "StatefulSet"
    assert [ref.controller for ref in pod.metadata.owner_references] == [True, None]
    spec = pod.spec
    assert spec.node_name == "node-a" and spec.host_network is True and spec.host_pid is False
    assert spec.termination_grace_period_seconds == 0  # a set zero is not "unset"
    assert spec.active_deadline_seconds is None
    [container] = spec.containers
    assert container.ports[0].host_port == 8080 and container.ports[0].host_ip == ""
    assert [(env.name, env.value, env.value_from) for env in container.env] == [
        ("A", "1", None), ("B", "", {"fieldRef": {}})]
    assert container.resources.requests == {"cpu": "100m"} and container.resources.limits == {}
    assert container.readiness_probe is not None and container.readiness_probe.http_get is not None
    assert container.readiness_probe.http_get.port == "http" and container.readiness_probe.period_seconds == 3
    assert container.liveness_probe is None
    assert container.lifecycle is not None and container.lifecycle.post_start is None
    assert container.lifecycle.pre_stop is not None and container.lifecycle.pre_stop.exec is not None
    assert list(container.lifecycle.pre_stop.exec.command) == ["sleep", "1"]
    assert [(volume.name, volume.source) for volume in spec.volumes] == [("data", "emptyDir"), ("cfg", "configMap")]
    assert spec.tolerations[0].operator == "Exists" and spec.tolerations[0].toleration_seconds is None
    status = pod.status
    ready = status.condition("Ready")
    assert ready is not None and ready.status == "True" and status.condition("PodScheduled") is None
    [cs] = status.container_statuses
    assert cs.ready and cs.restart_count == 2 and cs.started is None
    assert cs.state.running is not None and cs.state.running.started_at == "2024-01-02T03:04:05Z"
    assert cs.state.waiting is None and cs.state.terminated is None
    assert cs.last_state.terminated is not None and cs.last_state.terminated.exit_code == 137
    assert list(status.init_container_statuses) == []


def test_views_copy_nothing_and_keep_the_dict_whole():
    pod = typed.Pod(POD)
    assert pod.raw is POD
    assert pod.metadata.raw is POD["metadata"]
    assert pod.metadata.labels is POD["metadata"]["labels"]
    assert pod.spec.containers[0].raw is POD["spec"]["containers"][0]
    assert pod.metadata.raw["x-unknown"] == {"kept": True}


def test_a_view_sees_later_writes_to_its_dict():
    obj: dict = {"spec": {}}
    node = typed.Node(obj)
    assert node.spec.unschedulable is False
    obj["spec"]["unschedulable"] = True
    assert node.spec.unschedulable is True


def test_view_list_indexes_slices_and_iterates():
    items = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    containers = ViewList(items, core.Container)
    assert isinstance(containers, Sequence) and len(containers) == 3
    assert containers[-1].name == "c"
    assert [c.name for c in containers[1:]] == ["b", "c"]
    assert [c.name for c in containers] == ["a", "b", "c"]
    with pytest.raises(IndexError):
        containers[3]


def test_views_compare_by_kind_and_content():
    assert typed.Pod({"a": 1}) == typed.Pod({"a": 1})
    assert typed.Pod({"a": 1}) != typed.Node({"a": 1})
    assert typed.Pod({}) == typed.Pod(None)
    assert repr(typed.Pod({})) == "Pod({})"


def test_a_descriptor_read_on_the_class_is_the_descriptor():
    assert isinstance(core.PodSpec.node_name, base._Field) and core.PodSpec.node_name.key == "nodeName"


def test_empty_is_read_only():
    assert isinstance(EMPTY, Mapping)
    with pytest.raises(TypeError):
        EMPTY["x"] = 1  # type: ignore[index]


def test_node_service_and_slice_views():
    node = typed.Node({"spec": {"podCIDR": "10.244.1.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
                       "status": {"addresses": [{"type": "Hostname", "address": "n"},
                                                {"type": "InternalIP", "address": "10.0.0.2"}],
                                  "conditions": [{"type": "Ready", "status": "False"}],
                                  "allocatable": {"pods": "110"}}})
    assert node.spec.pod_cidr == "10.244.1.0/24" and node.spec.taints[0].effect == "NoSchedule"
    assert node.status.address("InternalIP") == "10.0.0.2" and node.status.address("ExternalIP") == ""
    ready = node.status.condition("Ready")
    assert ready is not None and ready.status == "False"
    assert node.status.allocatable["pods"] == "110"

    service = typed.Service({"spec": {"clusterIP": "10.96.0.10", "type": "NodePort", "externalIPs": ["1.2.3.4"],
                                      "ports": [{"name": "dns", "port": 53, "targetPort": 5353, "nodePort": 30053}]}})
    [port] = service.spec.ports
    assert (service.spec.cluster_ip, port.target_port, port.node_port, port.protocol) == ("10.96.0.10", 5353, 30053, "")
    assert list(service.spec.external_ips) == ["1.2.3.4"] and len(service.status.load_balancer.ingress) == 0

    endpoint_slice = typed.EndpointSlice({"addressType": "IPv4", "ports": [{"port": 80}],
                                          "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {}},
                                                        {"addresses": ["10.244.0.6"],
                                                         "conditions": {"ready": False, "serving": True,
                                                                        "terminating": True}}]})
    first, second = endpoint_slice.endpoints
    assert first.conditions.is_ready and first.conditions.is_serving and not first.conditions.is_terminating
    assert not second.conditions.is_ready and second.conditions.is_serving and second.conditions.is_terminating
    assert endpoint_slice.ports[0].port == 80 and endpoint_slice.ports[0].name is None


def test_workload_views_tell_unset_pointers_from_zero():
    deployment = typed.Deployment({"spec": {"replicas": 0, "template": {"spec": {"containers": [{"name": "c"}]}}}})
    assert deployment.spec.replicas == 0 and deployment.spec.revision_history_limit is None
    assert deployment.spec.template.spec.containers[0].name == "c"
    assert typed.ReplicaSet({}).spec.replicas is None
    job = typed.Job({"spec": {"backoffLimit": 0}, "status": {"succeeded": 3}})
    assert job.spec.backoff_limit == 0 and job.spec.completions is None and job.status.succeeded == 3
    cron = typed.CronJob({"spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"parallelism": 2}}},
                          "status": {"active": [{"name": "j-1", "namespace": "n"}]}})
    assert cron.spec.job_template.spec.parallelism == 2 and cron.status.active[0].name == "j-1"
    assert typed.StatefulSet({"spec": {"serviceName": "s"}}).spec.service_name == "s"
    assert typed.DaemonSet({}).status.number_ready == 0


def test_claims_and_volumes():
    claim = typed.PersistentVolumeClaim({"spec": {"volumeName": "pv-1", "storageClassName": "",
                                                  "resources": {"requests": {"storage": "1Gi"}}}})
    assert claim.spec.volume_name == "pv-1" and claim.spec.storage_class_name == ""  # "" is not unset
    assert typed.PersistentVolumeClaim({}).spec.storage_class_name is None
    assert claim.spec.resources.requests["storage"] == "1Gi"
    volume = typed.PersistentVolume({"spec": {"claimRef": {"namespace": "n", "name": "c"}}})
    assert volume.spec.claim_ref is not None and volume.spec.claim_ref.name == "c"
    assert typed.PersistentVolume({}).spec.claim_ref is None


def test_the_package_re_exports_every_top_level_kind():
    kinds = {cls for cls in VIEW_CLASSES if issubclass(cls, meta.TypedObject) and cls is not meta.TypedObject}
    exported = {getattr(typed, name) for name in typed.__all__ if name != "EMPTY"}
    missing = {cls.__name__ for cls in kinds - exported} - {"PodTemplate", "List"}
    assert not missing, missing


def test_a_view_has_no_instance_dict():
    """Every view declares `__slots__`, so wrapping costs one small object and no attribute dict."""
    for cls in VIEW_CLASSES:
        assert not hasattr(cls({}), "__dict__"), cls.__name__
