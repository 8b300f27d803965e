"""A StatefulSet's pods, claims and rounds (control/controllers/statefulset/pods.py): identity and storage
of a new pod, claim ownerReferences per retention policy, and the table of one round's actions — ordered
creation, waiting on unready pods, Parallel, scale down from the highest ordinal, partitioned and
maxUnavailable rolling updates, OnDelete."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from control.controllers.statefulset.pods import (
    claim_owner_refs,
    identity_matches,
    new_claim,
    new_pod,
    plan_round,
    revision_data,
    statefulset_status,
    storage_matches,
    template_of_revision,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
CLAIM = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                "resources": {"requests": {"storage": "1Gi"}}}}


def sts(replicas: int = 3, *, policy: str = "OrderedReady", strategy: dict | None = None,
        retention: dict | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "serviceName": "web", "podManagementPolicy": policy,
                            "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE,
                            "volumeClaimTemplates": [CLAIM],
                            "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}
    if retention:
        spec["persistentVolumeClaimRetentionPolicy"] = retention
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "set-uid", "generation": 2}, "spec": spec}


def pod(ordinal: int, state: str = "ready", revision: str = "new", set_: dict | None = None) -> dict[str, Any]:
    made = new_pod(set_ or sts(), TEMPLATE, revision, ordinal)
    made["metadata"]["uid"] = f"pod-{ordinal}"
    phase = {"ready": "Running", "unready": "Running", "pending": "Pending", "failed": "Failed",
             "terminating": "Running"}[state]
    made["status"] = {"phase": phase, "conditions": [{"type": "Ready",
                                                      "status": "True" if state == "ready" else "False"}]}
    if state == "terminating":
        made["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return made


def plan(set_: dict, pods: list, current_replicas: int = 0) -> list[tuple[str, int]]:
    round_ = plan_round(set_, pods, current=("old", TEMPLATE), update=("new", TEMPLATE),
                        current_replicas=current_replicas, now=NOW)
    return [(action.step.value, action.ordinal) for action in round_.actions]


def test_new_pod_identity_and_storage():
    made = new_pod(sts(), TEMPLATE, "web-abc", 1)
    meta, spec = made["metadata"], made["spec"]
    assert meta["name"] == "web-1" and spec["hostname"] == "web-1" and spec["subdomain"] == "web"
    assert meta["labels"] == {"app": "web", "controller-revision-hash": "web-abc",
                              "statefulset.kubernetes.io/pod-name": "web-1", "apps.kubernetes.io/pod-index": "1"}
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}}]
    assert meta["ownerReferences"][0]["controller"] is True and meta["ownerReferences"][0]["uid"] == "set-uid"
    assert identity_matches(sts(), made) and storage_matches(sts(), made)
    drifted = {**made, "metadata": {**meta, "labels": {"app": "web"}}}
    assert not identity_matches(sts(), drifted)
    claim = new_claim(sts(), CLAIM, 1)
    assert claim["metadata"]["name"] == "data-web-1" and claim["metadata"]["labels"] == {"app": "web"}
    assert template_of_revision({"data": revision_data(sts())}) == TEMPLATE


@pytest.mark.parametrize(("retention", "ordinal", "owners"), [
    pytest.param(None, 0, [], id="retain-retain"),
    pytest.param({"whenDeleted": "Delete", "whenScaled": "Retain"}, 0, ["StatefulSet"], id="deleted-delete"),
    pytest.param({"whenDeleted": "Retain", "whenScaled": "Delete"}, 0, [], id="scaled-delete-kept-replica"),
    pytest.param({"whenDeleted": "Retain", "whenScaled": "Delete"}, 5, ["Pod"], id="scaled-delete-condemned"),
    pytest.param({"whenDeleted": "Delete", "whenScaled": "Delete"}, 5, ["Pod"], id="both-condemned"),
    pytest.param({"whenDeleted": "Delete", "whenScaled": "Delete"}, 1, ["StatefulSet"], id="both-replica"),
])
def test_claim_owner_references(retention, ordinal, owners):
    set_ = sts(retention=retention)
    claim = new_claim(set_, CLAIM, ordinal)
    refs = claim_owner_refs(set_, claim, pod(ordinal), ordinal)
    assert [ref["kind"] for ref in refs] == owners


@pytest.mark.parametrize(("set_", "pods", "want"), [
    pytest.param(sts(), [], [("Create", 0)], id="first-pod-only"),
    pytest.param(sts(), [pod(0, "pending")], [], id="wait-for-0-ready"),
    pytest.param(sts(), [pod(0)], [("Create", 1)], id="then-1"),
    pytest.param(sts(), [pod(0), pod(1), pod(2)], [], id="steady"),
    pytest.param(sts(policy="Parallel"), [], [("Create", 0), ("Create", 1), ("Create", 2)], id="parallel-all"),
    pytest.param(sts(), [pod(0, "failed"), pod(1)], [("Delete", 0)], id="failed-pod-replaced"),
    pytest.param(sts(1), [pod(0), pod(1), pod(2)], [("Delete", 2)], id="scale-down-highest-first"),
    pytest.param(sts(1), [pod(0), pod(1), pod(2, "terminating")], [], id="scale-down-waits-for-termination"),
    pytest.param(sts(1, policy="Parallel"), [pod(0), pod(1), pod(2)], [("Delete", 2), ("Delete", 1)],
                 id="parallel-scale-down"),
    pytest.param(sts(), [pod(0, revision="old"), pod(1, revision="old"), pod(2, revision="old")], [("Delete", 2)],
                 id="rolling-update-from-the-top"),
    pytest.param(sts(), [pod(0, revision="old"), pod(1, revision="old"), pod(2, "unready")], [],
                 id="rolling-update-waits-for-ready"),
    pytest.param(sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
                 [pod(0, revision="old"), pod(1, revision="old"), pod(2)], [], id="partition-holds-below"),
    pytest.param(sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": 2}}),
                 [pod(0, revision="old"), pod(1, revision="old"), pod(2, revision="old")],
                 [("Delete", 2), ("Delete", 1)], id="max-unavailable-2-above-partition"),
    pytest.param(sts(strategy={"type": "OnDelete"}), [pod(0, revision="old"), pod(1, revision="old"),
                                                      pod(2, revision="old")], [], id="on-delete"),
])
def test_round(set_, pods, want):
    assert plan(set_, pods) == want


def test_partition_creates_below_it_from_the_current_revision():
    set_ = sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}, policy="Parallel")
    round_ = plan_round(set_, [], current=("old", TEMPLATE), update=("new", TEMPLATE), current_replicas=0, now=NOW)
    revisions = [a.pod["metadata"]["labels"]["controller-revision-hash"] for a in round_.actions]
    assert revisions == ["old", "old", "new"]


def test_status_counts_and_completed_rollout():
    pods = [pod(0, revision="old"), pod(1), pod(2, "unready")]
    status = statefulset_status(sts(), pods, current_revision="old", update_revision="new", collision_count=0, now=NOW)
    assert {k: status[k] for k in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                                   "availableReplicas", "observedGeneration", "currentRevision")} == {
        "replicas": 3, "readyReplicas": 2, "currentReplicas": 1, "updatedReplicas": 2, "availableReplicas": 2,
        "observedGeneration": 2, "currentRevision": "old"}
    done = statefulset_status(sts(), [pod(0), pod(1), pod(2)], current_revision="old", update_revision="new",
                              collision_count=0, now=NOW)
    assert done["currentRevision"] == "new" and done["currentReplicas"] == 3
