"""Hard eviction thresholds and the node pressure they imply (upstream: pkg/kubelet/eviction/helpers.go
ParseThresholdConfig / parseThresholdStatement, and the defaults of pkg/kubelet/eviction/defaults_linux.go:
memory.available<100Mi, nodefs.available<10%, imagefs.available<15%).

Only the conditions: MemoryPressure when memory.available is under its threshold, DiskPressure when
nodefs.available or imagefs.available is (node_status.py reports them). No pod is evicted and no
soft thresholds, grace periods or inode signals exist yet. A configured `evictionHard` replaces the
defaults as a whole, as upstream does without its MergeDefaultEvictionSettings gate: a signal left out is
not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from control.apimachinery.quantity import to_bytes

MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"
IMAGEFS_AVAILABLE = "imagefs.available"
SIGNALS = (MEMORY_AVAILABLE, NODEFS_AVAILABLE, IMAGEFS_AVAILABLE)
DEFAULT_EVICTION_HARD: Mapping[str, str] = MappingProxyType(
    {MEMORY_AVAILABLE: "100Mi", NODEFS_AVAILABLE: "10%", IMAGEFS_AVAILABLE: "15%"})


@dataclass(frozen=True)
class Threshold:
    """`value` bytes, or `percentage` (0-1) of the capacity; exactly one is set."""

    signal: str
    value: int | None = None
    percentage: float | None = None

    def minimum(self, capacity: int) -> float:
        """The available amount below which the threshold is crossed, for a resource of `capacity`."""
        return float(self.value) if self.value is not None else (self.percentage or 0.0) * capacity

    def crossed(self, *, available: int, capacity: int) -> bool:
        return capacity > 0 and available < self.minimum(capacity)


def parse_thresholds(hard: Mapping[str, str]) -> tuple[Threshold, ...]:
    """`evictionHard` → thresholds; raises ValueError naming the signal (as upstream's messages do)."""
    thresholds = []
    for signal, text in hard.items():
        if signal not in SIGNALS:
            raise ValueError(f"unsupported eviction signal {signal} (supported: {', '.join(SIGNALS)})")
        text = str(text).strip()
        if text.endswith("%"):
            try:
                percentage = float(text[:-1]) / 100
            except ValueError:
                raise ValueError(f"invalid percentage {text!r} for {signal}") from None
            if not 0 < percentage <= 1:
                raise ValueError(f"eviction percentage threshold {signal} must be positive: {text}")
            thresholds.append(Threshold(signal, percentage=percentage))
            continue
        try:
            value = to_bytes(text)
        except ValueError:
            raise ValueError(f"invalid quantity {text!r} for {signal}") from None
        if value < 0:
            raise ValueError(f"eviction threshold {signal} must be positive: {text}")
        thresholds.append(Threshold(signal, value=value))
    return tuple(thresholds)


@dataclass(frozen=True)
class Observations:
    """What the signals are now: (available, capacity) per resource; imagefs None when unknown."""

    memory: tuple[int, int]
    nodefs: tuple[int, int]
    imagefs: tuple[int, int] | None


def crossed(thresholds: tuple[Threshold, ...], observed: Observations) -> frozenset[str]:
    """The signals whose hard threshold is crossed now."""
    values = {MEMORY_AVAILABLE: observed.memory, NODEFS_AVAILABLE: observed.nodefs,
              IMAGEFS_AVAILABLE: observed.imagefs}
    found = set()
    for threshold in thresholds:
        value = values.get(threshold.signal)
        if value is not None and threshold.crossed(available=value[0], capacity=value[1]):
            found.add(threshold.signal)
    return frozenset(found)


def pressure(signals: frozenset[str]) -> tuple[bool, bool]:
    """(MemoryPressure, DiskPressure) for the crossed signals (upstream's signalToNodeCondition)."""
    return MEMORY_AVAILABLE in signals, bool(signals & {NODEFS_AVAILABLE, IMAGEFS_AVAILABLE})
