"""The horizontal pod autoscaler on the shared `up --nodes 3` with real kubelets: a
Deployment whose pods burn cpu gets an HPA from `kubectl autoscale deployment burn --cpu-percent=50 --min=1
--max=3` (kubectl 1.33, an autoscaling/v1 object stored as v2); the controller reads their usage from
metrics.k8s.io (the kubelets' stats) and scales the Deployment through `/scale` to 3; once the pods stop
burning it scales back to 1 after the scale-down stabilisation window, shortened to 5 s through the HPA's own
`behavior.scaleDown.stabilizationWindowSeconds`. The shared cluster syncs HPAs every 3 s
(`--horizontal-pod-autoscaler-sync-period`); metrics.k8s.io scrapes the kubelets at most every 15 s.

Each pod burns until /tmp/stop exists (a cpu limit of 200m keeps the machine usable): the test stops them
with `kubectl exec` rather than a rollout, so the same, long-Ready pods report the drop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(240)
BURN = "while [ ! -e /tmp/stop ]; do :; done; exec sleep 3600"


def deployment() -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burn"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "burn"}}, "template": {
                "metadata": {"labels": {"app": "burn"}},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                    "name": "burn", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                    "command": ["sh", "-c", BURN],
                    "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "200m"}}}]}}}}


def replicas(client: RESTClient, ns: str) -> int:
    return int(client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/burn")["spec"]["replicas"])


def running(client: RESTClient, ns: str) -> list[str]:
    pods = client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=burn"})["items"]
    return [p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def test_hpa_scales_a_cpu_burning_deployment_up_and_back_down(
        workload_cluster: RunningCluster, cluster_namespace: str, tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path))
    client.create(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment())
    wait_for(lambda: running(client, ns), 30, "the first burning pod")
    kubectl.run("autoscale", "deployment", "burn", "-n", ns, "--cpu-percent=50", "--min=1", "--max=3")
    hpa_path = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/burn"
    client.patch(hpa_path, {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 5}}}})

    wait_for(lambda: replicas(client, ns) == 3, 60, lambda: f"a scale-up to 3: {client.get(hpa_path).get('status')}")
    status = wait_for(lambda: (s := client.get(hpa_path)["status"]).get("currentReplicas") == 3
                      and s.get("currentMetrics") and s, 30, "the HPA's status after the scale-up")
    [metric] = status["currentMetrics"]
    assert metric["resource"]["name"] == "cpu" and metric["resource"]["current"]["averageUtilization"] > 50
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    assert conditions["AbleToScale"]["status"] == "True"
    row = kubectl.run("get", "hpa", "burn", "-n", ns).stdout.splitlines()[1].split()
    assert row[:2] == ["burn", "Deployment/burn"] and row[2] == "cpu:" and row[3].endswith("/50%"), row

    pods = wait_for(lambda: (names := running(client, ns)) and len(names) == 3 and names, 45, "three running pods")
    for name in pods:
        kubectl.run("exec", "-n", ns, name, "--", "touch", "/tmp/stop")
    wait_for(lambda: replicas(client, ns) == 1, 90, lambda: f"a scale-down to 1: {client.get(hpa_path).get('status')}")

    def rescales() -> list[str]:
        events = client.list(f"/api/v1/namespaces/{ns}/events",
                             params={"fieldSelector": "involvedObject.name=burn,reason=SuccessfulRescale"})["items"]
        return sorted(e["message"] for e in events if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler")

    # events are recorded asynchronously: the scale-down's may follow the Deployment's change
    messages = wait_for(lambda: (found := rescales()) and len(found) >= 2 and found, 10,
                        "both SuccessfulRescale events")
    assert any(m.startswith("New size: 3; reason: cpu resource utilization (percentage of request) above target")
               for m in messages), messages
    assert "New size: 1; reason: All metrics below target" in messages, messages
