"""End-to-end: the real kubectl binaries (1.33 and Debian's 1.20) against a real API server, used the way
a new user would use them — get, create, apply, scale, describe, delete, watch, rollout, errors,
version and api-resources.

No controllers run here: where kubectl waits for one (a kubelet confirming a graceful pod deletion, a
deployment controller reporting a rollout), the test plays that part through the API, as the component
would. Every test works in its own namespace, created with `kubectl create namespace`.

What kubectl needs that plain JSON-over-HTTP tests never exercise: the admin kubeconfig must be https
(client-go sends the token only over TLS), 1.20's typed clients send JSON without a Content-Type, and
1.33's send protobuf (`create namespace`, `create configmap`, `create secret`)."""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from typing import Any

import pytest
import yaml

from control.util.version import KUBERNETES_VERSION
from tests.e2e.conftest import Kubectl
from tests.support.apiserver import Endpoint


def deployment(name: str, image: str = "nginx:1.25", *, replicas: int = 1,
               template_labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": template_labels or {"app": name}},
                         "spec": {"containers": [{"name": "web", "image": image}]}},
        },
    }


def pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def manifest(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    result = kubectl.run("create", "namespace", name)
    assert f"namespace/{name} created" in result.stdout
    return name


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl.run("get", *args, "-o", "json").stdout)


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def row(output: str, name: str) -> str:
    for line in output.splitlines()[1:]:
        cells = line.split()
        if cells and (cells[0] == name or cells[0].endswith(f"/{name}")):
            return line
    raise AssertionError(f"no row for {name} in:\n{output}")


# -- 1. get -------------------------------------------------------------------------------------------

def test_get_shows_upstream_columns(kubectl: Kubectl, ns: str) -> None:
    namespaces = kubectl.run("get", "namespaces").stdout
    assert header(namespaces) == ["NAME", "STATUS", "AGE"]
    assert row(namespaces, ns).split()[1] == "Active"
    assert row(namespaces, "default").split()[1] == "Active"

    services = kubectl.run("get", "services", "-n", "default").stdout
    assert header(services) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert row(services, "kubernetes").split()[1:5] == ["ClusterIP", "10.96.0.1", "<none>", "443/TCP"]

    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("web-0", node="fake-node-1")))
    wide = kubectl.run("get", "pods", "-n", ns, "-o", "wide").stdout
    assert header(wide)[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "IP" in header(wide) and "NODE" in header(wide)
    cells = row(wide, "web-0").split()
    assert cells[1:3] == ["0/1", "Pending"]
    assert "fake-node-1" in cells

    as_yaml = yaml.safe_load(kubectl.run("get", "pod", "web-0", "-n", ns, "-o", "yaml").stdout)
    as_json = get_json(kubectl, "pod", "web-0", "-n", ns)
    for obj in (as_yaml, as_json):
        assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
        assert obj["metadata"]["name"] == "web-0" and obj["metadata"]["namespace"] == ns
        assert obj["metadata"]["resourceVersion"].isdigit()
        assert len(obj["metadata"]["uid"]) == 36
        assert obj["spec"]["nodeName"] == "fake-node-1"
    assert as_yaml["metadata"]["uid"] == as_json["metadata"]["uid"]


# -- 2. create and get all ----------------------------------------------------------------------------

def test_create_from_stdin_and_get_all(kubectl: Kubectl, ns: str) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    created = kubectl.run("create", "-n", ns, "-f", "-", input=manifest(deployment("web"), service, config)).stdout
    assert "deployment.apps/web created" in created
    assert "service/web created" in created
    assert "configmap/settings created" in created

    everything = kubectl.run("get", "all", "-n", ns).stdout
    assert "deployment.apps/web" in everything
    assert "service/web" in everything
    assert "configmap" not in everything  # not in the `all` category
    service_row = next(line for line in everything.splitlines() if line.startswith("service/web"))
    assert "80/TCP" in service_row and "ClusterIP" in service_row

    stored = get_json(kubectl, "configmap", "settings", "-n", ns)
    assert stored["data"] == {"mode": "fast"}

    # the generators use typed clients, which in kubectl 1.33 send protobuf bodies
    assert "configmap/flags created" in kubectl.run("create", "configmap", "flags", "-n", ns,
                                                    "--from-literal=debug=true").stdout
    assert "secret/creds created" in kubectl.run("create", "secret", "generic", "creds", "-n", ns,
                                                 "--from-literal=password=s3cret").stdout
    assert get_json(kubectl, "configmap", "flags", "-n", ns)["data"] == {"debug": "true"}
    secret = get_json(kubectl, "secret", "creds", "-n", ns)
    assert secret["type"] == "Opaque" and secret["data"] == {"password": "czNjcmV0"}


# -- 3. apply -----------------------------------------------------------------------------------------

def test_apply_twice_patches_and_then_is_unchanged(kubectl: Kubectl, ns: str) -> None:
    first = kubectl.run("apply", "-n", ns, "-f", "-", input=manifest(deployment("app", "nginx:1.25")))
    assert "deployment.apps/app created" in first.stdout
    stored = get_json(kubectl, "deployment", "app", "-n", ns)
    assert stored["metadata"]["generation"] == 1
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]

    # -v=9 logs each request as a curl command line: the change goes as a strategic merge patch
    second = kubectl.run("apply", "-v=9", "-n", ns, "-f", "-", input=manifest(deployment("app", "nginx:1.27")))
    assert "deployment.apps/app configured" in second.stdout
    patches = [line for line in second.stderr.splitlines() if "curl" in line and "-XPATCH" in line]
    assert len(patches) == 1 and "application/strategic-merge-patch+json" in patches[0], patches
    stored = get_json(kubectl, "deployment", "app", "-n", ns)
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert stored["metadata"]["generation"] == 2
    applied = json.loads(stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"

    third = kubectl.run("apply", "-n", ns, "-f", "-", input=manifest(deployment("app", "nginx:1.27")))
    assert "deployment.apps/app unchanged" in third.stdout
    assert get_json(kubectl, "deployment", "app", "-n", ns)["metadata"]["generation"] == 2


# -- 4. scale -----------------------------------------------------------------------------------------

def test_scale_deployment(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(deployment("api")))
    scaled = kubectl.run("scale", "-v=9", "-n", ns, "deployment", "api", "--replicas=3")
    assert "deployment.apps/api scaled" in scaled.stdout
    assert any("-XPATCH" in line and f"/namespaces/{ns}/deployments/api/scale" in line
               for line in scaled.stderr.splitlines() if "curl" in line), scaled.stderr
    stored = get_json(kubectl, "deployment", "api", "-n", ns)
    assert stored["spec"]["replicas"] == 3
    assert stored["metadata"]["generation"] == 2


# -- 5. describe --------------------------------------------------------------------------------------

def test_describe_pod_and_deployment_with_events(kubectl: Kubectl, apiserver: Endpoint, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("worker", node="fake-node-2"), deployment("front")))
    uid = get_json(kubectl, "pod", "worker", "-n", ns)["metadata"]["uid"]
    event = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "worker.pulling", "namespace": ns},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": "worker", "uid": uid, "apiVersion": "v1"},
        "reason": "Pulling", "message": "Pulling image \"busybox:1.36\"", "type": "Normal",
        "source": {"component": "kubelet", "host": "fake-node-2"}, "count": 1,
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z",
    }
    response = apiserver.request("POST", f"/api/v1/namespaces/{ns}/events", json=event)
    assert response.status_code == 201, response.text
    # an event for another object must not show up
    other = {**event, "metadata": {"name": "other.event", "namespace": ns},
             "involvedObject": {**event["involvedObject"], "name": "someone-else", "uid": str(uuid.uuid4())},
             "reason": "Elsewhere"}
    assert apiserver.request("POST", f"/api/v1/namespaces/{ns}/events", json=other).status_code == 201

    described = kubectl.run("describe", "pod", "worker", "-n", ns).stdout
    assert "Name:" in described and "worker" in described
    assert "fake-node-2" in described
    assert "busybox:1.36" in described
    assert "Events:" in described
    assert "Pulling" in described and 'Pulling image "busybox:1.36"' in described
    assert "Elsewhere" not in described

    described = kubectl.run("describe", "deployment", "front", "-n", ns).stdout
    assert "Name:" in described and "front" in described
    assert "Replicas:" in described
    assert "nginx:1.25" in described
    assert "Selector:" in described and "app=front" in described


# -- 6. delete ----------------------------------------------------------------------------------------

def test_delete_unscheduled_pod_is_prompt(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("loose")))
    started = time.monotonic()
    result = kubectl.run("delete", "pod", "loose", "-n", ns, timeout=30)
    assert 'pod "loose" deleted' in result.stdout
    assert time.monotonic() - started < 10
    gone = kubectl.run("get", "pod", "loose", "-n", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_delete_scheduled_pod_waits_for_the_kubelet(kubectl: Kubectl, apiserver: Endpoint, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("bound", node="fake-node-3")))
    path = f"/api/v1/namespaces/{ns}/pods/bound"
    seen: dict[str, Any] = {}

    def kubelet() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # wait until kubectl's delete marked the pod
            current = apiserver.request("GET", path).json()
            if current.get("metadata", {}).get("deletionTimestamp"):
                seen["marked"] = current["metadata"]
                break
            time.sleep(0.1)
        time.sleep(1)
        seen["confirm"] = apiserver.request("DELETE", path, json={"kind": "DeleteOptions", "apiVersion": "v1",
                                                                  "gracePeriodSeconds": 0}).status_code

    thread = threading.Thread(target=kubelet, daemon=True)
    thread.start()
    started = time.monotonic()
    result = kubectl.run("delete", "pod", "bound", "-n", ns, timeout=40)
    elapsed = time.monotonic() - started
    thread.join(timeout=30)
    assert 'pod "bound" deleted' in result.stdout
    assert seen["marked"]["deletionGracePeriodSeconds"] == 30
    assert seen["confirm"] == 200
    assert elapsed >= 1.0  # kubectl waited for the kubelet's confirmation
    assert apiserver.request("GET", path).status_code == 404


# -- 7. get -w ----------------------------------------------------------------------------------------

def test_get_watch_prints_new_pods(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("first")))
    watcher = kubectl.popen("get", "pods", "-n", ns, "-w")
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in watcher.stdout:
            lines.put(line)

    def next_row(name: str, deadline: float) -> str:
        while True:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line.split() and line.split()[0] == name:
                return line

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 20
        assert next_row("first", deadline).split()[1:3] == ["0/1", "Pending"]
        kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("second")))
        assert next_row("second", deadline).split()[1:3] == ["0/1", "Pending"]
        assert watcher.poll() is None  # still watching
    finally:
        watcher.kill()
        watcher.wait(timeout=10)
        watcher.stdout.close()
        watcher.stderr.close()


# -- 8. rollout ---------------------------------------------------------------------------------------

def test_rollout_status_and_restart(kubectl: Kubectl, apiserver: Endpoint, ns: str) -> None:
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(deployment("roll", replicas=2)))
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/roll"

    def controller() -> None:  # what the deployment controller would report once the pods are up
        time.sleep(0.5)
        current = apiserver.request("GET", path).json()
        replicas = current["spec"]["replicas"]
        status = {"observedGeneration": current["metadata"]["generation"], "replicas": replicas,
                  "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}
        response = apiserver.request("PATCH", path + "/status", data=json.dumps({"status": status}),
                                     headers={"Content-Type": "application/merge-patch+json"})
        assert response.status_code == 200, response.text

    thread = threading.Thread(target=controller, daemon=True)
    thread.start()
    result = kubectl.run("rollout", "status", "deployment/roll", "-n", ns, "--timeout=20s", timeout=40)
    thread.join(timeout=10)
    assert 'deployment "roll" successfully rolled out' in result.stdout
    stored = apiserver.request("GET", path).json()
    assert stored["status"]["availableReplicas"] == 2 and stored["metadata"]["generation"] == 1

    restarted = kubectl.run("rollout", "restart", "deployment/roll", "-n", ns)
    assert "deployment.apps/roll restarted" in restarted.stdout
    stored = get_json(kubectl, "deployment", "roll", "-n", ns)
    assert "kubectl.kubernetes.io/restartedAt" in stored["spec"]["template"]["metadata"]["annotations"]
    assert stored["metadata"]["generation"] == 2
    assert stored["status"]["observedGeneration"] == 1  # the status is the controller's, untouched


# -- 9. errors ----------------------------------------------------------------------------------------

def test_errors_are_clear(kubectl: Kubectl, ns: str) -> None:
    bad = deployment("bad", template_labels={"app": "other"})
    result = kubectl.run("create", "-n", ns, "-f", "-", input=manifest(bad), check=False)
    assert result.returncode != 0
    assert 'The Deployment "bad" is invalid' in result.stderr
    assert "spec.template.metadata.labels" in result.stderr
    assert kubectl.run("get", "deployment", "bad", "-n", ns, check=False).returncode != 0

    missing = kubectl.run("get", "pod", "nope", "-n", ns, check=False)
    assert missing.returncode != 0
    assert 'Error from server (NotFound): pods "nope" not found' in missing.stderr

    # exec on a pod bound to a node that does not exist: the Node's NotFound at once, as upstream's
    # node connection lookup answers (exec itself is tested against real kubelets in test_exec.py)
    kubectl.run("create", "-n", ns, "-f", "-", input=manifest(pod("shell", node="fake-node-4")))
    started = time.monotonic()
    result = kubectl.run("exec", "-n", ns, "shell", "--", "true", check=False, timeout=30)
    assert result.returncode != 0
    assert time.monotonic() - started < 25
    assert 'nodes "fake-node-4" not found' in result.stderr, result.stderr


# -- 10. version and api-resources --------------------------------------------------------------------

def test_version_and_api_resources(kubectl: Kubectl) -> None:
    version = kubectl.run("version").stdout
    assert "Server Version" in version and KUBERNETES_VERSION in version

    resources = kubectl.run("api-resources").stdout
    deployments = next(line for line in resources.splitlines() if line.split() and line.split()[0] == "deployments")
    assert deployments.split()[1:] == ["deploy", "apps/v1", "true", "Deployment"]
    pods = next(line for line in resources.splitlines() if line.split() and line.split()[0] == "pods")
    assert pods.split()[1:] == ["po", "v1", "true", "Pod"]
