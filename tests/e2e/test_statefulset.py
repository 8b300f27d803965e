"""StatefulSets on the shared `up --nodes 3`: a set of 3 with a volumeClaimTemplate of
the default `local-path` class comes up web-0, web-1, web-2 — each created only once the one before is
Ready, as a watch of the namespace's pods shows —, each writes to its own claim, the data survives deleting
a pod (the new web-1 finds the old one's line), `kubectl rollout status` reports it, and a scale to 0 takes
the pods away 2, 1, 0, again one at a time.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(300)


def ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class PodLog:
    """Every pod event of the namespace, in order: (type, name, ready, being deleted)."""

    def __init__(self, client: RESTClient, ns: str) -> None:
        self.events: list[tuple[str, str, bool, bool]] = []
        self.stop = threading.Event()
        listed = client.list(f"/api/v1/namespaces/{ns}/pods")
        self.thread = threading.Thread(target=self._run, args=(client, ns, listed["metadata"]["resourceVersion"]),
                                       daemon=True)
        self.thread.start()

    def _run(self, client: RESTClient, ns: str, rv: str) -> None:
        for event in client.watch(f"/api/v1/namespaces/{ns}/pods", resource_version=rv, stop=self.stop):
            if event.type in ("ADDED", "MODIFIED", "DELETED"):
                pod = event.object
                self.events.append((event.type, pod["metadata"]["name"], ready(pod),
                                    bool(pod["metadata"].get("deletionTimestamp"))))

    def first(self, predicate: Any) -> int:
        return next(i for i, event in enumerate(self.events) if predicate(event))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def statefulset(replicas: int) -> dict[str, Any]:
    script = "echo $(hostname) >> /data/log && exec sleep 3600"
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": {
        "replicas": replicas, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                            "command": ["sh", "-c", script],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}}}]}}


def read(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().split()
    except OSError:
        return []


def test_statefulset_order_identity_storage_and_scale_down(workload_cluster: RunningCluster,
                                                           cluster_namespace: str, tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path))
    client.create(f"/api/v1/namespaces/{ns}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "web"}, "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    log = PodLog(client, ns)
    try:
        client.create(f"/apis/apps/v1/namespaces/{ns}/statefulsets", statefulset(3))
        rollout = kubectl.run("-n", ns, "rollout", "status", "sts/web", "--timeout=120s")
        assert "partitioned roll out complete: 3 new pods have been updated" in rollout.stdout, rollout.stdout
        sts = client.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web")
        assert sts["status"]["readyReplicas"] == 3 and sts["status"]["currentReplicas"] == 3
        assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
        for previous, name in (("web-0", "web-1"), ("web-1", "web-2")):
            assert log.first(lambda e, n=previous: e[1] == n and e[2]) < log.first(lambda e, n=name: e[1] == n), \
                f"{name} came before {previous} was Ready: {log.events}"

        directories = {}
        for i in range(3):
            name = f"web-{i}"
            pod = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
            assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "web"
            assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == name
            assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
            claim = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data-web-{i}")
            assert claim["status"]["phase"] == "Bound"
            volume = client.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
            directories[name] = volume["spec"]["hostPath"]["path"]
            wait_for(lambda n=name: read(os.path.join(directories[n], "log")) == [n], 10, f"{name}'s own line")

        old_uid = client.get(f"/api/v1/namespaces/{ns}/pods/web-1")["metadata"]["uid"]
        client.delete(f"/api/v1/namespaces/{ns}/pods/web-1")

        def replaced() -> bool:
            pod = client.get(f"/api/v1/namespaces/{ns}/pods/web-1")
            return pod["metadata"]["uid"] != old_uid and ready(pod)
        wait_for(replaced, 60, "a new, Ready web-1")
        wait_for(lambda: read(os.path.join(directories["web-1"], "log")) == ["web-1", "web-1"], 10,
                 "the new web-1 appending to the old one's data")

        mark = len(log.events)
        client.patch(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web", {"spec": {"replicas": 0}})
        wait_for(lambda: not client.list(f"/api/v1/namespaces/{ns}/pods")["items"], 90, "every pod gone")
        later = log.events[mark:]
        deleting = [name for i, (kind, name, _, doomed) in enumerate(later)
                    if doomed and not any(e[1] == name and e[3] for e in later[:i])]
        assert deleting == ["web-2", "web-1", "web-0"], later
        for name in ("web-2", "web-1"):  # the next one is asked to go only once this one is gone
            gone = next(i for i, e in enumerate(later) if e[0] == "DELETED" and e[1] == name)
            following = "web-1" if name == "web-2" else "web-0"
            assert gone < next(i for i, e in enumerate(later) if e[1] == following and e[3]), later
        assert len(client.list(f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]) == 3  # Retain
    finally:
        log.close()
