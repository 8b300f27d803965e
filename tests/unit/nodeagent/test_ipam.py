"""The pod IPAM: pure allocation decisions on tables, then the file store (locking, atomic writes,
restarts) and many processes allocating at once from one file."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from nodeagent.network.ipam import (
    Allocation,
    IPAMError,
    IPAMExhausted,
    IPAMState,
    LocalIPAM,
    allocatable,
    assign,
    from_document,
    gateway_of,
    retain_only,
    to_document,
    unassign,
)

CIDR = "10.244.7.0/24"


@pytest.mark.parametrize("cidr, first, last, count", [
    pytest.param("10.244.7.0/24", "10.244.7.2", "10.244.7.254", 253, id="slash24"),
    pytest.param("10.244.7.0/30", "10.244.7.2", "10.244.7.2", 1, id="slash30-one-pod"),
    pytest.param("10.244.8.0/23", "10.244.8.2", "10.244.9.254", 509, id="slash23-spans-octets"),
])
def test_range_excludes_network_gateway_and_broadcast(cidr, first, last, count):
    addresses = allocatable(cidr)
    assert (str(addresses[0]), str(addresses[-1]), len(addresses)) == (first, last, count)
    assert gateway_of(cidr) == str(addresses[0] - 1)


@pytest.mark.parametrize("cidr", ["10.244.7.0/31", "10.244.7.1/24", "fd00::/64", "nonsense"])
def test_unusable_ranges_are_refused(cidr):
    with pytest.raises(IPAMError):
        allocatable(cidr)


def test_assign_is_idempotent_per_owner_and_records_the_pod():
    state, ip = assign(IPAMState(cidr=CIDR), "sandbox-a", "uid-a")
    again, same = assign(state, "sandbox-a", "uid-a")
    assert ip == same == "10.244.7.2" and again is state
    assert state.allocations["sandbox-a"] == Allocation(ip="10.244.7.2", pod_uid="uid-a")


def test_round_robin_does_not_reuse_a_just_freed_address():
    state = IPAMState(cidr=CIDR)
    state, a = assign(state, "a", "u")
    state, b = assign(state, "b", "u")
    state, freed = unassign(state, "a")
    state, c = assign(state, "c", "u")
    assert (a, b, freed, c) == ("10.244.7.2", "10.244.7.3", "10.244.7.2", "10.244.7.4")


def test_round_robin_wraps_and_skips_addresses_in_use():
    state = IPAMState(cidr="10.244.7.0/29", last="10.244.7.6",  # allocatable: .2 .. .6
                      allocations={"x": Allocation("10.244.7.2", "u"), "y": Allocation("10.244.7.4", "u")})
    state, ip = assign(state, "new", "u")
    assert ip == "10.244.7.3" and state.last == "10.244.7.3"


def test_a_cursor_outside_the_range_starts_from_the_beginning():
    state, ip = assign(IPAMState(cidr=CIDR, last="10.1.1.1"), "a", "u")
    assert ip == "10.244.7.2"


def test_exhaustion_is_a_clear_error_and_changes_nothing():
    state = IPAMState(cidr="10.244.7.0/30")
    state, _ = assign(state, "only", "u")
    with pytest.raises(IPAMExhausted, match="no free address in 10.244.7.0/30"):
        assign(state, "second", "u")


def test_unassign_of_an_unknown_owner_is_a_no_op():
    state = IPAMState(cidr=CIDR)
    assert unassign(state, "nobody") == (state, None)


def test_retain_only_frees_the_dead_and_keeps_the_live():
    state = IPAMState(cidr=CIDR, allocations={"live": Allocation("10.244.7.2", "u1"),
                                              "dead": Allocation("10.244.7.3", "u2")})
    kept, freed = retain_only(state, ["live", "unrelated"])
    assert set(kept.allocations) == {"live"} and freed == {"dead": Allocation("10.244.7.3", "u2")}
    assert retain_only(kept, ["live"]) == (kept, {})


def test_document_round_trip_and_corruption_is_refused():
    state = IPAMState(cidr=CIDR, last="10.244.7.3", allocations={"a": Allocation("10.244.7.3", "u")})
    assert from_document(json.loads(json.dumps(to_document(state)))) == state
    for bad in ({}, {"version": 1}, {"version": 1, "cidr": CIDR, "allocations": {"a": {"ip": "x"}}}, []):
        with pytest.raises(IPAMError):
            from_document(bad)


def test_file_store_survives_a_restart(tmp_path):
    path = tmp_path / "kubelet" / "network" / "ipam.json"
    first = LocalIPAM(path, CIDR)
    a, b = first.allocate("a", "ua"), first.allocate("b", "ub")
    first.release("a")
    restarted = LocalIPAM(path, CIDR)  # a new kubelet process, same data dir
    assert restarted.allocate("b", "ub") == b
    assert restarted.allocate("c", "uc") not in (a, b)  # round-robin cursor persisted too
    assert restarted.allocations()["b"] == Allocation(b, "ub")
    assert sorted(p.name for p in path.parent.iterdir()) == ["ipam.json", "ipam.json.lock"]  # no temp files


def test_reconcile_frees_sandboxes_that_are_gone(tmp_path):
    ipam = LocalIPAM(tmp_path / "ipam.json", CIDR)
    ipam.allocate("kept", "u1")
    gone = ipam.allocate("gone", "u2")
    assert ipam.reconcile({"kept"}) == {"gone": Allocation(gone, "u2")}
    assert set(ipam.allocations()) == {"kept"}
    assert ipam.release("gone") is None  # release after reconcile is harmless


def test_a_corrupt_state_file_is_an_error_not_a_reset(tmp_path):
    path = tmp_path / "ipam.json"
    path.write_text("{ torn")
    with pytest.raises(IPAMError, match="refusing to start from an empty table"):
        LocalIPAM(path, CIDR).allocate("a", "u")


def test_a_changed_pod_cidr_keeps_existing_allocations(tmp_path):
    path = tmp_path / "ipam.json"
    old = LocalIPAM(path, CIDR).allocate("old", "u")
    moved = LocalIPAM(path, "10.244.9.0/24")
    assert moved.allocate("old", "u") == old  # the running sandbox keeps the address it has
    assert moved.allocate("new", "u") == "10.244.9.2"


def _allocate_many(path: str, worker: int, count: int, queue: multiprocessing.Queue) -> None:
    ipam = LocalIPAM(path, "10.244.7.0/24")
    queue.put([(f"w{worker}-{i}", ipam.allocate(f"w{worker}-{i}", f"uid{worker}")) for i in range(count)])


def test_processes_allocating_at_once_never_share_an_address(tmp_path):
    path = str(tmp_path / "ipam.json")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_allocate_many, args=(path, w, 30, queue)) for w in range(6)]
    for p in workers:
        p.start()
    results = [pair for _ in workers for pair in queue.get(timeout=60)]
    for p in workers:
        p.join(timeout=30)
        assert p.exitcode == 0
    ips = [ip for _, ip in results]
    assert len(ips) == 180 and len(set(ips)) == 180
    stored = LocalIPAM(path, "10.244.7.0/24").allocations()
    assert {owner: a.ip for owner, a in stored.items()} == dict(results)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
