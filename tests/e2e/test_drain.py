"""`kubectl drain` through pods/eviction and a PodDisruptionBudget on the shared `up --nodes 3`,
with the real kubectl 1.33 (protobuf bodies, policy/v1) and 1.20 (policy/v1beta1 client).

Three pods of a PDB with minAvailable=2 run on one node. `kubectl drain` (limited by --pod-selector to this
test's pods, so other tests' pods on that node are left alone) cordons the node and evicts: one pod goes
(the budget allowed one disruption), the others are refused with upstream's 429 message, which kubectl
retries until its --timeout. Once two more pods of the budget run on another node (what a ReplicaSet
would do; the pods here are bare, hence --force), the disruption controller allows two disruptions and a
second drain evicts the rest and reports the node drained. The node is uncordoned at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from control.client.errors import NotFound
from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(240)
LABEL = "sktest-drain"
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def sleeper(name: str, node: str, ns: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {LABEL: ns}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                "command": ["sleep", "3600"]}]}}


def pdb_status(client: RESTClient, ns: str) -> dict:
    return client.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/budget").get("status") or {}


def present(client: RESTClient, ns: str, names: list[str]) -> list[str]:
    """The pods of `names` that still exist (terminating ones included)."""
    found = []
    for name in names:
        try:
            client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
            found.append(name)
        except NotFound:
            pass
    return found


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_drain_evicts_through_the_pod_disruption_budget(
        workload_cluster: RunningCluster, cluster_namespace: str, cleanup: Callable, tmp_path: Path,
        version: str) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    node, other = workload_cluster.names[1], workload_cluster.names[2]
    kubectl = Kubectl(KUBECTLS[version], workload_cluster.kubeconfig, str(tmp_path))
    pods = f"/api/v1/namespaces/{ns}/pods"
    drained = ["a", "b", "c"]
    for name in drained:
        client.create(pods, sleeper(name, node, ns))
    for name in drained:
        wait_running(client, f"{pods}/{name}")
    if version == "1.20":  # its `create pdb` writes policy/v1beta1, which is not served
        client.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "budget"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {LABEL: ns}}}})
    else:
        kubectl.run("create", "poddisruptionbudget", "budget", "-n", ns, f"--selector={LABEL}={ns}",
                    "--min-available=2")
    wait_for(lambda: pdb_status(client, ns).get("disruptionsAllowed") == 1, 30, "the PDB to allow one disruption")
    assert "1" in kubectl.run("get", "pdb", "budget", "-n", ns).stdout.splitlines()[1].split()

    cleanup(lambda: kubectl.run("uncordon", node))
    drain = ("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
             f"--pod-selector={LABEL}={ns}")
    first = kubectl.run(*drain, "--timeout=20s", check=False, timeout=90)
    assert first.returncode != 0, first.stdout
    assert VIOLATION in first.stderr, first.stderr
    assert client.get(f"/api/v1/nodes/{node}")["spec"].get("unschedulable") is True
    wait_for(lambda: len(present(client, ns, drained)) == 2, 30, "one of the pods to be evicted")
    status = pdb_status(client, ns)
    assert (status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]) == (2, 2, 0)

    for name in ("d", "e"):  # replacements elsewhere, as a ReplicaSet would create them
        client.create(pods, sleeper(name, other, ns))
        wait_running(client, f"{pods}/{name}")
    wait_for(lambda: pdb_status(client, ns).get("disruptionsAllowed") == 2, 30, "the PDB to allow two disruptions")
    second = kubectl.run(*drain, "--timeout=60s", timeout=120)
    done = "evicted" if version == "1.20" else "drained"  # kubectl 1.20's last line says "evicted"
    assert f"node/{node} {done}" in second.stdout, second.stdout
    assert present(client, ns, drained) == []
    assert sorted(present(client, ns, ["d", "e"])) == ["d", "e"]
