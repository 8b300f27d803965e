"""The rollout steps (control/controllers/deployment/rollout.py) against upstream's tables
(rolling_test.go TestDeploymentController_reconcileNewReplicaSet / reconcileOldReplicaSets,
sync_test.go TestScale, deployment_util_test.go TestNewRSNewReplicas / TestFindActiveOrLatest), and a
simulated rolling update that checks the invariants step by step for many shapes."""

from __future__ import annotations

import itertools

import pytest

from control.controllers.deployment.rollout import (
    RS,
    Deployment,
    Step,
    find_active_or_latest,
    is_saturated,
    is_scaling_event,
    new_rs_new_replicas,
    reconcile_new,
    reconcile_old,
    recreate_scale_down,
    scale,
)

OLD, MID, NEW = "2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z"


@pytest.mark.parametrize(("replicas", "surge", "old", "new", "expected"), [
    pytest.param(10, 0, 10, 0, None, id="no-surge-room"),
    pytest.param(10, 2, 10, 0, 2, id="surge-2"),
    pytest.param(10, 2, 5, 0, 7, id="old-shrunk-room-for-7"),
    pytest.param(10, 2, 10, 2, None, id="surge-used"),
    pytest.param(2, 0, 0, 3, 2, id="scale-down-new"),
    pytest.param(3, 1, 3, 0, 1, id="kubectl-defaults-3-replicas"),
])
def test_reconcile_new_replica_set(replicas: int, surge: int, old: int, new: int, expected: int | None) -> None:
    d = Deployment(replicas, max_surge=surge, max_unavailable=0 if surge else 1)
    new_rs, old_rs = RS("new", new, created=NEW), RS("old", old, old, created=OLD)
    step = reconcile_new(d, [old_rs, new_rs], new_rs)
    assert (step.replicas if step else None) == expected


@pytest.mark.parametrize(("replicas", "unavailable", "old", "new", "old_ready", "new_ready", "expected"), [
    pytest.param(10, 0, 10, 0, 10, 0, 10, id="no-unavailable-allowed"),
    pytest.param(10, 2, 10, 0, 10, 0, 8, id="two-may-go"),
    pytest.param(10, 2, 10, 0, 8, 0, 8, id="unhealthy-cleaned-first"),
    pytest.param(10, 2, 10, 0, 9, 0, 8, id="one-unhealthy-one-ready"),
    pytest.param(10, 2, 8, 2, 8, 0, 8, id="new-unavailable-blocks"),
    pytest.param(3, 0, 3, 1, 3, 1, 2, id="kubectl-defaults-new-one-available"),
    pytest.param(3, 0, 3, 1, 3, 0, 3, id="kubectl-defaults-new-one-not-yet"),
])
def test_reconcile_old_replica_sets(replicas: int, unavailable: int, old: int, new: int, old_ready: int,
                                    new_ready: int, expected: int) -> None:
    d = Deployment(replicas, max_surge=1, max_unavailable=unavailable)
    old_rs, new_rs = RS("old", old, old_ready, created=OLD), RS("new", new, new_ready, created=NEW)
    steps = reconcile_old(d, [old_rs, new_rs], [old_rs], new_rs)
    final = steps[-1].replicas if steps else old
    assert final == expected
    assert all(step.name == "old" for step in steps)


def test_reconcile_old_scales_the_oldest_first() -> None:
    d = Deployment(4, max_surge=0, max_unavailable=2)
    older, middle, new = RS("v1", 2, 2, created=OLD), RS("v2", 2, 2, created=MID), RS("v3", 0, created=NEW)
    assert reconcile_old(d, [older, middle, new], [middle, older], new) == [Step("v1", 0)]


def _rs(name: str, replicas: int, created: str, *, old_replicas: int, old_surge: int = 0,
        available: int | None = None) -> RS:
    """A ReplicaSet as the Deployment of `old_replicas` (+ surge) left it (TestScale's annotations)."""
    return RS(name, replicas, replicas if available is None else available, created, desired_annotation=old_replicas,
              max_annotation=old_replicas + old_surge)


SCALE_CASES = [
    # (id, deployment replicas, surge, old replicas, old surge, new (name, size) or None, olds, expected sizes)
    ("10-to-12", 12, 0, 10, 0, ("v1", 10), [], {"v1": 12}),
    ("10-to-5", 5, 0, 10, 0, ("v1", 10), [], {"v1": 5}),
    ("proportional-5-to-10", 10, 0, 5, 0, ("v2", 2), [("v1", 3)], {"v2": 4, "v1": 6}),
    ("proportional-5-to-3", 3, 0, 5, 0, ("v2", 2), [("v1", 3)], {"v2": 1, "v1": 2}),
    ("proportional-9-to-4", 4, 0, 9, 0, ("v2", 8), [("v1", 1)], {"v2": 4, "v1": 0}),
    ("proportional-7-to-10", 10, 0, 7, 0, ("v3", 2), [("v2", 3), ("v1", 2)], {"v3": 3, "v2": 4, "v1": 3}),
    ("proportional-13-to-8", 8, 0, 13, 0, ("v3", 2), [("v2", 8), ("v1", 3)], {"v3": 1, "v2": 5, "v1": 2}),
    ("leftover-up-3-to-4", 4, 0, 3, 0, ("v3", 1), [("v2", 1), ("v1", 1)], {"v3": 2, "v2": 1, "v1": 1}),
    ("leftover-down-3-to-2", 2, 0, 3, 0, ("v3", 1), [("v2", 1), ("v1", 1)], {"v3": 1, "v2": 1, "v1": 0}),
    ("no-new-rs-4-to-5", 5, 0, 4, 0, None, [("v2", 2), ("v1", 2)], {"v2": 3, "v1": 2}),
    ("to-zero", 0, 0, 6, 0, ("v3", 3), [("v2", 2), ("v1", 1)], {"v3": 0, "v2": 0, "v1": 0}),
    ("from-zero", 6, 0, 0, 0, ("v3", 0), [("v2", 0), ("v1", 0)], {"v3": 6}),
    ("with-surge-10-to-20", 20, 2, 10, 2, ("v2", 6), [("v1", 6)], {"v2": 11, "v1": 11}),
    ("surge-and-size", 50, 6, 10, 3, ("v2", 5), [("v1", 8)], {"v2": 22, "v1": 34}),
    ("size-and-template", 3, 0, 10, 0, None, [("v2", 7), ("v1", 3)], {"v2": 2, "v1": 1}),
]


@pytest.mark.parametrize(("replicas", "surge", "old_replicas", "old_surge", "new", "olds", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in SCALE_CASES])
def test_proportional_scaling(replicas: int, surge: int, old_replicas: int, old_surge: int,
                              new: tuple[str, int] | None, olds: list[tuple[str, int]],
                              expected: dict[str, int]) -> None:
    times = iter([OLD, MID, NEW])
    created = {name: next(times) for name, _ in reversed(olds)}
    old_rss = [_rs(name, size, created[name], old_replicas=old_replicas, old_surge=old_surge) for name, size in olds]
    new_rs = _rs(new[0], new[1], NEW, old_replicas=old_replicas, old_surge=old_surge) if new else None
    d = Deployment(replicas, max_surge=surge, max_unavailable=0 if surge else 1, status_replicas=old_replicas)
    sizes = {rs.name: rs.replicas for rs in [*old_rss, *([new_rs] if new_rs else [])]}
    for step in scale(d, new_rs, old_rss):
        sizes[step.name] = step.replicas
    assert {name: sizes[name] for name in expected} == expected


def test_saturated_broken_new_set_leaves_old_pods() -> None:
    """sync_test.go: a new set at full size but with no available pod is not saturated: nothing moves."""
    d = Deployment(2, max_surge=1, max_unavailable=1, status_replicas=3)
    new = _rs("v2", 2, NEW, old_replicas=2, old_surge=1, available=0)
    old = _rs("v1", 1, OLD, old_replicas=2, old_surge=1)
    assert not is_saturated(d, new)
    assert {(s.name, s.replicas) for s in scale(d, new, [old])} == {("v2", 2), ("v1", 1)}


def test_saturated_new_set_scales_old_ones_to_zero() -> None:
    d = Deployment(2, max_surge=1, max_unavailable=0)
    new = _rs("v2", 2, NEW, old_replicas=2, old_surge=1)
    old = _rs("v1", 1, OLD, old_replicas=2, old_surge=1)
    assert is_saturated(d, new)
    assert scale(d, new, [old]) == [Step("v1", 0)]


@pytest.mark.parametrize(("new", "olds", "expected"), [
    pytest.param(None, [], None, id="nothing"),
    pytest.param(RS("new", 0, created=NEW), [RS("a", 0, created=OLD), RS("b", 0, created=MID)], "new",
                 id="none-active-new"),
    pytest.param(None, [RS("a", 0, created=OLD), RS("b", 0, created=MID)], "b", id="none-active-newest-old"),
    pytest.param(RS("new", 0, created=NEW), [RS("a", 3, created=OLD)], "a", id="one-active"),
    pytest.param(RS("new", 1, created=NEW), [RS("a", 3, created=OLD)], None, id="two-active"),
])
def test_find_active_or_latest(new: RS | None, olds: list[RS], expected: str | None) -> None:
    found = find_active_or_latest(new, olds)
    assert (found.name if found else None) == expected


@pytest.mark.parametrize(("replicas", "surge", "rolling", "sizes", "new_size", "expected"), [
    pytest.param(1, 1, True, [1], 0, 1, id="surge-capped-by-replicas-minus-new"),
    pytest.param(1, 1, True, [5], 0, 0, id="over-max-no-room"),
    pytest.param(5, 1, True, [5], 0, 1, id="surge-1"),
    pytest.param(5, 3, True, [4], 0, 4, id="surge-3-old-4"),
    pytest.param(5, 3, False, [4], 0, 5, id="recreate-full"),
    pytest.param(5, 0, True, [5], 0, 0, id="at-max"),
])
def test_new_rs_new_replicas(replicas: int, surge: int, rolling: bool, sizes: list[int], new_size: int,
                             expected: int) -> None:
    d = Deployment(replicas, max_surge=surge, max_unavailable=1, rolling=rolling)
    new = RS("new", new_size)
    assert new_rs_new_replicas(d, [RS(f"o{i}", s) for i, s in enumerate(sizes)] + [new], new) == expected


def test_scaling_event_and_recreate() -> None:
    d = Deployment(4)
    assert is_scaling_event(d, [RS("a", 3, desired_annotation=3)])
    assert not is_scaling_event(d, [RS("a", 3, desired_annotation=4), RS("b", 0, desired_annotation=1)])
    assert not is_scaling_event(d, [RS("a", 3)])
    assert recreate_scale_down([RS("a", 3), RS("b", 0)]) == [Step("a", 0)]


@pytest.mark.parametrize(("replicas", "surge", "unavailable"),
                         list(itertools.product([1, 2, 3, 5, 10], [0, 1, 2], [0, 1, 3])))
def test_simulated_rolling_update_keeps_its_bounds(replicas: int, surge: int, unavailable: int) -> None:
    """Run the steps as the controller would, with pods that become available one sync later, and check
    at every step: total ≤ replicas + maxSurge, available ≥ replicas − maxUnavailable; and that the
    rollout ends with every replica in the new set."""
    if surge == 0 and unavailable == 0:
        unavailable = 1  # resolve_fenceposts
    unavailable = min(unavailable, replicas)
    d = Deployment(replicas, max_surge=surge, max_unavailable=unavailable)
    sizes = {"old": replicas, "new": 0}
    available = {"old": replicas, "new": 0}
    for _ in range(200):
        old, new = RS("old", sizes["old"], available["old"], OLD), RS("new", sizes["new"], available["new"], NEW)
        steps: list[Step] = []
        step = reconcile_new(d, [old, new], new)
        if step is not None:
            steps = [step]
        else:
            steps = reconcile_old(d, [old, new], [old] if old.replicas else [], new)
        for s in steps:
            sizes[s.name] = s.replicas
            available[s.name] = min(available[s.name], s.replicas)  # removed pods stop at once
        assert sizes["old"] + sizes["new"] <= replicas + surge
        assert available["old"] + available["new"] >= replicas - unavailable
        if not steps:
            if sizes == {"old": 0, "new": replicas} and available["new"] == replicas:
                break
            available["new"] = sizes["new"]  # the new pods become available
    assert sizes == {"old": 0, "new": replicas}
