"""Deployments end to end on the shared `up --nodes 3` with the real kubectl 1.33: the
Deployment controller makes ReplicaSets, the ReplicaSet controller pods, the kubelets run them.

One Deployment goes through what an operator does with it: `kubectl create deployment` of 3 (its own
manifest from `--dry-run=client`, with a 1 s termination grace period so `sleep` goes quickly) → 3 pods
Running; `kubectl set image` → a rolling update during which a watch on the pods samples that the ready
pods never drop below replicas − maxUnavailable (3 − 0 with kubectl's 25%/25% defaults), and `rollout
status` exits 0; `rollout history` lists two revisions; `rollout undo` brings the first template back
(kubectl patches it in from the old ReplicaSet); `rollout pause` holds a template change back until
`rollout resume`; `scale --replicas=0` and back to 2; `rollout restart` replaces the pods with ones that
carry kubectl's restartedAt annotation. The second image is the first one spelled with its registry
(`docker.io/slimkube/busybox:1`): a different template for the controller, the same local image for
Docker, so nothing is pulled.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(240)
FIRST, SECOND = "slimkube/busybox:1", "docker.io/slimkube/busybox:1"
ROLLOUT_TIMEOUT = "90s"


def ready(pod: dict[str, Any]) -> bool:
    """Serving: Ready and not being deleted (what the ReplicaSet controller counts as available)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class ReadySampler:
    """Watches the namespace's pods and keeps the fewest ready pods seen once `floor` had been reached,
    and the images of every pod that was ever ready."""

    def __init__(self, client: RESTClient, ns: str, floor: int) -> None:
        self.client, self.ns, self.floor = client, ns, floor
        self.pods: dict[str, dict[str, Any]] = {}
        self.lowest: int | None = None
        self.ready_images: set[str] = set()
        self.events = 0
        self.stop = threading.Event()
        listed = client.list(f"/api/v1/namespaces/{ns}/pods")
        for pod in listed["items"]:
            self._see("ADDED", pod)
        self.thread = threading.Thread(target=self._run, args=(listed["metadata"]["resourceVersion"],), daemon=True)
        self.thread.start()

    def _see(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        count = sum(1 for p in self.pods.values() if ready(p))
        for p in self.pods.values():
            if ready(p):
                self.ready_images.add(p["spec"]["containers"][0]["image"])
        if count >= self.floor or self.lowest is not None:
            self.lowest = count if self.lowest is None else min(self.lowest, count)
        self.events += 1

    def _run(self, resource_version: str) -> None:
        for event in self.client.watch(f"/api/v1/namespaces/{self.ns}/pods", resource_version=resource_version,
                                       stop=self.stop):
            if event.type in ("ADDED", "MODIFIED", "DELETED"):
                self._see(event.type, event.object)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def pods(client: RESTClient, ns: str) -> list[dict[str, Any]]:
    return client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=web"})["items"]


def running(client: RESTClient, ns: str, count: int, image: str | None = None) -> bool:
    """Exactly `count` pods, all Running and ready (with `image`, if given), none being deleted."""
    found = pods(client, ns)
    return len(found) == count and all(
        ready(p) and p["status"].get("phase") == "Running"
        and (image is None or p["spec"]["containers"][0]["image"] == image) for p in found)


def test_deployment_rollouts_with_kubectl(workload_cluster: RunningCluster, cluster_namespace: str,
                                          tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path))
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"

    manifest = json.loads(kubectl.run("create", "deployment", "web", f"--image={FIRST}", "--replicas=3", "-n", ns,
                                      "--dry-run=client", "-o", "json", "--", "sleep", "3600").stdout)
    manifest["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    kubectl.run("create", "-n", ns, "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: running(client, ns, 3, FIRST), 60, "3 pods of the deployment Running")
    # The scheduler's default topology spread (the ReplicaSet selects them) puts one replica on each node.
    placed = sorted(p["spec"]["nodeName"] for p in pods(client, ns))
    assert placed == sorted(workload_cluster.names), placed
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, f"--timeout={ROLLOUT_TIMEOUT}", timeout=120)
    d = client.get(f"{deployments}/web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert {k: d["status"].get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")} \
        == {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}

    # A rolling update, sampled by a watch: with maxSurge 1 and maxUnavailable 0, never fewer than 3 ready.
    sampler = ReadySampler(client, ns, floor=3)
    try:
        kubectl.run("set", "image", "deployment/web", f"busybox={SECOND}", "-n", ns)
        kubectl.run("rollout", "status", "deployment/web", "-n", ns, f"--timeout={ROLLOUT_TIMEOUT}", timeout=120)
        wait_for(lambda: running(client, ns, 3, SECOND), 30, "3 pods of the new template")
    finally:
        sampler.close()
    assert SECOND in sampler.ready_images and FIRST in sampler.ready_images, sampler.ready_images
    assert sampler.lowest is not None and sampler.lowest >= 3, f"ready pods fell to {sampler.lowest}"

    history = kubectl.run("rollout", "history", "deployment/web", "-n", ns).stdout
    revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert revisions == ["1", "2"], history

    kubectl.run("rollout", "undo", "deployment/web", "-n", ns)
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, f"--timeout={ROLLOUT_TIMEOUT}", timeout=120)
    wait_for(lambda: running(client, ns, 3, FIRST), 30, "3 pods of the first template again")
    assert client.get(f"{deployments}/web")["spec"]["template"]["spec"]["containers"][0]["image"] == FIRST

    # Paused: a template change makes no new ReplicaSet until resumed.
    kubectl.run("rollout", "pause", "deployment/web", "-n", ns)
    kubectl.run("set", "image", "deployment/web", f"busybox={SECOND}", "-n", ns)
    wait_for(lambda: any(c.get("reason") == "DeploymentPaused"
                         for c in client.get(f"{deployments}/web")["status"].get("conditions", [])),
             20, "the Progressing condition to say DeploymentPaused")
    def observed() -> bool:
        d = client.get(f"{deployments}/web")
        return int(d["status"].get("observedGeneration") or 0) >= d["metadata"]["generation"]
    wait_for(observed, 20, "the paused template change to be observed")
    replica_sets = client.list(f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"]
    rs_before = {rs["metadata"]["name"] for rs in replica_sets}
    assert all(rs["spec"]["replicas"] == 0 for rs in replica_sets
               if rs["spec"]["template"]["spec"]["containers"][0]["image"] == SECOND)
    assert running(client, ns, 3, FIRST)
    kubectl.run("rollout", "resume", "deployment/web", "-n", ns)
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, f"--timeout={ROLLOUT_TIMEOUT}", timeout=120)
    wait_for(lambda: running(client, ns, 3, SECOND), 30, "3 pods of the resumed template")
    rs_after = {rs["metadata"]["name"] for rs in client.list(f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"]}
    assert rs_after == rs_before  # the second template's ReplicaSet came back into use, none was added

    kubectl.run("scale", "deployment/web", "--replicas=0", "-n", ns)
    wait_for(lambda: pods(client, ns) == [], 30, "every pod gone at 0 replicas")
    kubectl.run("scale", "deployment/web", "--replicas=2", "-n", ns)
    wait_for(lambda: running(client, ns, 2), 60, "2 pods Running again")

    kubectl.run("rollout", "restart", "deployment/web", "-n", ns)
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, f"--timeout={ROLLOUT_TIMEOUT}", timeout=120)
    wait_for(lambda: running(client, ns, 2) and all(
        "kubectl.kubernetes.io/restartedAt" in (p["metadata"].get("annotations") or {}) for p in pods(client, ns)),
        30, "2 restarted pods")
    d = client.get(f"{deployments}/web")
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "NewReplicaSetAvailable", progressing
    events = [e["message"] for e in client.list(f"/api/v1/namespaces/{ns}/events")["items"]
              if e.get("reason") == "ScalingReplicaSet"]
    assert any(m.startswith("Scaled up replica set web-") and m.endswith("from 0 to 3") for m in events), events
    assert any(m.startswith("Scaled down replica set web-") for m in events), events
