"""Writing protobuf answers: every kubectl 1.33 capture re-encodes byte for byte, a representative object
of each served kind round-trips through the decoder, and the Accept negotiation keeps JSON for any client
that lists it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from control.apiserver import resources
from control.apiserver.codec import protobuf, protoencode

BODIES = Path(__file__).with_name("kubectl_bodies")


@pytest.mark.parametrize("name", sorted(path.stem for path in BODIES.glob("*.pb")))
def test_kubectl_133_bodies_reencode_byte_for_byte(name: str) -> None:
    body = (BODIES / f"{name}.pb").read_bytes()
    decoded = protobuf.decode_object(body)
    assert decoded is not None
    assert protoencode.encode_object(decoded) == body


META = {"name": "web-0", "namespace": "default", "uid": "0b6c-11", "resourceVersion": "42", "generation": 3,
        "creationTimestamp": "2026-11-27T15:00:00Z", "deletionGracePeriodSeconds": 0,
        "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "é ünïcode"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-1",
                             "controller": True, "blockOwnerDeletion": True}],
        "finalizers": ["example.com/keep"],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-11-27T15:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]}
CONTAINER = {"name": "app", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"],
             "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
             "env": [{"name": "A", "value": "1"},
                     {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
             "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
             "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 3,
                               "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                               "failureThreshold": 3},
             "readinessProbe": {"tcpSocket": {"port": 80}, "timeoutSeconds": 1, "periodSeconds": 5,
                                "successThreshold": 1, "failureThreshold": 3},
             "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "imagePullPolicy": "IfNotPresent",
             "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "capabilities": {"add": ["NET_ADMIN"]}}}
POD = {"kind": "Pod", "apiVersion": "v1", "metadata": META,
       "spec": {"volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                            {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
                "containers": [CONTAINER], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "nodeSelector": {"disk": "ssd"}, "serviceAccountName": "default",
                "nodeName": "node-a", "securityContext": {"supplementalGroups": [1000, 2000], "fsGroup": -1},
                "schedulerName": "default-scheduler",
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 300}],
                "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"},
       "status": {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                  "startTime": "2026-11-27T15:00:01Z", "qosClass": "Burstable",
                  "conditions": [{"type": "Ready", "status": "True",
                                  "lastTransitionTime": "2026-11-27T15:00:02Z"}],
                  "containerStatuses": [{"name": "app", "ready": True, "restartCount": 2, "image": "nginx:1.27",
                                         "imageID": "docker://sha256:ab", "containerID": "docker://c1",
                                         "started": True, "state": {"running": {
                                             "startedAt": "2026-11-27T15:00:01Z"}},
                                         "lastState": {}}]}}

OBJECTS: list[dict[str, Any]] = [
    POD,
    {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "web"},
     "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http", "nodePort": 30080}],
              "selector": {"app": "web"}, "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
              "type": "NodePort", "sessionAffinity": "None", "ipFamilies": ["IPv4"]},
     "status": {"loadBalancer": {}}},
    {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "data": {"k": "AAEC", "e": ""},
     "type": "Opaque"},
    {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "d"},
     "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}, "matchExpressions": [
         {"key": "tier", "operator": "In", "values": ["a", "b"]}]},
              "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [CONTAINER]}},
              "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
              "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
     "status": {"observedGeneration": 1, "replicas": 1}},
    {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": {"name": "node-a"},
     "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 40,
              "renewTime": "2026-11-27T15:00:00.123456Z"}},
    {"kind": "ControllerRevision", "apiVersion": "apps/v1", "metadata": {"name": "r"},
     "data": {"spec": {"x": [1, "two", None]}}, "revision": 2},
    {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e", "namespace": "default"},
     "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "message": "ok", "count": 3,
     "source": {"component": "kubelet"}, "firstTimestamp": "2026-11-27T15:00:00Z",
     "lastTimestamp": "2026-11-27T15:00:09Z", "type": "Normal", "eventTime": "2026-11-27T15:00:00.500000Z",
     "reportingComponent": "", "reportingInstance": ""},
    {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7", "continue": "abc"},
     "items": [{"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]},
                "status": {}}]},
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": 'pods "x" not found',
     "reason": "NotFound", "details": {"name": "x", "kind": "pods"}, "code": 404},
]


@pytest.mark.parametrize("obj", OBJECTS, ids=[obj["kind"] for obj in OBJECTS])
def test_round_trip(obj: dict[str, Any]) -> None:
    encoded = protoencode.encode_object(obj)
    assert encoded is not None and encoded.startswith(protobuf.MAGIC)
    assert protoencode.decode_object(encoded) == obj


def test_every_served_kind_and_its_list_has_a_protobuf_form() -> None:
    """A minimal object of each served built-in kind encodes and decodes back (and so does its List)."""
    kinds = {(resource.api_version, resource.kind) for resource in resources.ServedResources().served()
              if protoencode.message_for(resource.api_version, resource.kind) is not None}
    assert {("v1", "Pod"), ("apps/v1", "Deployment"), ("v1", "ConfigMap"), ("batch/v1", "Job")} <= kinds
    for api_version, kind in kinds:
        obj = {"kind": kind, "apiVersion": api_version, "metadata": {"name": "x", "labels": {"a": "b"}}}
        encoded = protoencode.encode_object(obj)
        assert encoded is not None
        decoded = protoencode.decode_object(encoded)
        assert decoded is not None and decoded["metadata"] == obj["metadata"], kind
        if protoencode.message_for(api_version, f"{kind}List") is not None:
            listed = {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": "1"},
                      "items": [{key: value for key, value in decoded.items() if key not in ("kind", "apiVersion")}]}
            assert protoencode.decode_object(protoencode.encode_object(listed) or b"") == listed


def test_gogo_wire_details() -> None:
    # a negative int32 is ten bytes of two's complement; a zero Time an empty message; map keys sorted
    status = protoencode.encode_message({"code": -1}, protoencode.META + "Status")
    assert bytes([6 << 3]) + b"\xff" * 9 + b"\x01" in status
    meta = protoencode.encode_message({"labels": {"b": "2", "a": "1"}}, protoencode.META + "ObjectMeta")
    assert meta.index(b"\x0a\x01a") < meta.index(b"\x0a\x01b")
    assert bytes([8 << 3 | 2, 0]) in meta  # creationTimestamp: the zero Time, written empty
    port = protoencode.encode_message({"port": 80, "targetPort": "http"}, "k8s.io.api.core.v1.ServicePort")
    assert b"\x22\x0a\x08\x01\x10\x00\x1a\x04http" in port  # IntOrString{type: 1, intVal: 0, strVal: "http"}


def test_kinds_without_a_protobuf_form() -> None:
    assert protoencode.encode_object({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "rows": []}) is None
    assert protoencode.encode_object({"kind": "Widget", "apiVersion": "example.com/v1"}) is None


@pytest.mark.parametrize(("accept", "answer"), [
    ("application/vnd.kubernetes.protobuf", "protobuf"),
    ("application/vnd.kubernetes.protobuf;q=0.9", "protobuf"),
    ("application/vnd.kubernetes.protobuf, application/json", "json"),
    ("application/vnd.kubernetes.protobuf,*/*", "json"),
    ("application/vnd.kubernetes.protobuf, application/*", "json"),
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "json"),
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "none"),
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf",
     "protobuf"),
    ("text/html", "json"),
    ("", "json"),
    (None, "json"),
])
def test_protobuf_only_when_json_is_not_accepted(accept: str | None, answer: str) -> None:
    assert protoencode.negotiate(accept) == answer
