"""control/controllers/deployment/util.py and deployment/status.py: fenceposts and their rounding, the
pod-template-hash, new/old ReplicaSets, revision annotations and history, cleanup selection, and the
status and conditions a sync computes (upstream deployment_util_test.go, progress_test.go, sync_test.go
shapes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.controllers.deployment import status as ds
from control.controllers.deployment import util
from control.controllers.shared import helpers

NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def deployment(replicas: int = 3, *, surge: Any = "25%", unavailable: Any = "25%", strategy: str = "RollingUpdate",
               generation: int = 1, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    strategy_obj: dict[str, Any] = {"type": strategy}
    if strategy == "RollingUpdate":
        strategy_obj["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "d-uid", "generation": generation},
            "spec": {"replicas": replicas, "strategy": strategy_obj, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}},
                     "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10, **spec},
            "status": status or {}}


def replica_set(name: str, replicas: int, *, revision: str | None = None, created: str = "2024-01-01T00:00:00Z",
                image: str = "busybox:1", status: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    ann = dict(annotations)
    if revision is not None:
        ann[util.REVISION_ANNOTATION] = revision
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", "creationTimestamp": created,
                         "annotations": ann, "generation": 1},
            "spec": {"replicas": replicas,
                     "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}},
            "status": status if status is not None else {"replicas": replicas, "observedGeneration": 1}}


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "expected"), [
    pytest.param("25%", "25%", 3, (1, 0), id="kubectl-defaults-3"),
    pytest.param("25%", "25%", 10, (3, 2), id="kubectl-defaults-10"),
    pytest.param(0, 0, 5, (0, 1), id="both-zero-means-one-unavailable"),
    pytest.param("0%", "0%", 5, (0, 1), id="both-zero-percent"),
    pytest.param(2, "50%", 5, (2, 2), id="int-and-percent"),
    pytest.param("1%", "99%", 1, (1, 0), id="surge-up-unavailable-down"),
])
def test_resolve_fenceposts(surge: Any, unavailable: Any, replicas: int, expected: tuple[int, int]) -> None:
    assert util.resolve_fenceposts(surge, unavailable, replicas) == expected


def test_max_surge_and_unavailable_by_strategy() -> None:
    assert (util.max_surge(deployment(4, surge=2, unavailable=9)), util.max_unavailable(deployment(4, unavailable=9))) \
        == (2, 4)  # unavailable never above replicas
    assert util.max_unavailable(deployment(0)) == 0
    recreate = deployment(4, strategy="Recreate")
    assert (util.max_surge(recreate), util.max_unavailable(recreate)) == (0, 0)
    with pytest.raises(ValueError):
        helpers.scaled_value("abc", 10, round_up=True)


def test_pod_template_hash() -> None:
    template = deployment()["spec"]["template"]
    first = helpers.compute_hash(template, None)
    assert set(first) <= set(helpers.SAFE_ALPHABET) and 1 <= len(first) <= 10
    with_label = {**template, "metadata": {"labels": {"app": "web", "pod-template-hash": "zzz"}}}
    assert helpers.compute_hash(with_label, None) == first  # the hash label itself is ignored
    assert helpers.compute_hash(template, 1) != first  # collisionCount changes it
    other = {**template, "spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}
    assert helpers.compute_hash(other, None) != first
    zero_noise = {**template, "spec": {**template["spec"], "nodeSelector": {}, "hostNetwork": False}}
    assert helpers.compute_hash(zero_noise, None) == first  # Go zero values are no difference
    assert helpers.safe_encode("0123456789") == "456789bcdf"


def test_new_and_old_replica_sets() -> None:
    d = deployment()
    current_older = replica_set("a", 1, created="2024-01-01T00:00:00Z")
    current_newer = replica_set("b", 1, created="2024-01-02T00:00:00Z")
    old = replica_set("c", 0, image="busybox:0")
    assert util.find_new_replica_set(d, [current_newer, old, current_older]) is current_older
    required, every = util.find_old_replica_sets(d, [current_newer, old, current_older])
    assert [util.name_of(rs) for rs in every] == ["b", "c"] and [util.name_of(rs) for rs in required] == ["b"]


def test_revisions_and_history() -> None:
    rss = [replica_set("a", 0, revision="1"), replica_set("b", 0, revision="4"), replica_set("c", 0, revision="x"),
           replica_set("d", 0, revision="3")]
    assert (util.max_revision(rss), util.last_revision(rss)) == (4, 3)
    d = deployment(annotations=None)
    d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2", util.REVISION_ANNOTATION: "9",
                                    util.LAST_APPLIED_CONFIG_ANNOTATION: "{}"}
    rs = replica_set("a", 1, revision="2")
    rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] = "1"
    assert util.set_new_replica_set_annotations(d, rs, "5", exists=True)
    annotations = rs["metadata"]["annotations"]
    assert annotations[util.REVISION_ANNOTATION] == "5"
    assert annotations[util.REVISION_HISTORY_ANNOTATION] == "1,2"  # rolled back to: its old revisions kept
    assert annotations["kubernetes.io/change-cause"] == "v2"
    assert util.LAST_APPLIED_CONFIG_ANNOTATION not in annotations
    assert util.DESIRED_REPLICAS_ANNOTATION not in annotations  # only a set being created gets them here
    assert not util.set_new_replica_set_annotations(d, rs, "5", exists=True)
    fresh: dict[str, Any] = {"metadata": {}}
    util.set_new_replica_set_annotations(deployment(4, surge=1), fresh, "1", exists=False)
    assert fresh["metadata"]["annotations"] == {util.REVISION_ANNOTATION: "1", util.DESIRED_REPLICAS_ANNOTATION: "4",
                                                util.MAX_REPLICAS_ANNOTATION: "5"}


def test_revision_history_is_bounded() -> None:
    rs = replica_set("a", 1, revision="7")
    rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] = "1,2,3"
    util.set_new_replica_set_annotations(deployment(), rs, "8", exists=True, max_history_chars=5)
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "2,3,7"  # exactly 5 characters
    rs["metadata"]["annotations"].update({util.REVISION_HISTORY_ANNOTATION: "1,2,3", util.REVISION_ANNOTATION: "7"})
    util.set_new_replica_set_annotations(deployment(), rs, "8", exists=True, max_history_chars=4)
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "3,7"


def test_rollback_annotations() -> None:
    d = deployment()
    d["metadata"]["annotations"] = {util.REVISION_ANNOTATION: "3", "kubernetes.io/change-cause": "now"}
    rs = replica_set("a", 0, revision="1")
    rs["metadata"]["annotations"]["kubernetes.io/change-cause"] = "then"
    util.set_deployment_annotations_to(d, rs)
    assert d["metadata"]["annotations"] == {util.REVISION_ANNOTATION: "3", "kubernetes.io/change-cause": "then"}


def test_select_cleanable() -> None:
    d = deployment(revisionHistoryLimit=1)
    rss = [replica_set("r1", 0, revision="1"), replica_set("r2", 0, revision="2"),
           replica_set("busy", 1, revision="0"), replica_set("r3", 0, revision="3")]
    lagging = replica_set("lag", 0, revision="0")
    lagging["metadata"]["generation"] = 2
    assert [util.name_of(rs) for rs in util.select_cleanable(d, [*rss, lagging])] == ["r1", "r2"]
    assert util.select_cleanable(deployment(revisionHistoryLimit=util.MAX_INT32), rss) == []


# -- status and conditions ----------------------------------------------------------------------------


def rs_status(replicas: int, ready: int, available: int) -> dict[str, Any]:
    return {"replicas": replicas, "readyReplicas": ready, "availableReplicas": available}


def test_calculate_status_and_availability() -> None:
    d = deployment(4, surge=1, unavailable=1, generation=3, status={"collisionCount": 2})
    new = replica_set("n", 2, status=rs_status(2, 1, 1))
    old = replica_set("o", 2, status=rs_status(2, 2, 2))
    status = ds.calculate_status(d, [old, new], new, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 3, "replicas": 4, "updatedReplicas": 2, "readyReplicas": 3, "availableReplicas": 3,
        "unavailableReplicas": 1, "collisionCount": 2}
    assert status["conditions"] == [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                     "message": "Deployment has minimum availability.",
                                     "lastUpdateTime": "2024-01-01T12:00:00Z",
                                     "lastTransitionTime": "2024-01-01T12:00:00Z"}]
    old["status"] = rs_status(2, 1, 1)
    later = {**d, "status": status}
    status2 = ds.calculate_status(later, [old, new], new, NOW + timedelta(minutes=1))
    available = helpers.status_condition(status2, "Available")
    assert available is not None and available["reason"] == "MinimumReplicasUnavailable"
    assert available["message"] == "Deployment does not have minimum availability."


def test_progressing_conditions() -> None:
    d = deployment(2, generation=1, status=rs_status(0, 0, 0))
    new = replica_set("web-abc", 2, status=rs_status(1, 1, 0))
    status = ds.rollout_status(d, [new], new, NOW)
    progressing = helpers.status_condition(status, "Progressing")
    assert progressing is not None
    assert (progressing["reason"], progressing["message"]) == ("ReplicaSetUpdated",
                                                               'ReplicaSet "web-abc" is progressing.')
    # No progress for longer than the deadline: timed out.
    stuck = {**d, "status": status}
    assert ds.requeue_after(stuck, status, NOW + timedelta(seconds=100)) == 500.0
    timed_out = ds.rollout_status(stuck, [new], new, NOW + timedelta(seconds=601))
    condition = helpers.status_condition(timed_out, "Progressing")
    assert condition is not None and (condition["status"], condition["reason"], condition["message"]) == (
        "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-abc" has timed out progressing.')
    # Complete: every replica updated and available.
    new["status"] = rs_status(2, 2, 2)
    done = ds.rollout_status(stuck, [new], new, NOW + timedelta(seconds=30))
    condition = helpers.status_condition(done, "Progressing")
    assert condition is not None and (condition["reason"], condition["message"]) == (
        "NewReplicaSetAvailable", 'ReplicaSet "web-abc" has successfully progressed.')
    assert ds.requeue_after({**d, "status": done}, done, NOW) is None


def test_paused_and_resumed_conditions() -> None:
    d = deployment(paused=True)
    status = ds.paused_condition(d, NOW)
    assert status is not None
    assert helpers.status_condition(status, "Progressing") == {
        "type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused", "message": "Deployment is paused",
        "lastUpdateTime": "2024-01-01T12:00:00Z", "lastTransitionTime": "2024-01-01T12:00:00Z"}
    assert ds.paused_condition({**d, "status": status}, NOW) is None
    resumed = ds.paused_condition({**deployment(), "status": status}, NOW)
    assert resumed is not None
    assert (helpers.status_condition(resumed, "Progressing") or {})["reason"] == "DeploymentResumed"


def test_replica_failure_moves_up() -> None:
    failure = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota",
               "lastTransitionTime": "2024-01-01T11:00:00Z"}
    new = replica_set("n", 1, status={**rs_status(0, 0, 0), "conditions": [failure]})
    status = ds.rollout_status(deployment(1), [new], new, NOW)
    assert (helpers.status_condition(status, "ReplicaFailure") or {})["reason"] == "FailedCreate"
