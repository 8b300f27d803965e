"""Server-side tables print what upstream's printers print, and Accept/includeObject negotiate like upstream."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from control.apiserver.endpoints import printers, tables
from control.apiserver.resources import RESOURCES, by_path

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _row(group: str, plural: str, obj: dict) -> dict[str, object]:
    """The cells of `obj` keyed by column name."""
    table = tables.table_for(by_path(group, "v1", plural), [obj], now=NOW, list_resource_version="7")
    names = [column["name"] for column in table["columnDefinitions"]]
    return dict(zip(names, table["rows"][0]["cells"], strict=True))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(-5, "<invalid>", id="future"), pytest.param(-1, "0s", id="skew"),
        pytest.param(0, "0s", id="now"), pytest.param(119, "119s", id="under-two-minutes"),
        pytest.param(150, "2m30s", id="2m30s"), pytest.param(180, "3m", id="whole-minutes"),
        pytest.param(599, "9m59s", id="9m59s"), pytest.param(600, "10m", id="10m"),
        pytest.param(179 * 60 + 59, "179m", id="179m"), pytest.param(3 * 3600 + 120, "3h2m", id="3h2m"),
        pytest.param(5 * 3600, "5h", id="5h"), pytest.param(8 * 3600 + 60, "8h", id="8h"),
        pytest.param(47 * 3600, "47h", id="47h"), pytest.param(50 * 3600, "2d2h", id="2d2h"),
        pytest.param(72 * 3600, "3d", id="3d"), pytest.param(8 * 86400, "8d", id="8d"),
        pytest.param(729 * 86400, "729d", id="729d"), pytest.param(731 * 86400, "2y1d", id="2y1d"),
        pytest.param(9 * 365 * 86400, "9y", id="9y"),
    ],
)
def test_human_duration(seconds, text):
    assert printers.human_duration(seconds) == text


def _pod(phase="Running", containers=1, statuses=(), init=0, init_statuses=(), deleting=False, conditions=()):
    pod = {
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": _ago(minutes=5),
                     "resourceVersion": "42"},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(containers)],
                 "initContainers": [{"name": f"i{i}"} for i in range(init)]},
        "status": {"phase": phase, "containerStatuses": list(statuses), "initContainerStatuses": list(init_statuses),
                   "conditions": list(conditions)},
    }
    if deleting:
        pod["metadata"]["deletionTimestamp"] = _ago(seconds=3)
    return pod


RUNNING = {"name": "c0", "ready": True, "restartCount": 0, "state": {"running": {"startedAt": _ago(minutes=4)}}}
CRASHING = {"name": "c0", "ready": False, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": _ago(seconds=90)}}}
COMPLETED = {"name": "c0", "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}


@pytest.mark.parametrize(
    ("pod", "ready", "status", "restarts"),
    [
        pytest.param(_pod(statuses=[RUNNING]), "1/1", "Running", "0", id="running"),
        pytest.param(_pod(containers=2, statuses=[RUNNING, {**RUNNING, "name": "c1", "ready": False}]),
                     "1/2", "Running", "0", id="half-ready"),
        pytest.param(_pod(statuses=[CRASHING]), "0/1", "CrashLoopBackOff", "3 (90s ago)", id="crashloop"),
        pytest.param(_pod(phase="Succeeded", statuses=[COMPLETED]), "0/1", "Completed", "0", id="completed"),
        pytest.param(_pod(statuses=[{"name": "c0", "state": {"terminated": {"exitCode": 137}}}]),
                     "0/1", "ExitCode:137", "0", id="exit-code-without-reason"),
        pytest.param(_pod(phase="Pending", init=1, init_statuses=[{"name": "i0", "state": {"running": {}}}],
                          statuses=[{"name": "c0", "state": {"waiting": {"reason": "PodInitializing"}}}]),
                     "0/1", "Init:0/1", "0", id="init-running"),
        pytest.param(_pod(phase="Pending", init=2, init_statuses=[
            {"name": "i0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "i1", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]),
            "0/1", "Init:ImagePullBackOff", "0", id="init-waiting-reason"),
        pytest.param(_pod(phase="Pending", init=1, init_statuses=[
            {"name": "i0", "state": {"terminated": {"exitCode": 2}}}]), "0/1", "Init:ExitCode:2", "0",
            id="init-failed"),
        pytest.param(_pod(statuses=[RUNNING], deleting=True), "1/1", "Terminating", "0", id="terminating"),
        pytest.param(_pod(phase="Succeeded", statuses=[COMPLETED], deleting=True), "0/1", "Completed", "0",
                     id="deleting-finished-pod-is-not-terminating"),
        pytest.param(_pod(phase="Pending"), "0/1", "Pending", "0", id="pending-unscheduled"),
        pytest.param(_pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False",
                                                       "reason": "SchedulingGated"}]),
                     "0/1", "SchedulingGated", "0", id="scheduling-gated"),
        pytest.param(_pod(containers=2, statuses=[RUNNING, {**COMPLETED, "name": "c1"}],
                          conditions=[{"type": "Ready", "status": "False"}]),
                     "1/2", "NotReady", "0", id="completed-with-running-sibling"),
    ],
)
def test_pod_ready_status_restarts(pod, ready, status, restarts):
    row = _row("", "pods", pod)
    assert (row["Ready"], row["Status"], row["Restarts"], row["Age"]) == (ready, status, restarts, "5m")


def test_pod_wide_columns_and_conditions():
    pod = _pod(phase="Succeeded", statuses=[COMPLETED])
    pod["spec"].update(nodeName="node-1", readinessGates=[{"conditionType": "x/ok"}])
    pod["status"].update(podIPs=[{"ip": "10.1.0.5"}], conditions=[{"type": "x/ok", "status": "True"}])
    table = tables.table_for(by_path("", "v1", "pods"), [pod], now=NOW, list_resource_version="7")
    wide = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert table["rows"][0]["cells"][5:] == ["10.1.0.5", "node-1", "<none>", "1/1"]
    assert table["rows"][0]["conditions"][0]["reason"] == "Succeeded"


@pytest.mark.parametrize(
    ("spec", "status", "cluster_ip", "external_ip", "ports"),
    [
        pytest.param({"type": "ClusterIP", "clusterIP": "10.96.0.10", "ports": [{"port": 80, "protocol": "TCP"}]},
                     {}, "10.96.0.10", "<none>", "80/TCP", id="cluster-ip"),
        pytest.param({"type": "NodePort", "clusterIPs": ["10.96.0.11"],
                      "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                                {"port": 53, "protocol": "UDP"}]},
                     {}, "10.96.0.11", "<none>", "80:30080/TCP,53/UDP", id="node-port"),
        pytest.param({"type": "ClusterIP", "clusterIP": "None", "ports": []}, {}, "None", "<none>", "<none>",
                     id="headless-no-ports"),
        pytest.param({"type": "LoadBalancer", "clusterIP": "10.96.0.12", "ports": [{"port": 443}]},
                     {}, "10.96.0.12", "<pending>", "443/TCP", id="lb-pending"),
        pytest.param({"type": "LoadBalancer", "clusterIP": "10.96.0.12", "externalIPs": ["5.6.7.8"],
                      "ports": [{"port": 443}]}, {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
                     "10.96.0.12", "1.2.3.4,5.6.7.8", "443/TCP", id="lb-with-ingress"),
        pytest.param({"type": "ExternalName", "externalName": "db.example.com"}, {}, "<none>", "db.example.com",
                     "<none>", id="external-name"),
    ],
)
def test_service_columns(spec, status, cluster_ip, external_ip, ports):
    row = _row("", "services", {"metadata": {"name": "svc", "creationTimestamp": _ago(hours=30)},
                                "spec": spec, "status": status})
    assert (row["Cluster-IP"], row["External-IP"], row["Port(s)"], row["Age"]) == (cluster_ip, external_ip, ports,
                                                                                  "30h")


def test_service_selector_is_sorted_labels():
    row = _row("", "services", {"metadata": {"name": "s"}, "spec": {"selector": {"tier": "web", "app": "x"}}})
    assert (row["Selector"], row["Age"]) == ("app=x,tier=web", "<unknown>")


@pytest.mark.parametrize(
    ("subsets", "text"),
    [
        pytest.param([], "<none>", id="none"),
        pytest.param([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}], "10.0.0.1:80", id="one"),
        pytest.param([{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 6)], "ports": [{"port": 80}]}],
                     "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...", id="more"),
        pytest.param([{"addresses": [{"ip": "10.0.0.1"}]}], "10.0.0.1", id="headless-no-ports"),
        pytest.param([{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 53}]}], "[fd00::1]:53", id="ipv6"),
        pytest.param([{"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 80}]}], "", id="not-ready"),
    ],
)
def test_endpoints_column(subsets, text):
    assert _row("", "endpoints", {"metadata": {"name": "e"}, "subsets": subsets})["Endpoints"] == text


@pytest.mark.parametrize(
    ("node", "status", "roles"),
    [
        pytest.param({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "Ready", "<none>",
                     id="ready"),
        pytest.param({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}, "NotReady", "<none>",
                     id="not-ready"),
        pytest.param({"spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                      "metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}},
                     "Ready,SchedulingDisabled", "control-plane", id="cordoned-control-plane"),
        pytest.param({"metadata": {"labels": {"kubernetes.io/role": "worker", "node-role.kubernetes.io/infra": ""}}},
                     "Unknown", "infra,worker", id="no-conditions"),
    ],
)
def test_node_status_and_roles(node, status, roles):
    node = {**node, "metadata": {"name": "n1", **node.get("metadata", {})}}
    row = _row("", "nodes", node)
    assert (row["Status"], row["Roles"], row["Internal-IP"], row["OS-Image"]) == (status, roles, "<none>",
                                                                                 "<unknown>")


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        pytest.param("apps", "deployments", {"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                                      "template": {"spec": {"containers": [
                                                          {"name": "web", "image": "nginx:1.25"}]}}},
                                             "status": {"readyReplicas": 2, "updatedReplicas": 3,
                                                        "availableReplicas": 2}},
                     {"Ready": "2/3", "Up-to-date": 3, "Available": 2, "Containers": "web", "Images": "nginx:1.25",
                      "Selector": "app=web"}, id="deployment"),
        pytest.param("apps", "statefulsets", {"spec": {}}, {"Ready": "0/1"}, id="statefulset-default-replicas"),
        pytest.param("apps", "replicasets", {"spec": {"replicas": 2}, "status": {"replicas": 2, "readyReplicas": 1}},
                     {"Desired": 2, "Current": 2, "Ready": 1, "Selector": "<none>"}, id="replicaset"),
        pytest.param("batch", "jobs", {"spec": {"completions": 1}, "status": {
            "succeeded": 1, "startTime": _ago(minutes=2), "completionTime": _ago(seconds=30),
            "conditions": [{"type": "Complete", "status": "True"}]}},
            {"Status": "Complete", "Completions": "1/1", "Duration": "90s"}, id="job-complete"),
        pytest.param("batch", "jobs", {"spec": {"parallelism": 3}, "status": {"startTime": _ago(minutes=4)}},
                     {"Status": "Running", "Completions": "0/1 of 3", "Duration": "4m"}, id="job-running"),
        pytest.param("batch", "cronjobs", {"spec": {"schedule": "*/5 * * * *", "suspend": False},
                                           "status": {"active": [{}], "lastScheduleTime": _ago(minutes=3)}},
                     {"Schedule": "*/5 * * * *", "Timezone": "<none>", "Suspend": "False", "Active": 1,
                      "Last Schedule": "3m"}, id="cronjob"),
        pytest.param("apps", "controllerrevisions", {"revision": 3, "metadata": {"name": "x", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "u", "controller": True}]}},
            {"Controller": "daemonset.apps/web", "Revision": 3}, id="controllerrevision"),
        pytest.param("apps", "controllerrevisions", {"revision": 1}, {"Controller": "<none>", "Revision": 1},
                     id="controllerrevision-orphan"),
        pytest.param("", "configmaps", {"data": {"a": "1"}, "binaryData": {"b": "AA=="}}, {"Data": 2}, id="configmap"),
        pytest.param("", "secrets", {"type": "Opaque", "data": {"a": "MQ=="}}, {"Type": "Opaque", "Data": 1},
                     id="secret"),
        pytest.param("", "namespaces", {"status": {"phase": "Active"}}, {"Status": "Active"}, id="namespace"),
        pytest.param("coordination.k8s.io", "leases", {"spec": {"holderIdentity": "node-1"}}, {"Holder": "node-1"},
                     id="lease"),
        pytest.param("scheduling.k8s.io", "priorityclasses", {"value": 2000001000, "preemptionPolicy": "Never"},
                     {"Value": 2000001000, "Global-Default": False, "PreemptionPolicy": "Never"}, id="priorityclass"),
        pytest.param("", "resourcequotas", {"status": {"hard": {"pods": "10", "limits.cpu": "2"},
                                                       "used": {"pods": "3"}}},
                     {"Request": "pods: 3/10", "Limit": "limits.cpu: 0/2"}, id="resourcequota"),
        pytest.param("", "events", {"type": "Warning", "reason": "BackOff", "message": " Back-off restarting ",
                                    "involvedObject": {"kind": "Pod", "name": "web"}, "count": 4,
                                    "lastTimestamp": _ago(seconds=20), "source": {"component": "kubelet",
                                                                                  "host": "node-1"}},
                     {"Last Seen": "20s", "Type": "Warning", "Reason": "BackOff", "Object": "pod/web",
                      "Message": "Back-off restarting", "Source": "kubelet, node-1", "Count": 4}, id="event"),
        pytest.param("rbac.authorization.k8s.io", "roles", {"metadata": {
            "name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"}}, {"Created At": "2024-01-01T00:00:00Z"},
                     id="role"),
        pytest.param("rbac.authorization.k8s.io", "clusterroles", {}, {"Created At": "<unknown>"}, id="clusterrole"),
        pytest.param("rbac.authorization.k8s.io", "rolebindings", {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "Group", "name": "devs"},
                         {"kind": "ServiceAccount", "name": "ci", "namespace": "build"}]},
                     {"Role": "ClusterRole/view", "Users": "alice, bob", "Groups": "devs",
                      "ServiceAccounts": "build/ci"}, id="rolebinding"),
        pytest.param("rbac.authorization.k8s.io", "clusterrolebindings", {
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}, "subjects": [
                {"kind": "Group", "name": "system:masters"}]},
                     {"Role": "ClusterRole/cluster-admin", "Users": "", "Groups": "system:masters",
                      "ServiceAccounts": ""}, id="clusterrolebinding"),
    ],
)
def test_workload_and_config_columns(group, plural, obj, expected):
    row = _row(group, plural, {"metadata": {"name": "x"}, **obj})
    assert {key: row[key] for key in expected} == expected


@pytest.mark.parametrize("resource", [pytest.param(r, id=r.plural) for r in RESOURCES])
def test_every_resource_prints_one_cell_per_column(resource):
    table = tables.table_for(resource, [{"metadata": {"name": "x"}}], now=NOW, list_resource_version="1")
    assert len(table["rows"][0]["cells"]) == len(table["columnDefinitions"])
    assert table["columnDefinitions"][0 if resource.plural != "events" else -1]["format"] == "name"


def test_default_table_for_unprinted_resources():
    table = tables.table_for(by_path("", "v1", "bindings"),
                             [{"metadata": {"name": "b", "creationTimestamp": "2024-01-01T00:00:00Z"}}],
                             now=NOW, list_resource_version="1")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["b", "2024-01-01T00:00:00Z"]


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        pytest.param("Metadata", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                  "metadata": {"name": "web", "resourceVersion": "42"}}, id="metadata"),
        pytest.param("None", None, id="none"),
        pytest.param("Object", {"metadata": {"name": "web", "resourceVersion": "42"}, "spec": {"x": 1}}, id="object"),
    ],
)
def test_include_object(include, expected):
    obj = {"metadata": {"name": "web", "resourceVersion": "42"}, "spec": {"x": 1}}
    table = tables.table_for(by_path("apps", "v1", "deployments"), [obj], now=NOW, list_resource_version="9",
                             include_object=include, continue_token="abc")
    assert table["rows"][0]["object"] == expected
    assert (table["kind"], table["apiVersion"], table["metadata"]) == (
        "Table", "meta.k8s.io/v1", {"resourceVersion": "9", "continue": "abc"})


@pytest.mark.parametrize(
    ("value", "parsed"),
    [pytest.param(None, "Metadata", id="absent"), pytest.param("", "Metadata", id="empty"),
     pytest.param("Object", "Object", id="object"), pytest.param("None", "None", id="none")],
)
def test_parse_include_object(value, parsed):
    assert tables.parse_include_object(value) == parsed


def test_parse_include_object_refuses_unknown():
    with pytest.raises(ValueError, match='unrecognized includeObject value: "object"'):
        tables.parse_include_object("object")


KUBECTL = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
           "application/json")


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        pytest.param(KUBECTL, "v1", id="kubectl"),
        pytest.param("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", "v1beta1",
                     id="old-kubectl"),
        pytest.param("application/json; as=Table; v=v1; g=meta.k8s.io", "v1", id="spaces"),
        pytest.param("application/json;as=Table;v=v2;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
                     "v1", id="skip-unknown-version"),
        pytest.param("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,"
                     "application/json;as=Table;v=v1;g=meta.k8s.io", "v1", id="skip-other-as"),
        pytest.param("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", "v1", id="by-quality"),
        pytest.param("application/json", None, id="plain"),
        pytest.param("application/json,application/json;as=Table;v=v1;g=meta.k8s.io", None, id="plain-first"),
        pytest.param("application/json;as=Table;v=v1;g=meta.k8s.io;q=0,application/json", None, id="q-zero"),
        pytest.param("application/yaml;as=Table;v=v1;g=meta.k8s.io", None, id="yaml-table-not-served"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="absent"),
    ],
)
def test_parse_accept_table(accept, version):
    request = tables.parse_accept_table(accept)
    assert (request.version if request else None) == version
    if request:
        assert request.api_version == f"meta.k8s.io/{version}"


def test_watch_events_carry_headers_only_first():
    pod = _pod(statuses=[RUNNING])
    pods = by_path("", "v1", "pods")
    first = tables.watch_event_table(pods, pod, now=NOW, first=True)
    later = tables.watch_event_table(pods, pod, now=NOW, first=False, table_version="v1beta1")
    assert first["columnDefinitions"][0]["name"] == "Name" and first["metadata"] == {"resourceVersion": "42"}
    assert later["columnDefinitions"] is None and later["apiVersion"] == "meta.k8s.io/v1beta1"
    assert later["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    assert first["rows"][0]["cells"] == later["rows"][0]["cells"]
