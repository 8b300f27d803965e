"""JobController (control/controllers/job/controller.py) against the shared fake API server with real informers: pods
created up to parallelism, every finished pod counted once through uncountedTerminatedPods and the tracking
finalizer, backoffLimit with the failed-pod back-off on a fake clock, the pod failure policy, Indexed
jobs, suspend/resume, and the two-step terminal conditions. Workers are not run: the test syncs the key
itself once the informers caught up, and plays the kubelet by writing pod phases."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.api.batch import JOB_COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER, generate_job_selector
from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.job.controller import JobController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

PODS = resource_path("v1", "pods", namespace="ns")
JOBS = resource_path("batch/v1", "jobs", namespace="ns")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = JobController(self.api.client("job"), self.factory, clock=self.clock, backoff_base=10.0)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    def create_job(self, name: str = "pi", *, restart: str = "Never", **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns"}, "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "suspend": False, "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"metadata": {}, "spec": {"restartPolicy": restart,
                                                  "containers": [{"name": "main", "image": "busybox"}]}}}}
        body["spec"].update(spec)
        created = self.client.create(JOBS, body)
        generate_job_selector(created, created["metadata"]["uid"])  # what the real server's strategy does
        return self.client.update(f"{JOBS}/{name}", created)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in (("v1", "pods"), ("batch/v1", "jobs")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def sync(self, name: str = "pi") -> dict[str, Any]:
        self.settle()
        assert wait_until(lambda: self.controller.expectations.satisfied_expectations(f"ns/{name}"))
        self.controller.sync(f"ns/{name}")
        self.settle()
        return self.client.get(f"{JOBS}/{name}")

    def pods(self) -> list[dict[str, Any]]:
        return self.client.list(PODS)["items"]

    def finish(self, pod: dict[str, Any], phase: str, *, code: int = 0, at: str = "2024-01-01T00:20:00Z",
               conditions: list[dict[str, Any]] | None = None) -> None:
        path = f"{PODS}/{pod['metadata']['name']}"
        fresh = self.client.get(path)
        fresh["status"] = {"phase": phase, "conditions": conditions or [], "containerStatuses": [
            {"name": "main", "restartCount": 0,
             "state": {"terminated": {"exitCode": code, "finishedAt": at}}}]}
        self.client.update(f"{path}/status", fresh)

    def events(self) -> list[tuple[str, str]]:
        self.controller.recorder.flush(5)
        items = self.client.list(resource_path("v1", "events", namespace="ns"))["items"]
        return sorted((e["reason"], e["message"]) for e in items)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        h.close()


def conditions(job: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in job["status"].get("conditions") or ()}


def test_completions_and_parallelism_count_each_pod_once_and_finish(harness):
    harness.create_job(completions=3, parallelism=2)
    job = harness.sync()
    pods = harness.pods()
    assert len(pods) == 2 and job["status"]["active"] == 2 and job["status"]["startTime"]
    for pod in pods:
        assert pod["metadata"]["finalizers"] == [JOB_TRACKING_FINALIZER]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "pi"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    harness.finish(pods[0], "Succeeded")
    job = harness.sync()
    assert job["status"]["succeeded"] == 1 and job["status"]["uncountedTerminatedPods"] == {}
    assert not harness.client.get(f"{PODS}/{pods[0]['metadata']['name']}")["metadata"].get("finalizers")
    active = [p for p in harness.pods() if (p.get("status") or {}).get("phase") != "Succeeded"]
    assert len(active) == 2  # one replacement: 3 - 1 succeeded, at most 2 at once
    job = harness.sync()  # nothing new: nothing counted twice
    assert job["status"]["succeeded"] == 1 and len(harness.pods()) == 3
    for pod in active:
        harness.finish(pod, "Succeeded")
    job = harness.sync()
    assert job["status"]["succeeded"] == 3 and job["status"]["active"] == 0
    assert conditions(job) == {
        "SuccessCriteriaMet": ("True", "CompletionsReached", "Reached expected number of succeeded pods"),
        "Complete": ("True", "CompletionsReached", "Reached expected number of succeeded pods")}
    assert job["status"]["completionTime"]
    assert len(harness.pods()) == 3
    assert ("Completed", "Job completed") in harness.events()


def test_backoff_limit_with_exponential_back_off(harness):
    harness.create_job(backoffLimit=1)
    harness.sync()
    [first] = harness.pods()
    harness.finish(first, "Failed", code=1, at="2024-01-01T00:16:40Z")  # the fake clock's now
    job = harness.sync()
    assert job["status"]["failed"] == 1 and len(harness.pods()) == 1  # back-off: no replacement yet
    harness.clock.step(9)
    harness.sync()
    assert len(harness.pods()) == 1
    harness.clock.step(2)
    harness.sync()
    pods = harness.pods()
    assert len(pods) == 2
    second = next(p for p in pods if p["metadata"]["name"] != first["metadata"]["name"])
    harness.finish(second, "Failed", code=1, at="2024-01-01T00:16:51Z")
    job = harness.sync()
    assert job["status"]["failed"] == 2
    assert conditions(job)["Failed"] == ("True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert conditions(job)["FailureTarget"][1] == "BackoffLimitExceeded"
    assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in harness.events()
    assert len(harness.pods()) == 2


def test_pod_failure_policy_fail_job_and_ignore(harness):
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    harness.create_job(podFailurePolicy=policy, podReplacementPolicy="Failed", backoffLimit=0)
    harness.sync()
    [first] = harness.pods()
    harness.finish(first, "Failed", code=1, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    job = harness.sync()
    assert job["status"].get("failed", 0) == 0 and "FailureTarget" not in conditions(job)
    [second] = [p for p in harness.pods() if p["metadata"]["name"] != first["metadata"]["name"]]
    harness.finish(second, "Failed", code=42)
    job = harness.sync()
    status, reason, message = conditions(job)["Failed"]
    assert (status, reason) == ("True", "PodFailurePolicy")
    assert message == (f"Container main for pod ns/{second['metadata']['name']} failed with exit code 42 "
                       "matching FailJob rule at index 0")


def test_indexed_job_creates_each_index_once(harness):
    harness.create_job(completions=3, parallelism=3, completionMode="Indexed")
    harness.sync()
    pods = harness.pods()
    indexes = sorted(int(p["metadata"]["annotations"][JOB_COMPLETION_INDEX_ANNOTATION]) for p in pods)
    assert indexes == [0, 1, 2]
    for pod in pods:
        index = pod["metadata"]["annotations"][JOB_COMPLETION_INDEX_ANNOTATION]
        assert pod["metadata"]["labels"][JOB_COMPLETION_INDEX_ANNOTATION] == index
        assert pod["spec"]["hostname"] == f"pi-{index}"
        assert pod["metadata"]["generateName"] == f"pi-{index}-"
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}}} in \
            pod["spec"]["containers"][0]["env"]
    by_index = {p["metadata"]["annotations"][JOB_COMPLETION_INDEX_ANNOTATION]: p for p in pods}
    harness.finish(by_index["0"], "Succeeded")
    harness.finish(by_index["2"], "Succeeded")
    harness.finish(by_index["1"], "Failed", code=1)
    job = harness.sync()
    assert job["status"]["completedIndexes"] == "0,2" and job["status"]["failed"] == 1
    harness.clock.step(11)
    harness.sync()
    fresh = [p for p in harness.pods() if not (p.get("status") or {}).get("phase")]
    assert [p["metadata"]["annotations"][JOB_COMPLETION_INDEX_ANNOTATION] for p in fresh] == ["1"]
    harness.finish(fresh[0], "Succeeded")
    job = harness.sync()
    assert job["status"]["completedIndexes"] == "0-2" and conditions(job)["Complete"][0] == "True"


def test_suspend_deletes_active_pods_without_counting_and_resume_restarts(harness):
    harness.create_job(completions=2, parallelism=2)
    harness.sync()
    assert len(harness.pods()) == 2
    job = harness.client.get(f"{JOBS}/pi")
    job["spec"]["suspend"] = True
    harness.client.update(f"{JOBS}/pi", job)
    job = harness.sync()
    assert conditions(job)["Suspended"] == ("True", "JobSuspended", "Job suspended")
    assert all(p["metadata"].get("deletionTimestamp") or p["metadata"]["name"] not in () for p in harness.pods())
    job = harness.sync()
    assert job["status"].get("failed", 0) == 0 and job["status"]["active"] == 0
    job = harness.client.get(f"{JOBS}/pi")
    job["spec"]["suspend"] = False
    harness.client.update(f"{JOBS}/pi", job)
    job = harness.sync()
    assert conditions(job)["Suspended"] == ("False", "JobResumed", "Job resumed")
    assert job["status"]["active"] == 2
    assert ("Resumed", "Job resumed") in harness.events() and ("Suspended", "Job suspended") in harness.events()


def test_active_deadline_fails_the_job(harness):
    harness.create_job(activeDeadlineSeconds=30)
    harness.sync()
    harness.clock.step(31)
    job = harness.sync()
    assert conditions(job)["FailureTarget"][1:] == ("DeadlineExceeded", "Job was active longer than specified deadline")
    assert all(p["metadata"].get("deletionTimestamp") for p in harness.pods())


def test_orphan_pod_loses_its_finalizer(harness):
    harness.create_job()
    harness.sync()
    [pod] = harness.pods()
    harness.client.delete(f"{JOBS}/pi", propagation_policy="Background")
    harness.settle()
    harness.controller.sync(f"orphan-pod:ns/{pod['metadata']['name']}")
    assert not harness.client.get(f"{PODS}/{pod['metadata']['name']}")["metadata"].get("finalizers")
