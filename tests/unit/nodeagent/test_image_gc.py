"""Image GC (nodeagent/gc/images.py and its manager): the threshold arithmetic, the records across
rounds, the eviction order and every exclusion as tables, then whole rounds against fakes (events)."""

from __future__ import annotations

import pytest

from nodeagent.gc.images import (
    ImageGCPolicy,
    ImageUsage,
    InvalidDiskCapacity,
    ListedImage,
    amount_to_free,
    detect_images,
    eviction_order,
    select_images_to_free,
)
from nodeagent.gc.manager import ImageGCError, ImageGCManager, run_image_gc
from nodeagent.runtime.interface import ImageRecord, RuntimeOperationError

POLICY = ImageGCPolicy()  # 85 / 80 / 2m
NOW = 10_000.0


@pytest.mark.parametrize("capacity, available, need", [
    pytest.param(1000, 200, 0, id="80-percent-below-high"),
    pytest.param(1000, 151, 49, id="84.9-percent-counts-as-85-upstreams-integer-percent"),
    pytest.param(1000, 160, 0, id="84-percent-below-high"),
    pytest.param(1000, 150, 50, id="exactly-85-percent-frees-down-to-80"),
    pytest.param(1000, 10, 190, id="99-percent"),
    pytest.param(1000, 0, 200, id="full"),
    pytest.param(1000, 5000, 0, id="available-above-capacity-is-capped"),
])
def test_amount_to_free(capacity: int, available: int, need: int) -> None:
    assert amount_to_free(capacity, available, POLICY) == need


def test_capacity_zero_is_invalid() -> None:
    with pytest.raises(InvalidDiskCapacity, match="^invalid capacity 0 on image filesystem$"):
        amount_to_free(0, 0, POLICY)


def test_detection_keeps_first_detected_updates_last_used_and_forgets_vanished_images() -> None:
    first = detect_images({}, [ListedImage("a", 10), ListedImage("b", 20), ListedImage("p", 5, ("slimkube/pause:1",))],
                          {"a"}, pinned={"slimkube/pause:1"}, now=100.0)
    assert first == {
        "a": ImageUsage("a", first_detected=100.0, last_used=100.0, size=10, in_use=True),
        "b": ImageUsage("b", first_detected=100.0, last_used=0.0, size=20),
        "p": ImageUsage("p", first_detected=100.0, size=5, pinned=True, tags=("slimkube/pause:1",)),
    }
    second = detect_images(first, [ListedImage("a", 11), ListedImage("c", 30)], {"c"}, pinned=(), now=200.0)
    assert second == {
        "a": ImageUsage("a", first_detected=100.0, last_used=100.0, size=11, in_use=False),
        "c": ImageUsage("c", first_detected=200.0, last_used=200.0, size=30, in_use=True),
    }


def rec(image_id: str, *, detected: float = 0.0, used: float = 0.0, size: int = 100, pinned: bool = False,
        in_use: bool = False) -> ImageUsage:
    return ImageUsage(image_id, first_detected=detected, last_used=used, size=size, pinned=pinned, in_use=in_use)


@pytest.mark.parametrize("records, order", [
    pytest.param([rec("new", used=900), rec("old", used=100), rec("never", used=0)], ["never", "old", "new"],
                 id="least-recently-used-first"),
    pytest.param([rec("late", used=100, detected=50), rec("early", used=100, detected=10)], ["early", "late"],
                 id="ties-by-first-detected"),
    pytest.param([rec("busy", in_use=True, used=NOW), rec("free")], ["free"], id="never-an-image-in-use"),
    pytest.param([rec("pause", pinned=True), rec("free")], ["free"], id="never-a-pinned-image"),
    pytest.param([rec("fresh", detected=NOW - 60), rec("aged", detected=NOW - 120)], ["aged"],
                 id="younger-than-min-age-stays"),
    pytest.param([rec("used-now", used=NOW)], [], id="last-used-now-counts-as-in-use"),
])
def test_eviction_order(records: list[ImageUsage], order: list[str]) -> None:
    assert [r.id for r in eviction_order(records, POLICY, NOW)] == order


@pytest.mark.parametrize("need, chosen", [
    pytest.param(1, ["a"], id="one-image-enough"),
    pytest.param(100, ["a"], id="exactly-one-image"),
    pytest.param(101, ["a", "b"], id="a-second-one-needed"),
    pytest.param(10_000, ["a", "b", "c"], id="not-enough-take-everything-eligible"),
    pytest.param(0, [], id="nothing-needed"),
])
def test_select_images_to_free(need: int, chosen: list[str]) -> None:
    records = [rec("c", used=300), rec("a", used=100), rec("b", used=200), rec("busy", in_use=True, used=NOW)]
    assert [r.id for r in select_images_to_free(records, need, POLICY, NOW)] == chosen


class FakeImages:
    def __init__(self, images: list[ImageRecord], in_use: set[str], failing: frozenset[str] = frozenset()) -> None:
        self.listed = images
        self.in_use = in_use
        self.failing = failing
        self.removed: list[str] = []

    def images(self) -> list[ImageRecord]:
        return [i for i in self.listed if i.id not in self.removed]

    def image_ids_in_use(self) -> set[str]:
        return set(self.in_use)

    def remove_image(self, image_id: str, tags: tuple[str, ...]) -> None:
        if image_id in self.failing:
            raise RuntimeOperationError(f"conflict: {image_id}")
        self.removed.append(image_id)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj, type, reason, message) -> None:
        self.events.append((type, reason, message))


def image(image_id: str, size: int, *tags: str) -> ImageRecord:
    return ImageRecord(id=image_id, repo_tags=tags, repo_digests=(), size=size, created=0)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Disk:
    def __init__(self, capacity: int, available: int) -> None:
        self.capacity, self.available = capacity, available

    def __call__(self) -> tuple[int, int]:
        return self.capacity, self.available


def manager(images: FakeImages, disk: Disk, clock: Clock, recorder: Recorder) -> ImageGCManager:
    return ImageGCManager(images, disk, POLICY, recorder=recorder, node_ref={"kind": "Node", "name": "n1"},
                          pinned=("slimkube/pause:1",), clock=clock)


def test_rounds_free_the_least_recently_used_unused_image_never_one_in_use_nor_the_pause_image() -> None:
    images = FakeImages([image("pause", 50, "slimkube/pause:1"), image("old", 100, "old:1"),
                         image("new", 100, "new:1"), image("busy", 100, "busy:1")], in_use={"old", "new", "busy"})
    clock, recorder, disk = Clock(1000.0), Recorder(), Disk(1000, 500)
    gc = manager(images, disk, clock, recorder)
    assert gc.garbage_collect().need == 0  # 50% used: only detection
    clock.now, images.in_use = 1100.0, {"new", "busy"}
    gc.garbage_collect()
    clock.now, images.in_use = 1200.0, {"busy"}
    gc.garbage_collect()
    clock.now, disk.available = 1300.0, 100  # 90% used: free 20% - 10% = 100 bytes
    result = gc.garbage_collect()
    assert (result.usage_percent, result.need, result.freed, result.removed) == (90, 100, 100, ("old",))
    assert images.removed == ["old"] and recorder.events == []
    assert set(gc.records) == {"pause", "new", "busy"}


def test_not_enough_eligible_is_free_disk_space_failed_with_upstreams_message() -> None:
    images = FakeImages([image("pause", 50, "slimkube/pause:1"), image("a", 100, "a:1"), image("busy", 300, "b:1")],
                        in_use={"busy"})
    clock, recorder = Clock(1000.0), Recorder()
    gc = manager(images, Disk(10_000, 100), clock, recorder)  # 99% used: free 1900 bytes
    gc.detect(800.0)  # detected long enough ago
    with pytest.raises(ImageGCError):
        gc.garbage_collect()
    assert images.removed == ["a"]
    assert recorder.events == [("Warning", "FreeDiskSpaceFailed",
                                "Failed to garbage collect required amount of images. Attempted to free 1900 bytes, "
                                "but only found 100 bytes eligible to free.")]


def test_images_first_seen_less_than_min_age_ago_stay() -> None:
    images = FakeImages([image("a", 100, "a:1")], in_use=set())
    recorder = Recorder()
    gc = manager(images, Disk(1000, 10), Clock(1000.0), recorder)
    with pytest.raises(ImageGCError, match="only found 0 bytes"):
        gc.garbage_collect()  # the first round after start: everything was just detected
    assert images.removed == []


def test_capacity_zero_is_an_invalid_disk_capacity_event() -> None:
    recorder = Recorder()
    gc = manager(FakeImages([image("a", 1)], set()), Disk(0, 0), Clock(1000.0), recorder)
    with pytest.raises(ImageGCError):
        gc.garbage_collect()
    assert recorder.events == [("Warning", "InvalidDiskCapacity", "invalid capacity 0 on image filesystem")]


def test_a_failed_removal_moves_on_to_the_next_image() -> None:
    images = FakeImages([image("a", 100, "a:1"), image("b", 100, "b:1"), image("c", 100, "c:1")], set(),
                        failing=frozenset({"a"}))
    recorder = Recorder()
    gc = manager(images, Disk(1000, 100), Clock(1000.0), recorder)
    gc.detect(500.0)
    result = gc.garbage_collect()
    assert (images.removed, result.freed, len(result.errors)) == (["b"], 100, 1)


def test_image_gc_failed_event_only_for_repeated_failures() -> None:
    import threading

    stop, calls, recorder = threading.Event(), [], Recorder()

    class Failing:
        def garbage_collect(self) -> None:
            calls.append(1)
            if len(calls) == 3:
                stop.set()
            raise ImageGCError(f"round {len(calls)}")

    run_image_gc(Failing(), period=0, stop=stop, recorder=recorder, node_ref={})
    assert recorder.events == [("Warning", "ImageGCFailed", "round 2"), ("Warning", "ImageGCFailed", "round 3")]
