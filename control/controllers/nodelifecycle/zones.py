"""Zone states and the eviction rate limits, pure apart from the limiters' clock readings passed in.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go (`ComputeZoneState`, `handleDisruption`,
`setLimiterInZone`, `ReducedQPSFunc`/`HealthyQPSFunc`), pkg/controller/nodelifecycle/scheduler/
rate_limited_queue.go (`SwapLimiter`: a rate of 0 never accepts; a new bucket is drained if the old one was
empty) and pkg/controller/util/node (`GetZoneKey`). With taint-based eviction the limiter gates adding a
NoExecute not-ready/unreachable taint to a node (swapping one for the other is not gated), per zone:

- a zone's state from its nodes' Ready conditions: none ready and some not → FullDisruption; more than
  two not ready and at least `--unhealthy-zone-threshold` (0.55) of them → PartialDisruption; else Normal;
- its rate: Normal and FullDisruption → `--node-eviction-rate` (0.1/s); PartialDisruption →
  `--secondary-node-eviction-rate` (0.01/s) in a zone of more than `--large-cluster-size-threshold` (50)
  nodes, else 0 (a small cluster stops evicting);
- every zone fully disrupted (the control plane is more likely cut off than every node dead): 0 everywhere.

Departure: upstream also removes the NoExecute taints of every node when all zones go fully disrupted
(`markNodeAsReachable`) and restarts every node's grace period when they come back; here new taints stop.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

LABEL_ZONE, LABEL_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
BURST = 1  # upstream evictionLimiterBurst


class ZoneState(Enum):
    NORMAL = "Normal"
    PARTIAL_DISRUPTION = "PartialDisruption"
    FULL_DISRUPTION = "FullDisruption"


@dataclass(frozen=True)
class EvictionPolicy:
    """The controller manager's eviction flags, upstream's names and defaults."""

    eviction_rate: float = 0.1  # --node-eviction-rate, nodes per second
    secondary_eviction_rate: float = 0.01  # --secondary-node-eviction-rate
    unhealthy_zone_threshold: float = 0.55  # --unhealthy-zone-threshold
    large_cluster_size_threshold: int = 50  # --large-cluster-size-threshold


def zone_key(node: Mapping[str, Any]) -> str:
    """The node's zone, region and zone labels joined as upstream GetZoneKey ("" without either)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = labels.get(LABEL_REGION) or labels.get(LABEL_REGION_BETA) or ""
    zone = labels.get(LABEL_ZONE) or labels.get(LABEL_ZONE_BETA) or ""
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready_statuses: Iterable[str | None], threshold: float) -> ZoneState:
    """A zone's state from the Ready condition status of each of its nodes (None: no condition, not ready)."""
    statuses = list(ready_statuses)
    ready = sum(1 for status in statuses if status == "True")
    not_ready = len(statuses) - ready
    if ready == 0 and not_ready > 0:
        return ZoneState.FULL_DISRUPTION
    if not_ready > 2 and not_ready / len(statuses) >= threshold:
        return ZoneState.PARTIAL_DISRUPTION
    return ZoneState.NORMAL


def zone_rates(zones: Mapping[str, list[str | None]], policy: EvictionPolicy) -> dict[str, float]:
    """Each zone's eviction rate (nodes per second) from its nodes' Ready statuses."""
    states = {zone: zone_state(statuses, policy.unhealthy_zone_threshold) for zone, statuses in zones.items()}
    if states and all(state is ZoneState.FULL_DISRUPTION for state in states.values()):
        return dict.fromkeys(states, 0.0)
    rates: dict[str, float] = {}
    for zone, state in states.items():
        if state is ZoneState.PARTIAL_DISRUPTION:
            large = len(zones[zone]) > policy.large_cluster_size_threshold
            rates[zone] = policy.secondary_eviction_rate if large else 0.0
        else:
            rates[zone] = policy.eviction_rate
    return rates


class TokenBucket:
    """Upstream flowcontrol's token bucket (qps, burst), full at creation, read with the caller's clock."""

    def __init__(self, qps: float, now: float, burst: int = BURST) -> None:
        self.qps, self.burst = qps, burst
        self.tokens, self.last = float(burst), now

    def try_accept(self, now: float) -> bool:
        if self.qps <= 0:
            return False
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class ZoneLimiters:
    """One token bucket per zone, swapped when the zone's rate changes (upstream SwapLimiter)."""

    def __init__(self, policy: EvictionPolicy) -> None:
        self.policy = policy
        self._lock = threading.Lock()
        self._buckets: dict[str, TokenBucket] = {}

    def set_rates(self, rates: Mapping[str, float], now: float) -> None:
        with self._lock:
            for zone, qps in rates.items():
                old = self._buckets.get(zone)
                if old is not None and old.qps == qps:
                    continue
                new = TokenBucket(qps, now)
                if old is not None and not old.try_accept(now):
                    new.try_accept(now)  # the old bucket was empty: so is the new one
                self._buckets[zone] = new

    def try_accept(self, zone: str, now: float) -> bool:
        with self._lock:
            bucket = self._buckets.get(zone)
            if bucket is None:
                bucket = self._buckets[zone] = TokenBucket(self.policy.eviction_rate, now)
            return bucket.try_accept(now)
