"""Which images go when the image filesystem fills up: upstream pkg/kubelet/images/image_gc_manager.go
(detectImages, GarbageCollect, freeSpace). Pure: the manager
(nodeagent/gc/manager.py) lists images and containers, reads the disk, and removes what these say.

- `detect_images`: the records carried from one round to the next. A new image gets `first_detected` =
  now; an image some container uses (in any state: Docker keeps an exited container's image) gets
  `last_used` = now; sizes are refreshed; images that disappeared are dropped.
- `amount_to_free`: usage percent = 100 - available*100/capacity (integer, as upstream); at or above
  `high_threshold_percent` the amount to free is capacity*(100-low)/100 - available (that is,
  usage - low*capacity/100); capacity 0 is an error (the InvalidDiskCapacity event).
- `select_images_to_free`: least recently used first, ties by first detection; never an image in use,
  never a pinned one (the pause image: upstream's most reported image GC bug was nodes deleting their
  sandbox image and then hanging with no registry to pull it from), never one detected less than
  `min_age` ago (it may have just been pulled for a pod about to start); taken in that order until their
  sizes add up to the amount needed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

DEFAULT_HIGH_THRESHOLD_PERCENT = 85
DEFAULT_LOW_THRESHOLD_PERCENT = 80
DEFAULT_MIN_AGE = 120.0  # imageMinimumGCAge 2m


class InvalidDiskCapacity(ValueError):
    """The image filesystem reports capacity 0."""


@dataclass(frozen=True)
class ImageGCPolicy:
    """upstream ImageGCPolicy (imageGCHighThresholdPercent, imageGCLowThresholdPercent, imageMinimumGCAge)."""

    high_threshold_percent: int = DEFAULT_HIGH_THRESHOLD_PERCENT
    low_threshold_percent: int = DEFAULT_LOW_THRESHOLD_PERCENT
    min_age: float = DEFAULT_MIN_AGE


@dataclass(frozen=True)
class ListedImage:
    """One image as the runtime lists it."""

    id: str
    size: int
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageUsage:
    """upstream imageRecord: what the kubelet remembers about one image between rounds."""

    id: str
    first_detected: float
    last_used: float = 0.0  # 0: never seen in use
    size: int = 0
    pinned: bool = False
    in_use: bool = False  # at the last detection
    tags: tuple[str, ...] = ()


def detect_images(records: Mapping[str, ImageUsage], images: Iterable[ListedImage], in_use: Collection[str],
                  *, pinned: Collection[str], now: float) -> dict[str, ImageUsage]:
    """The records after one detection at `now`; `in_use` holds image ids, `pinned` image references
    (tags) that are never removed."""
    current: dict[str, ImageUsage] = {}
    for image in images:
        record = records.get(image.id) or ImageUsage(id=image.id, first_detected=now)
        used = image.id in in_use
        current[image.id] = replace(record, size=image.size, in_use=used, tags=image.tags,
                                    last_used=now if used else record.last_used,
                                    pinned=any(tag in pinned for tag in image.tags))
    return current


def usage_percent(capacity: int, available: int) -> int:
    if capacity <= 0:
        raise InvalidDiskCapacity(f"invalid capacity {capacity} on image filesystem")
    return 100 - (min(available, capacity) * 100) // capacity


def amount_to_free(capacity: int, available: int, policy: ImageGCPolicy) -> int:
    """Bytes to free now: 0 below the high threshold; raises InvalidDiskCapacity for capacity 0."""
    available = min(available, capacity)
    if usage_percent(capacity, available) < policy.high_threshold_percent:
        return 0
    return capacity * (100 - policy.low_threshold_percent) // 100 - available


def eviction_order(records: Iterable[ImageUsage], policy: ImageGCPolicy, now: float) -> list[ImageUsage]:
    """Every image that may go now, least recently used first (ties: first detected first)."""
    eligible = [r for r in records
                if not r.in_use and not r.pinned and r.last_used < now and now - r.first_detected >= policy.min_age]
    return sorted(eligible, key=lambda r: (r.last_used, r.first_detected, r.id))


def select_images_to_free(records: Iterable[ImageUsage], need: int, policy: ImageGCPolicy,
                          now: float) -> list[ImageUsage]:
    """The images to remove for `need` bytes: the eviction order's prefix whose sizes first reach it
    (all of them when they cannot)."""
    selected: list[ImageUsage] = []
    freed = 0
    for record in eviction_order(records, policy, now):
        if freed >= need:
            break
        selected.append(record)
        freed += record.size
    return selected
