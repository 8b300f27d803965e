"""The node IPAM's CIDR set (control/controllers/nodeipam/cidrset.py): fill, release, occupy (a Node's CIDR,
a service CIDR inside the cluster CIDR), round robin after a release, exhaustion, and upstream's limits."""

from __future__ import annotations

import pytest

from control.controllers.nodeipam.cidrset import CIDRSet, CIDRSetError, CIDRsExhausted


def allocate_all(cidrs: CIDRSet) -> list[str]:
    got = []
    while True:
        try:
            got.append(str(cidrs.allocate_next()))
        except CIDRsExhausted:
            return got


@pytest.mark.parametrize(("cluster", "mask", "first", "count"), [
    pytest.param("10.244.0.0/16", 24, "10.244.0.0/24", 256, id="flannel default"),
    pytest.param("10.244.0.0/22", 24, "10.244.0.0/24", 4, id="small cluster"),
    pytest.param("127.123.234.0/30", 30, "127.123.234.0/30", 1, id="one subnet, as upstream's test"),
    pytest.param("10.0.0.0/8", 24, "10.0.0.0/24", 65536, id="2^16 subnets: upstream's limit"),
    pytest.param("fd00:10::/48", 64, "fd00:10::/64", 65536, id="IPv6"),
])
def test_fill_in_address_order_then_exhausted(cluster, mask, first, count):
    cidrs = CIDRSet(cluster, mask)
    got = allocate_all(cidrs)
    assert got[0] == first and len(got) == len(set(got)) == count == cidrs.allocated == cidrs.max_cidrs
    with pytest.raises(CIDRsExhausted, match="no remaining CIDRs left to allocate"):
        cidrs.allocate_next()


@pytest.mark.parametrize(("cluster", "mask", "message"), [
    pytest.param("10.0.0.0/8", 25, "node CIDR size is too big", id="more than 2^16 subnets"),
    pytest.param("10.244.0.0/16", 15, "must be between", id="node mask shorter than the cluster's"),
    pytest.param("10.244.0.1/16", 24, "host bits set", id="not a network"),
    pytest.param("10.244.0.0/16", 33, "must be between", id="longer than an address"),
])
def test_bad_ranges_refused(cluster, mask, message):
    with pytest.raises(CIDRSetError, match=message):
        CIDRSet(cluster, mask)


def test_release_is_reused_only_after_the_round_robin_comes_back():
    cidrs = CIDRSet("10.244.0.0/22", 24)
    a, b, c = (str(cidrs.allocate_next()) for _ in range(3))
    cidrs.release(b)
    assert str(cidrs.allocate_next()) == "10.244.3.0/24"  # the next candidate first, as upstream
    assert str(cidrs.allocate_next()) == b  # then the released one
    assert cidrs.allocated == 4 and a == "10.244.0.0/24" and c == "10.244.2.0/24"


@pytest.mark.parametrize(("occupied", "left"), [
    pytest.param(["10.244.1.0/24"], ["10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"], id="a node's CIDR"),
    pytest.param(["10.244.2.0/23"], ["10.244.0.0/24", "10.244.1.0/24"], id="a larger block: every subnet in it"),
    pytest.param(["10.244.1.128/25"], ["10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"],
                 id="a smaller block: its subnet"),
    pytest.param(["10.0.0.0/8"], [], id="a block holding the whole cluster CIDR"),
    pytest.param(["10.244.1.0/24", "10.244.1.0/24"], ["10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"],
                 id="occupied twice"),
])
def test_occupied_subnets_are_never_handed_out(occupied, left):
    cidrs = CIDRSet("10.244.0.0/22", 24)
    for cidr in occupied:
        cidrs.occupy(cidr)
    assert allocate_all(cidrs) == left


def test_rebuild_after_restart_from_the_nodes_cidrs_hands_out_no_cidr_twice():
    before = CIDRSet("10.244.0.0/22", 24)
    given = [str(before.allocate_next()) for _ in range(3)]
    before.release(given[0])  # a node deleted
    after = CIDRSet("10.244.0.0/22", 24)  # a restarted controller: only the Nodes' CIDRs are known
    for cidr in given[1:]:
        after.occupy(cidr)
    assert sorted(allocate_all(after)) == ["10.244.0.0/24", "10.244.3.0/24"]


@pytest.mark.parametrize("cidr", ["10.245.0.0/24", "192.168.0.0/16", "fd00::/64", "not-a-cidr"])
def test_cidrs_outside_the_range_are_refused(cidr):
    cidrs = CIDRSet("10.244.0.0/16", 24)
    with pytest.raises(CIDRSetError):
        cidrs.occupy(cidr)
    with pytest.raises(CIDRSetError):
        cidrs.release(cidr)
    assert cidrs.allocated == 0


def test_release_frees_what_occupy_took():
    cidrs = CIDRSet("10.244.0.0/22", 24)
    cidrs.occupy("10.244.0.0/23")
    cidrs.release("10.244.0.0/24")
    assert allocate_all(cidrs) == ["10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"]
