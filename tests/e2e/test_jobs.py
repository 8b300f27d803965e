"""The Job controller on the shared `up --nodes 3` with real kubelets: a Job of
completions 5 and parallelism 2 finishes exactly 5 successful pods and never has more than 2 running at
once (proved by watching its pods from the start); a failing Job stops at its backoffLimit after the
failed-pod back-off (10 s, upstream's base: backoffLimit 1 keeps the test short without a knob); an
Indexed Job's pods see JOB_COMPLETION_INDEX and the hostname `<job>-<index>`, and the Job goes with its
pods `ttlSecondsAfterFinished` after it completed; a FailJob rule of the pod failure policy,
activeDeadlineSeconds and suspend/resume. The real kubectl 1.33 creates a Job, waits for
`condition=complete` and prints the Job columns.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from control.apimachinery.meta import parse_timestamp
from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
IMAGE = "slimkube/busybox:1"


@pytest.fixture
def kubectl(workload_cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    return Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(cache))


def job(name: str, command: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        **spec, "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
            {"name": "main", "image": IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", command]}]}}}}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                 if c["type"] == kind and c["status"] == "True"), None)


class PodWatch:
    """Every pod event of a namespace from before the Job exists: the most pods running at once."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        listed = client.list(self.path)
        self.stop = threading.Event()
        self.running: set[str] = set()
        self.most = 0
        self.phases: dict[str, str] = {}
        self.thread = threading.Thread(target=self._run, args=(client, listed["metadata"]["resourceVersion"]),
                                       daemon=True)
        self.thread.start()

    def _run(self, client: RESTClient, rv: str) -> None:
        for event in client.watch(self.path, resource_version=rv, stop=self.stop):
            pod = event.object
            name = pod["metadata"]["name"]
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            self.phases[name] = phase
            if event.type == "DELETED" or phase in ("Succeeded", "Failed"):
                self.running.discard(name)
            else:
                self.running.add(name)  # created, not finished: it counts until it finishes
            self.most = max(self.most, len(self.running))

    def close(self) -> None:
        self.stop.set()


def test_completions_five_parallelism_two(workload_cluster: RunningCluster, cluster_namespace: str,
                                          kubectl: Kubectl) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    watch = PodWatch(client, ns)
    try:
        client.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job("five", "sleep 1", completions=5, parallelism=2))
        kubectl.run("wait", "-n", ns, "--for=condition=complete", "job/five", "--timeout=90s", timeout=100)
        done = client.get(f"/apis/batch/v1/namespaces/{ns}/jobs/five")
        wait_for(lambda: sum(p == "Succeeded" for p in watch.phases.values()) == 5, 10, "5 pods seen succeeded")
    finally:
        watch.close()
    assert done["status"]["succeeded"] == 5 and done["status"].get("failed", 0) == 0
    assert condition(done, "Complete")["reason"] == "CompletionsReached"
    assert done["status"]["completionTime"] and done["status"]["uncountedTerminatedPods"] == {}
    pods = client.list(f"/api/v1/namespaces/{ns}/pods")["items"]
    assert len(pods) == 5 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods)
    assert watch.most == 2, f"at most {watch.most} pods at once"
    table = kubectl.run("get", "jobs", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert table[1].split()[:3] == ["five", "Complete", "5/5"]


def test_failing_job_stops_at_backoff_limit(workload_cluster: RunningCluster, cluster_namespace: str,
                                            kubectl: Kubectl) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job("fails", "exit 3", backoffLimit=1))
    path = f"/apis/batch/v1/namespaces/{ns}/jobs/fails"
    wait_for(lambda: condition(client.get(path), "Failed") is not None, 60, "the job failed")
    failed = client.get(path)
    assert condition(failed, "Failed")["reason"] == "BackoffLimitExceeded"
    assert condition(failed, "Failed")["message"] == "Job has reached the specified backoff limit"
    assert failed["status"]["failed"] == 2 and failed["status"]["active"] == 0
    pods = client.list(f"/api/v1/namespaces/{ns}/pods")["items"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Failed" for p in pods)
    finished = sorted(p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] for p in pods)
    created = sorted(p["metadata"]["creationTimestamp"] for p in pods)
    assert (parse_timestamp(created[1]) - parse_timestamp(finished[0])).total_seconds() >= 9, "no back-off"
    assert "Failed" in kubectl.run("get", "jobs", "-n", ns, "fails").stdout


def test_indexed_job_pods_see_their_index(workload_cluster: RunningCluster, cluster_namespace: str) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    command = 'echo -n "$JOB_COMPLETION_INDEX $(hostname)" > /dev/termination-log'
    client.create(f"/apis/batch/v1/namespaces/{ns}/jobs",
                  job("idx", command, completions=3, parallelism=3, completionMode="Indexed",
                      ttlSecondsAfterFinished=8))
    path = f"/apis/batch/v1/namespaces/{ns}/jobs/idx"
    wait_for(lambda: condition(client.get(path), "Complete") is not None, 60, "the indexed job completed")
    assert client.get(path)["status"]["completedIndexes"] == "0-2"
    pods = client.list(f"/api/v1/namespaces/{ns}/pods")["items"]
    seen = sorted(p["status"]["containerStatuses"][0]["state"]["terminated"].get("message", "") for p in pods)
    assert seen == ["0 idx-0", "1 idx-1", "2 idx-2"]
    # ttlSecondsAfterFinished: the TTL-after-finished controller deletes the Job, and its pods go with it.
    wait_for(lambda: not client.list(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"], 30, "the job expired")
    wait_for(lambda: not client.list(f"/api/v1/namespaces/{ns}/pods")["items"], 30, "its pods deleted")


def test_failure_policy_deadline_and_suspend(workload_cluster: RunningCluster, cluster_namespace: str) -> None:
    """A FailJob rule on exit code 42 fails the Job at its first pod (backoffLimit 6 notwithstanding); an
    activeDeadlineSeconds of 2 fails a sleeping Job and deletes its pod; a Job created suspended runs no
    pod until resumed."""
    client, ns = workload_cluster.client, cluster_namespace
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                               "values": [42]}}]}
    client.create(jobs, job("policy", "exit 42", podFailurePolicy=policy))
    client.create(jobs, job("deadline", "sleep 60", activeDeadlineSeconds=2))
    client.create(jobs, job("later", "true", suspend=True))
    wait_for(lambda: condition(client.get(f"{jobs}/policy"), "Failed") is not None, 30, "the policy failed it")
    failed = condition(client.get(f"{jobs}/policy"), "Failed")
    assert failed["reason"] == "PodFailurePolicy"
    assert failed["message"].startswith("Container main for pod ")
    assert failed["message"].endswith("failed with exit code 42 matching FailJob rule at index 0")
    wait_for(lambda: condition(client.get(f"{jobs}/deadline"), "Failed") is not None, 30, "the deadline passed")
    assert condition(client.get(f"{jobs}/deadline"), "Failed")["reason"] == "DeadlineExceeded"
    pods = client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "job-name=deadline"})["items"]
    assert all(p["metadata"].get("deletionTimestamp") or p["status"]["phase"] == "Failed" for p in pods)
    later = client.get(f"{jobs}/later")
    assert condition(later, "Suspended")["reason"] == "JobSuspended"
    assert not client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "job-name=later"})["items"]
    client.patch(f"{jobs}/later", {"spec": {"suspend": False}})
    wait_for(lambda: condition(client.get(f"{jobs}/later"), "Complete") is not None, 30, "the resumed job ran")
    resumed = [c for c in client.get(f"{jobs}/later")["status"]["conditions"] if c["type"] == "Suspended"]
    assert [(c["status"], c["reason"]) for c in resumed] == [("False", "JobResumed")]
