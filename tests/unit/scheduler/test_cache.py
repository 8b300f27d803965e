"""The scheduler's cache and NodeInfo sums (upstream backend/cache/cache_test.go, framework/types_test.go)."""

from __future__ import annotations

import pytest

from control.scheduler.cache import SchedulerCache
from control.scheduler.nodeinfo import node_info
from control.scheduler.resources import pod_requests
from tests.support.scheduler_objects import make_node, make_pod


@pytest.mark.parametrize(("pod", "cpu", "memory"), [
    pytest.param(make_pod("p"), 0, 0, id="no-requests"),
    pytest.param(make_pod("p", requests=[{"cpu": "100m", "memory": "1Mi"}, {"cpu": "200m"}]), 300, 1 << 20,
                 id="sum-of-containers"),
    pytest.param(make_pod("p", requests=[{"cpu": "100m", "memory": "1Mi"}],
                          init_requests=[{"cpu": "500m"}, {"memory": "512Ki"}]), 500, 1 << 20, id="init-max-rule"),
    pytest.param(make_pod("p", requests=[{"cpu": "1"}], overhead={"cpu": "250m", "memory": "10"}), 1250, 10,
                 id="overhead-added"),
])
def test_pod_requests(pod, cpu, memory) -> None:
    requests = pod_requests(pod)
    assert (requests.milli_cpu, requests.memory) == (cpu, memory)


def test_non_zero_requests_count_defaults_for_containers_that_request_nothing() -> None:
    pod = make_pod("p", requests=[{"cpu": "1"}, {}])
    non_zero = pod_requests(pod, non_zero=True)
    assert (non_zero.milli_cpu, non_zero.memory) == (1100, 2 * 200 * 1024 * 1024)


def test_node_info_sums_pods_ports_and_extended_resources() -> None:
    info = node_info(make_node("n", extra={"example.com/gpu": "4"}),
                     make_pod("a", requests=[{"cpu": "1", "example.com/gpu": "1"}], ports=[80]),
                     make_pod("b", requests=[{"cpu": "500m", "ephemeral-storage": "1Gi"}], ports=[8080]))
    assert info.requested.milli_cpu == 1500
    assert info.requested.ephemeral_storage == 1 << 30
    assert info.requested.scalar == {"example.com/gpu": 1}
    assert info.allocatable.scalar == {"example.com/gpu": 4}
    assert info.used_ports == {("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 8080)}
    assert info.remove_pod("default/a")
    assert info.requested.milli_cpu == 500 and info.requested.scalar == {"example.com/gpu": 0}
    assert info.used_ports == {("0.0.0.0", "TCP", 8080)}


def _cpu_on(cache: SchedulerCache, node: str) -> int:
    return cache.snapshot().node_infos[node].requested.milli_cpu


def test_assumed_pod_counts_on_its_node_until_forgotten() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    pod = make_pod("p", requests=[{"cpu": "1"}])
    cache.assume_pod(pod, "n1")
    assert _cpu_on(cache, "n1") == 1000 and cache.is_assumed(pod)
    with pytest.raises(ValueError, match="can't be assumed"):
        cache.assume_pod(pod, "n1")
    cache.forget_pod(pod)
    assert _cpu_on(cache, "n1") == 0 and not cache.is_assumed(pod)


def test_informer_add_confirms_an_assumption_and_forget_then_keeps_it() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    pod = make_pod("p", requests=[{"cpu": "1"}])
    cache.assume_pod(pod, "n1")
    cache.add_pod(make_pod("p", requests=[{"cpu": "1"}], node_name="n1"))
    assert not cache.is_assumed(pod)
    cache.forget_pod(pod)  # a late failure report does not undo what the API server says
    assert _cpu_on(cache, "n1") == 1000 and cache.pod_count() == 1


def test_informer_reporting_another_node_moves_the_pod() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.assume_pod(make_pod("p", requests=[{"cpu": "1"}]), "n1")
    cache.add_pod(make_pod("p", requests=[{"cpu": "1"}], node_name="n2"))
    assert (_cpu_on(cache, "n1"), _cpu_on(cache, "n2")) == (0, 1000)


def test_pods_on_a_node_not_yet_seen_count_once_it_appears_and_a_removed_node_leaves_the_snapshot() -> None:
    cache = SchedulerCache()
    cache.add_pod(make_pod("p", requests=[{"cpu": "1"}], node_name="n1"))
    assert cache.snapshot().node_list == []
    cache.add_node(make_node("n1"))
    assert _cpu_on(cache, "n1") == 1000
    cache.remove_node(make_node("n1"))
    assert cache.snapshot().node_list == [] and cache.pod_count() == 1
    cache.remove_pod(make_pod("p", node_name="n1"))
    assert cache.pod_count() == 0


def test_snapshot_reuses_unchanged_node_infos_and_counts_images_per_node() -> None:
    cache = SchedulerCache()
    image = [{"names": ["busybox:latest"], "sizeBytes": 100}]
    cache.add_node(make_node("n1", images=image))
    cache.add_node(make_node("n2", images=image))
    first = cache.snapshot()
    cache.add_pod(make_pod("p", node_name="n2"))
    second = cache.snapshot(first)
    assert second.node_infos["n1"] is first.node_infos["n1"]
    assert second.node_infos["n2"] is not first.node_infos["n2"]
    assert second.node_infos["n1"].image_states["busybox:latest"].num_nodes == 2
    assert len(first.node_infos["n2"].pods) == 0  # the cycle's copy did not change under it


def test_an_incremental_snapshot_equals_a_fresh_one_after_any_change() -> None:
    """The snapshot visits only what changed since the previous one (module notes); whatever changes, it must
    show what a snapshot built from nothing shows."""
    image = [{"names": ["busybox:latest"], "sizeBytes": 100}]
    cache = SchedulerCache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(make_node(name))
    snapshot = cache.snapshot()

    def check() -> None:
        nonlocal snapshot
        snapshot = cache.snapshot(snapshot)
        fresh = cache.snapshot()
        assert [i.name for i in snapshot.node_list] == [i.name for i in fresh.node_list]
        assert list(snapshot.node_infos) == list(fresh.node_infos)
        for mine, theirs in zip(snapshot.node_list, fresh.node_list, strict=True):
            assert mine is snapshot.node_infos[mine.name]
            assert (set(mine.pods), mine.requested, mine.image_states, mine.node) == \
                (set(theirs.pods), theirs.requested, theirs.image_states, theirs.node)

    cache.add_pod(make_pod("a", requests=[{"cpu": "1"}], node_name="n2"))
    check()
    cache.assume_pod(make_pod("b", requests=[{"cpu": "500m"}]), "n3")
    cache.add_pod(make_pod("c", node_name="n2"))
    check()
    cache.add_node(make_node("n2", labels={"zone": "a"}))  # the Node changed, its images did not
    check()
    cache.add_node(make_node("n1", images=image))  # images changed: every node's image states may move
    check()
    assert snapshot.node_infos["n1"].image_states["busybox:latest"].num_nodes == 1
    cache.add_node(make_node("n0", images=image))  # a new node, first in name order
    check()
    assert snapshot.node_infos["n1"].image_states["busybox:latest"].num_nodes == 2
    cache.forget_pod(make_pod("b"))
    cache.remove_pod(make_pod("a", node_name="n2"))
    check()
    cache.remove_node(make_node("n2"))  # still holds pod c: gone from the snapshot, kept in the cache
    check()
    assert "n2" not in snapshot.node_infos
    cache.add_node(make_node("n2"))
    check()
    assert set(snapshot.node_infos["n2"].pods) == {"default/c"}
