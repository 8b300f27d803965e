"""ClusterIP and NodePort allocation over a real SQLite store: no duplicates, freed on release, repair."""

from __future__ import annotations

import threading

import pytest

from control.apiserver.registry.allocators import AllocationError, ClusterIPAllocator, NodePortAllocator
from control.storage.sqlite import SQLiteStorage


@pytest.fixture
def storage(tmp_path):
    store = SQLiteStorage(str(tmp_path / "state.db"))
    yield store
    store.close()


def test_first_address_is_kept_for_the_kubernetes_service(storage):
    ips = ClusterIPAllocator(storage, "10.96.0.0/12")
    assert ips.kubernetes_ip == "10.96.0.1"
    assert ips.allocate() == "10.96.0.2"
    assert ips.allocate(ips.kubernetes_ip) == "10.96.0.1"


def test_no_duplicates_until_the_range_is_full(storage):
    ips = ClusterIPAllocator(storage, "10.0.0.0/29")  # usable .1-.6, .1 kept back for dynamic allocation
    got = [ips.allocate() for _ in range(5)]
    assert sorted(got) == [f"10.0.0.{i}" for i in range(2, 7)]
    with pytest.raises(AllocationError, match="range is full"):
        ips.allocate()


def test_released_address_is_allocatable_again_but_not_at_once(storage):
    ips = ClusterIPAllocator(storage, "10.0.0.0/28")
    first = ips.allocate()
    ips.release(first)
    assert ips.allocate() != first  # the cursor moved on
    assert ips.allocate(first) == first  # but it is free


@pytest.mark.parametrize("requested,message", [
    pytest.param("10.1.0.5", "not in the valid range", id="outside"),
    pytest.param("10.0.0.0", "not in the valid range", id="network-address"),
    pytest.param("10.0.0.15", "not in the valid range", id="broadcast"),
    pytest.param("nope", "must be a valid IP", id="garbage"),
])
def test_requested_address_is_checked(storage, requested, message):
    with pytest.raises(AllocationError, match=message):
        ClusterIPAllocator(storage, "10.0.0.0/28").allocate(requested)


def test_requested_address_taken_twice_is_refused(storage):
    ips = ClusterIPAllocator(storage, "10.0.0.0/28")
    ips.allocate("10.0.0.9")
    with pytest.raises(AllocationError, match="already allocated"):
        ips.allocate("10.0.0.9")


def test_two_allocators_on_one_store_never_hand_out_the_same_address(storage):
    """Two API servers sharing a store: the reservation key is the arbiter."""
    first, second = ClusterIPAllocator(storage, "10.0.0.0/24"), ClusterIPAllocator(storage, "10.0.0.0/24")
    results: list[str] = []
    lock = threading.Lock()

    def take(allocator):
        for _ in range(40):
            ip = allocator.allocate()
            with lock:
                results.append(ip)

    threads = [threading.Thread(target=take, args=(a,)) for a in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80 == len(set(results))


def test_allocations_survive_a_new_allocator(storage):
    ClusterIPAllocator(storage, "10.0.0.0/28").allocate("10.0.0.2")
    assert ClusterIPAllocator(storage, "10.0.0.0/28").allocate() != "10.0.0.2"


def test_repair_drops_leaked_reservations_and_restores_missing_ones(storage):
    ips = ClusterIPAllocator(storage, "10.0.0.0/28")
    leaked = ips.allocate()
    assert ips.repair(["10.0.0.9"]) == [leaked]
    with pytest.raises(AllocationError, match="already allocated"):
        ips.allocate("10.0.0.9")
    assert ips.allocate(leaked) == leaked


def test_node_ports_in_range_without_duplicates(storage):
    ports = NodePortAllocator(storage, (30000, 30004))
    got = {ports.allocate() for _ in range(5)}
    assert got == set(range(30000, 30005))
    with pytest.raises(AllocationError, match="range is full"):
        ports.allocate()
    ports.release(30002)
    assert ports.allocate() == 30002


def test_node_port_outside_range_is_refused(storage):
    with pytest.raises(AllocationError, match="30000-32767"):
        NodePortAllocator(storage).allocate(80)
