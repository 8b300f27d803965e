"""DaemonSets on the shared `up --nodes 3` with real kubelets and the real kubectl 1.33:
exactly one pod per node, pinned by `metadata.name` node affinity and bound by the scheduler; a template
change rolls out and `kubectl rollout undo` goes back through the ControllerRevisions; a DaemonSet with a
nodeSelector follows a node becoming eligible (labelled) and ineligible again (label removed).

The shared cluster cannot grow a node, so "a node added later" is shown as a node that starts to match;
the controller reacts to a node add through the same eligibility check (unit tests cover the handler).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
HASH_LABEL = "controller-revision-hash"


def daemonset(name: str, *, node_selector: dict | None = None) -> dict:
    spec = {"terminationGracePeriodSeconds": 1, "containers": [{
        "name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def running_pods(client: RESTClient, ns: str, app: str) -> list[dict]:
    items = client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"})["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")
            and p.get("status", {}).get("phase") == "Running"
            and all(s.get("ready") for s in p["status"].get("containerStatuses") or [{}])]


def all_pods(client: RESTClient, ns: str, app: str) -> list[dict]:
    return client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"})["items"]


def pinned_node(pod: dict) -> str:
    required = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    [term] = required["nodeSelectorTerms"]
    [field] = term["matchFields"]
    assert (field["key"], field["operator"]) == ("metadata.name", "In")
    return field["values"][0]


def settled_on(client: RESTClient, ns: str, app: str, nodes: list[str], hash_: str | None = None) -> list[dict]:
    """The pods, once exactly one Ready pod (of `hash_`, if given) runs on each of `nodes` and no other exists."""
    pods = all_pods(client, ns, app)
    running = running_pods(client, ns, app)
    if len(pods) != len(nodes) or len(running) != len(nodes):
        return []
    if sorted(p["spec"].get("nodeName") for p in running) != sorted(nodes):
        return []
    if hash_ is not None and any(p["metadata"]["labels"].get(HASH_LABEL) != hash_ for p in running):
        return []
    return running


def revisions(client: RESTClient, ns: str) -> dict[int, dict]:
    items = client.list(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions")["items"]
    return {r["revision"]: r for r in items}


def test_one_pod_per_node_rolling_update_and_rollout_undo(
        workload_cluster: RunningCluster, cluster_namespace: str, tmp_path: Path) -> None:
    client, ns, names = workload_cluster.client, cluster_namespace, workload_cluster.names
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path))
    client.create(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("agent"))
    pods = wait_for(lambda: settled_on(client, ns, "agent", names), 45, "one Ready pod on each node")
    for pod in pods:
        assert pinned_node(pod) == pod["spec"]["nodeName"]  # pinned by affinity, bound by the scheduler
        assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"} in \
            pod["spec"]["tolerations"]
    assert "successfully rolled out" in kubectl.run("rollout", "status", "ds/agent", "-n", ns, "--timeout=30s").stdout
    status = wait_for(lambda: (s := client.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/agent")["status"])
                      .get("numberAvailable") == 3 and s, 10, "the status counting every pod")
    assert {k: status.get(k) for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                       "numberAvailable", "updatedNumberScheduled", "numberMisscheduled")} == {
        "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3, "numberAvailable": 3,
        "updatedNumberScheduled": 3, "numberMisscheduled": 0}
    row = kubectl.run("get", "ds", "agent", "-n", ns).stdout.splitlines()[1].split()
    assert row[:6] == ["agent", "3", "3", "3", "3", "3"], row
    first_hash = revisions(client, ns)[1]["metadata"]["labels"][HASH_LABEL]

    kubectl.run("set", "env", "ds/agent", "-n", ns, "ROLLOUT=two")
    kubectl.run("rollout", "status", "ds/agent", "-n", ns, "--timeout=60s", timeout=90)
    second_hash = revisions(client, ns)[2]["metadata"]["labels"][HASH_LABEL]
    pods = wait_for(lambda: settled_on(client, ns, "agent", names, second_hash), 30, "the second revision everywhere")
    assert all(c.get("env") == [{"name": "ROLLOUT", "value": "two"}] for p in pods for c in p["spec"]["containers"])
    history = kubectl.run("rollout", "history", "ds/agent", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"], history

    assert "rolled back" in kubectl.run("rollout", "undo", "ds/agent", "-n", ns).stdout
    kubectl.run("rollout", "status", "ds/agent", "-n", ns, "--timeout=60s", timeout=90)
    pods = wait_for(lambda: settled_on(client, ns, "agent", names, first_hash), 30, "the first revision back")
    assert all(not c.get("env") for p in pods for c in p["spec"]["containers"])
    numbers = {number: r["metadata"]["labels"][HASH_LABEL] for number, r in revisions(client, ns).items()}
    assert numbers == {2: second_hash, 3: first_hash}  # revision 1 came back as revision 3
    kubectl.run("get", "controllerrevisions", "-n", ns)


def test_follows_a_node_becoming_eligible(
        workload_cluster: RunningCluster, cluster_namespace: str, cleanup: Callable) -> None:
    client, ns, names = workload_cluster.client, cluster_namespace, workload_cluster.names
    label = f"sktest-ds-{ns}"
    client.create(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("edge", node_selector={label: "yes"}))
    wait_for(lambda: client.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/edge").get("status", {})
             .get("observedGeneration") == 1, 20, "the DaemonSet synced")
    assert all_pods(client, ns, "edge") == []
    node = names[1]
    cleanup(lambda: client.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: None}}}))
    client.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: "yes"}}})
    wait_for(lambda: settled_on(client, ns, "edge", [node]), 30, f"a pod on {node} once it is labelled")
    # The status follows the pod's Ready condition by one more sync of the controller.
    wait_for(lambda: (lambda st: (st.get("desiredNumberScheduled"), st.get("numberReady")) == (1, 1))(
        client.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/edge").get("status", {})),
        10, "desiredNumberScheduled 1 and numberReady 1")
    client.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: None}}})
    wait_for(lambda: all_pods(client, ns, "edge") == [], 30, f"the pod gone from {node} once it is unlabelled")
    wait_for(lambda: client.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/edge")["status"]
             .get("desiredNumberScheduled") == 0, 10, "desiredNumberScheduled 0")
