"""control/controllers/nodelifecycle/zones.py: zone keys, zone states (upstream ComputeZoneState), the zones'
eviction rates (handleDisruption, ReducedQPSFunc) and the token buckets swapped per zone."""

from __future__ import annotations

import pytest

from control.controllers.nodelifecycle.zones import (
    EvictionPolicy,
    TokenBucket,
    ZoneLimiters,
    ZoneState,
    zone_key,
    zone_rates,
    zone_state,
)

POLICY = EvictionPolicy()


def test_zone_key_from_labels():
    assert zone_key({"metadata": {"labels": {"topology.kubernetes.io/region": "r",
                                             "topology.kubernetes.io/zone": "a"}}}) == "r:\x00:a"
    assert zone_key({"metadata": {"labels": {"failure-domain.beta.kubernetes.io/zone": "b"}}}) == ":\x00:b"
    assert zone_key({"metadata": {}}) == ""


@pytest.mark.parametrize(("statuses", "state"), [
    pytest.param(["True", "True"], ZoneState.NORMAL, id="all-ready"),
    pytest.param(["Unknown", "False", None], ZoneState.FULL_DISRUPTION, id="none-ready"),
    pytest.param(["True", "Unknown", "Unknown"], ZoneState.NORMAL, id="two-down-is-never-partial"),
    pytest.param(["True", "Unknown", "Unknown", "False"], ZoneState.PARTIAL_DISRUPTION, id="three-of-four"),
    pytest.param(["True"] * 3 + ["Unknown"] * 3, ZoneState.NORMAL, id="half-below-threshold"),
    pytest.param([], ZoneState.NORMAL, id="empty"),
])
def test_zone_state(statuses, state):
    assert zone_state(statuses, 0.55) is state


@pytest.mark.parametrize(("zones", "rates"), [
    pytest.param({"a": ["True", "Unknown"]}, {"a": 0.1}, id="normal"),
    pytest.param({"a": ["Unknown"], "b": ["True"]}, {"a": 0.1, "b": 0.1}, id="one-zone-down-others-fine"),
    pytest.param({"a": ["Unknown"], "b": ["False"]}, {"a": 0.0, "b": 0.0}, id="all-fully-disrupted-stop"),
    pytest.param({"a": ["True"] + ["Unknown"] * 3}, {"a": 0.0}, id="partial-small-cluster-stops"),
    pytest.param({"a": ["True"] * 20 + ["Unknown"] * 31}, {"a": 0.01}, id="partial-large-cluster-secondary"),
])
def test_zone_rates(zones, rates):
    assert zone_rates(zones, POLICY) == rates


def test_token_bucket_starts_full_and_refills_at_its_rate():
    bucket = TokenBucket(0.1, now=0.0)
    assert bucket.try_accept(0.0)
    assert not bucket.try_accept(5.0)
    assert bucket.try_accept(10.0)
    assert not TokenBucket(0.0, now=0.0).try_accept(100.0)


def test_swapping_a_zones_rate_keeps_an_empty_bucket_empty():
    limiters = ZoneLimiters(POLICY)
    assert limiters.try_accept("a", 0.0)
    assert not limiters.try_accept("a", 1.0)
    limiters.set_rates({"a": 0.0}, 2.0)
    assert not limiters.try_accept("a", 100.0)
    limiters.set_rates({"a": 0.5}, 100.0)  # back: the old (zero) bucket was empty, so the new one starts empty
    assert not limiters.try_accept("a", 100.0)
    assert limiters.try_accept("a", 102.0)
    limiters.set_rates({"a": 0.5}, 102.0)  # same rate: the bucket is kept
    assert not limiters.try_accept("a", 102.5)
