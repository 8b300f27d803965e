"""The kubelet's probes on the shared `up --nodes 3`.

- liveness (httpGet on a named port): busybox httpd serves /www/healthz, the container removes the file
  after a few seconds, the probe gets 404 → events Unhealthy "Liveness probe failed: HTTP probe failed
  with statuscode: 404" and Killing "Container app failed liveness probe, will be restarted", the container
  restarts (restartCount ≥ 1). The pod's terminationGracePeriodSeconds is 60 and its shell (PID 1) ignores
  SIGTERM, so only the probe's own terminationGracePeriodSeconds (1) makes the restart come quickly;
- readiness (exec `test -f /tmp/ready`): the test removes and recreates the file through Docker (the
  harness, not the kubelet) → the pod's Ready and ContainersReady go False and its address moves to the
  Service's notReadyAddresses, then back;
- startup (exec): while the startup probe fails the container is running but `started` and `ready` stay
  False although its readiness probe would pass; once the startup probe passes both become True.

Probes run every second; pods are spread over the nodes by the scheduler, so the kubelet reaches pod IPs
from its own node's namespace. Traffic stays inside the cluster's pod network.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from control.client.rest import RESTClient
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
IMAGE = "slimkube/busybox:1"


def pod(name: str, container: dict[str, Any], *, labels: dict[str, str] | None = None,
        grace: int = 1) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"terminationGracePeriodSeconds": grace,
                     "containers": [{"name": "app", "image": IMAGE, "imagePullPolicy": "Never", **container}]}}


def exec_probe(command: list[str], **fields: Any) -> dict[str, Any]:
    return {"exec": {"command": command}, "periodSeconds": 1, "timeoutSeconds": 2, **fields}


def status(client: RESTClient, ns: str, name: str) -> dict[str, Any]:
    return client.get(f"/api/v1/namespaces/{ns}/pods/{name}").get("status") or {}


def container_status(client: RESTClient, ns: str, name: str) -> dict[str, Any]:
    statuses = status(client, ns, name).get("containerStatuses") or [{}]
    return statuses[0]


def condition(client: RESTClient, ns: str, name: str, kind: str) -> str:
    for item in status(client, ns, name).get("conditions") or []:
        if item.get("type") == kind:
            return str(item.get("status"))
    return ""


def events(client: RESTClient, ns: str, name: str) -> list[tuple[str, str]]:
    items = client.list(f"/api/v1/namespaces/{ns}/events",
                        params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return [(e.get("reason", ""), e.get("message", "")) for e in items]


def docker_exec(docker_api: Any, ns: str, name: str, argv: list[str]) -> None:
    """Run `argv` in the pod's running app container through dockerd (the test's hand, not the kubelet's)."""
    found = docker_api.containers(filters={"status": "running", "label": [
        f"io.kubernetes.pod.namespace={ns}", f"io.kubernetes.pod.name={name}",
        "io.kubernetes.container.name=app"]})
    assert len(found) == 1, found
    exec_id = docker_api.exec_create(found[0]["Id"], argv)["Id"]
    docker_api.exec_start(exec_id)
    assert docker_api.exec_inspect(exec_id)["ExitCode"] == 0


def endpoint_ips(client: RESTClient, ns: str, service: str) -> tuple[set[str], set[str]]:
    """(ready, not ready) addresses of the Service's Endpoints."""
    subsets = (client.get(f"/api/v1/namespaces/{ns}/endpoints/{service}").get("subsets") or [])
    ready = {a["ip"] for s in subsets for a in s.get("addresses") or []}
    not_ready = {a["ip"] for s in subsets for a in s.get("notReadyAddresses") or []}
    return ready, not_ready


def test_failing_http_liveness_probe_restarts_the_container(workload_cluster: RunningCluster,
                                                            cluster_namespace: str) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    script = ("mkdir -p /www && echo ok > /www/healthz && httpd -p 8080 -h /www && sleep 4 && "
              "rm /www/healthz && sleep 3600")
    client.create(f"/api/v1/namespaces/{ns}/pods", pod("live", {
        "command": ["sh", "-c", script], "ports": [{"name": "http", "containerPort": 8080}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1,
                          "failureThreshold": 2, "terminationGracePeriodSeconds": 1}}, grace=60))
    started = time.monotonic()
    wait_for(lambda: container_status(client, ns, "live").get("ready"), 60, "the pod running")
    wait_for(lambda: container_status(client, ns, "live").get("restartCount", 0) >= 1, 40,
             lambda: f"a restart; status {status(client, ns, 'live')}; events {events(client, ns, 'live')}")
    # the pod's 60 s grace would have held the kill for a minute: the probe's 1 s grace was used
    assert time.monotonic() - started < 40
    seen = wait_for(lambda: (lambda found: found if any(r == "Killing" for r, _ in found) else None)(
        events(client, ns, "live")), 20, "the Killing event")
    assert ("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404") in seen, seen
    assert ("Killing", "Container app failed liveness probe, will be restarted") in seen, seen
    last = container_status(client, ns, "live").get("lastState", {}).get("terminated") or {}
    assert last.get("exitCode") == 137, last  # SIGKILL after the probe's grace: sh ignores SIGTERM as PID 1


def test_readiness_probe_drives_ready_and_endpoints(workload_cluster: RunningCluster, cluster_namespace: str,
                                                    docker_api: Any) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "probed"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    client.create(f"/api/v1/namespaces/{ns}/pods", pod("ready", {
        "command": ["sh", "-c", "touch /tmp/ready && exec sleep 3600"],
        "readinessProbe": exec_probe(["test", "-f", "/tmp/ready"], failureThreshold=1)}, labels={"app": "probed"}))
    wait_for(lambda: condition(client, ns, "ready", "Ready") == "True", 60,
             lambda: f"Ready; status {status(client, ns, 'ready')}")
    ip = status(client, ns, "ready")["podIP"]
    wait_for(lambda: endpoint_ips(client, ns, "web") == ({ip}, set()), 20, "the pod among the ready addresses")

    docker_exec(docker_api, ns, "ready", ["rm", "/tmp/ready"])
    wait_for(lambda: condition(client, ns, "ready", "Ready") == "False", 15, "Ready False")
    assert condition(client, ns, "ready", "ContainersReady") == "False"
    cs = container_status(client, ns, "ready")
    assert cs.get("ready") is False and cs.get("started") is True and "running" in cs.get("state", {}), cs
    wait_for(lambda: endpoint_ips(client, ns, "web") == (set(), {ip}), 20,
             lambda: f"the pod moved to notReadyAddresses: {endpoint_ips(client, ns, 'web')}")
    wait_for(lambda: ("Unhealthy", "Readiness probe failed: ") in events(client, ns, "ready"), 15,
             lambda: f"the Unhealthy event: {events(client, ns, 'ready')}")
    assert not any(r == "Killing" for r, _ in events(client, ns, "ready")), "readiness must not kill"

    docker_exec(docker_api, ns, "ready", ["touch", "/tmp/ready"])
    wait_for(lambda: condition(client, ns, "ready", "Ready") == "True", 15, "Ready True again")
    wait_for(lambda: endpoint_ips(client, ns, "web") == ({ip}, set()), 20, "the pod back among the ready addresses")
    assert container_status(client, ns, "ready").get("restartCount") == 0


def test_startup_probe_holds_readiness_back(workload_cluster: RunningCluster, cluster_namespace: str,
                                            docker_api: Any) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/api/v1/namespaces/{ns}/pods", pod("slow", {
        "command": ["sleep", "3600"],
        "startupProbe": exec_probe(["test", "-f", "/tmp/started"], failureThreshold=60),
        "readinessProbe": exec_probe(["true"]),
        # fails until /tmp/started exists: had it run before the startup probe passed, it would have killed
        "livenessProbe": exec_probe(["test", "-f", "/tmp/started"], failureThreshold=1)}))
    wait_for(lambda: "running" in container_status(client, ns, "slow").get("state", {}), 60, "the container running")
    held_until = time.monotonic() + 4
    while time.monotonic() < held_until:  # the readiness probe would pass, the liveness probe would kill
        cs = container_status(client, ns, "slow")
        assert cs.get("started") is False and cs.get("ready") is False and cs.get("restartCount") == 0, cs
        assert condition(client, ns, "slow", "Ready") == "False"
        time.sleep(0.3)
    docker_exec(docker_api, ns, "slow", ["touch", "/tmp/started"])
    wait_for(lambda: container_status(client, ns, "slow").get("started") is True, 15, "started")
    wait_for(lambda: condition(client, ns, "slow", "Ready") == "True", 15, "Ready once started")
    time.sleep(2)  # the liveness probe now runs, and passes
    cs = container_status(client, ns, "slow")
    assert cs.get("ready") is True and cs.get("restartCount") == 0, cs
    assert not any(r == "Killing" for r, _ in events(client, ns, "slow"))
