"""The CronJob controller on the shared `up --nodes 3`, through the real kubectl 1.33:
`kubectl create cronjob` every minute, its first run, the missed-schedule rule, suspend, the history limit and
`kubectl create job --from=cronjob/…`, `kubectl get cronjobs`; `kubectl create job` + `kubectl wait`.

Why the test does not wait for two real minutes: after creating the CronJob it writes a
`status.lastScheduleTime` three hours in the past through `/status`, exactly the state of a controller that
was down for three hours. Upstream's rule (cronjob_controllerv2 mostRecentScheduleTime) then starts only the
most recent missed minute, at once, and records TooManyMissedTimes (180 > 100 missed) instead of a storm
of 180 Jobs — so the first run is asserted within seconds without any knob. The history limit is proved
with the Jobs `kubectl create job --from=cronjob/…` makes (owned by the CronJob, as upstream's kubectl
does): with successfulJobsHistoryLimit 1 only the newest finished one stays. Successive real minutes and
every policy are covered by tests/unit/controllers/test_cronjob_*.py on a fake clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from control.api.batch import CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION
from control.apimachinery.meta import format_timestamp
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


def complete(job: dict[str, Any]) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True" for c in job.get("status", {}).get("conditions", ()))


def test_cronjob_runs_the_latest_missed_time_and_keeps_history(workload_cluster: RunningCluster,
                                                               cluster_namespace: str, kubectl: Kubectl) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    jobs_path = f"/apis/batch/v1/namespaces/{ns}/jobs"
    cj_path = f"/apis/batch/v1/namespaces/{ns}/cronjobs/tick"
    kubectl.run("create", "cronjob", "tick", "-n", ns, f"--image={IMAGE}", "--schedule=* * * * *", "--", "true")
    client.patch(cj_path, {"spec": {"successfulJobsHistoryLimit": 1}})
    cronjob = client.get(cj_path)
    three_hours_ago = datetime.now(UTC) - timedelta(hours=3)
    client.update(f"{cj_path}/status", {**cronjob, "status": {"lastScheduleTime": format_timestamp(three_hours_ago)}})

    def scheduled() -> list[dict[str, Any]]:
        return [j for j in client.list(jobs_path)["items"]
                if CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION in j["metadata"].get("annotations", {})]

    wait_for(lambda: scheduled(), 20, "the most recent missed minute started")
    # One run for the newest missed minute, not one per missed minute; a minute boundary between the
    # create and the status write (or before the suspend below) may add the next minute's own run.
    runs = sorted(scheduled(), key=lambda j: j["metadata"]["name"])
    minute = int(datetime.now(UTC).timestamp()) // 60
    assert 1 <= len(runs) <= 2, [j["metadata"]["name"] for j in runs]
    first = runs[0]
    assert first["metadata"]["name"] in (f"tick-{minute}", f"tick-{minute - 1}", f"tick-{minute - 2}")
    assert first["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    # No more scheduled runs from here on: a minute boundary during the test must not add a Job. The
    # history limit still applies to a suspended CronJob, as upstream's cleanupFinishedJobs.
    kubectl.run("patch", "cronjob", "tick", "-n", ns, "-p", '{"spec":{"suspend":true}}')
    wait_for(lambda: any(e["reason"] == "TooManyMissedTimes" for e in client.list(
        f"/api/v1/namespaces/{ns}/events")["items"]), 10, "the TooManyMissedTimes event")
    events = client.list(f"/api/v1/namespaces/{ns}/events")["items"]
    assert any(e["reason"] == "SuccessfulCreate" and e["message"] == f"Created job {first['metadata']['name']}"
               for e in events)
    wait_for(lambda: complete(client.get(f"{jobs_path}/{first['metadata']['name']}")), 30, "the run completed")
    # Manual runs from the template: owned by the CronJob, so its history limit counts them.
    for name in ("manual-a", "manual-b"):
        kubectl.run("create", "job", name, "-n", ns, "--from=cronjob/tick")
        kubectl.run("wait", "-n", ns, "--for=condition=complete", f"job/{name}", "--timeout=60s", timeout=70)
    manual = client.get(f"{jobs_path}/manual-b")
    assert manual["metadata"]["ownerReferences"][0]["name"] == "tick"

    def left() -> list[str]:
        return sorted(j["metadata"]["name"] for j in client.list(jobs_path)["items"]
                      if not j["metadata"].get("deletionTimestamp"))

    wait_for(lambda: left() == ["manual-b"], 30, f"only the newest finished job kept, have {left()}")
    status = client.get(cj_path)["status"]
    assert not status.get("active") and status["lastSuccessfulTime"]
    table = kubectl.run("get", "cronjobs", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert table[1].split()[:9] == ["tick", "*", "*", "*", "*", "*", "<none>", "True", "0"]


def test_kubectl_create_job_and_wait(workload_cluster: RunningCluster, cluster_namespace: str,
                                     kubectl: Kubectl) -> None:
    ns = cluster_namespace
    kubectl.run("create", "job", "hello", "-n", ns, f"--image={IMAGE}", "--", "sh", "-c", "echo hi")
    kubectl.run("wait", "-n", ns, "--for=condition=complete", "job/hello", "--timeout=60s", timeout=70)
    row = kubectl.run("get", "job", "hello", "-n", ns).stdout.splitlines()[1].split()
    assert row[:3] == ["hello", "Complete", "1/1"]
    assert kubectl.run("logs", "-n", ns, "job/hello").stdout.strip() == "hi"
