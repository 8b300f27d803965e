"""EnsureImageExists against a fake image service: the policy table, the back-off (10 s doubling to
300 s per pod and image), credentials from pull secrets tried in order, and upstream's event texts."""

from __future__ import annotations

import base64
import json

import pytest

from nodeagent.image_manager import ImageManager, ImageStep, go_duration_ms, plan_image, should_pull_image
from nodeagent.runtime.backoff import Backoff
from nodeagent.runtime.interface import (
    ImageNeverPullError,
    ImagePullBackOffError,
    ImagePullError,
    InvalidImageNameError,
    PulledImage,
    RegistryAuth,
)
from tests.support.fake_objects import FakeObjects

IMAGE = "127.0.0.1:5000/team/app:1"


@pytest.mark.parametrize("policy, image, present, pull", [
    pytest.param("Always", IMAGE, True, True, id="always-present"),
    pytest.param("Always", IMAGE, False, True, id="always-absent"),
    pytest.param("IfNotPresent", IMAGE, True, False, id="ifnotpresent-present"),
    pytest.param("IfNotPresent", IMAGE, False, True, id="ifnotpresent-absent"),
    pytest.param("Never", IMAGE, True, False, id="never-present"),
    pytest.param("Never", IMAGE, False, False, id="never-absent"),
    pytest.param("", "busybox", True, True, id="default-no-tag-always"),
    pytest.param("", "busybox:latest", True, True, id="default-latest-always"),
    pytest.param("", "127.0.0.1:5000/app", True, True, id="default-port-is-not-a-tag"),
    pytest.param("", IMAGE, True, False, id="default-pinned-ifnotpresent"),
    pytest.param("", "app@sha256:0123", True, False, id="default-digest-ifnotpresent"),
])
def test_should_pull_image(policy, image, present, pull):
    assert should_pull_image(policy, image, present) is pull


@pytest.mark.parametrize("policy, present, in_backoff, step", [
    pytest.param("IfNotPresent", True, True, ImageStep.USE_PRESENT, id="present-wins-over-backoff"),
    pytest.param("Never", False, True, ImageStep.NEVER_PULL, id="never-absent"),
    pytest.param("Always", True, True, ImageStep.BACK_OFF, id="always-in-backoff"),
    pytest.param("IfNotPresent", False, False, ImageStep.PULL, id="absent-pull"),
])
def test_plan_image(policy, present, in_backoff, step):
    assert plan_image(policy, IMAGE, present=present, in_backoff=in_backoff) is step


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (0.2129, "212ms"), (1.5, "1.5s"), (2.0, "2s"), (61.25, "1m1.25s"), (3725.001, "1h2m5.001s"),
])
def test_go_duration_ms(seconds, text):
    assert go_duration_ms(seconds) == text


class FakeImages:
    def __init__(self) -> None:
        self.present: dict[str, str] = {}
        self.accept: set[tuple[str, str] | None] = {None}  # (username, password) the registry takes
        self.pulls: list[RegistryAuth | None] = []

    def image_ref(self, image: str) -> str | None:
        if " " in image:
            raise InvalidImageNameError(f'invalid image name "{image}"')
        return self.present.get(image)

    def pull_image(self, image: str, auth: RegistryAuth | None) -> PulledImage:
        self.pulls.append(auth)
        if (None if auth is None else (auth.username, auth.password)) not in self.accept:
            raise ImagePullError("unauthorized: authentication required")
        self.present[image] = "sha256:new"
        return PulledImage("sha256:new", 1234)


class Harness:
    def __init__(self, objects: FakeObjects | None = None) -> None:
        self.images = FakeImages()
        self.now = [1000.0]
        self.ticks = iter([5.0, 5.2129] * 50)
        self.manager = ImageManager(self.images, objects or FakeObjects(), Backoff(initial=10, maximum=300),
                                    clock=lambda: self.now[0], timer=lambda: next(self.ticks))
        self.events: list[tuple[str, str, str]] = []

    def ensure(self, pod: dict, container: dict) -> str:
        return self.manager.ensure_image_exists(pod, container, lambda *e: self.events.append(e))


def pod(*secrets: str) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"imagePullSecrets": [{"name": s} for s in secrets]}}


def test_present_image_is_used_with_the_already_present_event():
    h = Harness()
    h.images.present[IMAGE] = "sha256:old"
    assert h.ensure(pod(), {"image": IMAGE, "imagePullPolicy": "IfNotPresent"}) == "sha256:old"
    assert h.events == [("Normal", "Pulled", f'Container image "{IMAGE}" already present on machine')]
    assert h.images.pulls == []


def test_never_and_absent_is_err_image_never_pull():
    h = Harness()
    with pytest.raises(ImageNeverPullError) as caught:
        h.ensure(pod(), {"image": IMAGE, "imagePullPolicy": "Never"})
    assert str(caught.value) == f'Container image "{IMAGE}" is not present with pull policy of Never'
    assert [e[1] for e in h.events] == ["ErrImageNeverPull"] and h.images.pulls == []


def test_invalid_name_is_reported_without_a_pull():
    h = Harness()
    with pytest.raises(InvalidImageNameError):
        h.ensure(pod(), {"image": "bad name", "imagePullPolicy": "Always"})
    assert [e[1] for e in h.events] == ["InspectFailed"]


def test_always_pulls_even_when_present_and_reports_the_time_and_size():
    h = Harness()
    h.images.present[IMAGE] = "sha256:old"
    assert h.ensure(pod(), {"image": IMAGE, "imagePullPolicy": "Always"}) == "sha256:new"
    assert h.events == [("Normal", "Pulling", f'Pulling image "{IMAGE}"'),
                        ("Normal", "Pulled", f'Successfully pulled image "{IMAGE}" in 212ms (212ms including '
                                             "waiting). Image size: 1234 bytes.")]
    assert h.images.pulls == [None]


def test_pull_back_off_doubles_to_the_maximum_per_pod_and_image():
    h = Harness()
    h.images.accept = set()
    container = {"image": IMAGE, "imagePullPolicy": "IfNotPresent"}
    waits = []
    for _ in range(8):
        with pytest.raises(ImagePullError):
            h.ensure(pod(), container)
        waits.append(h.manager.retry_after("u1", IMAGE))
        with pytest.raises(ImagePullBackOffError) as backoff:  # asked again before the back-off ends
            h.ensure(pod(), container)
        assert str(backoff.value) == f'Back-off pulling image "{IMAGE}"'
        h.now[0] += waits[-1]
    assert waits == [10, 20, 40, 80, 160, 300, 300, 300]
    assert [e[1] for e in h.events[:4]] == ["Pulling", "Failed", "BackOff", "Pulling"]
    assert h.events[1] == ("Warning", "Failed", f'Failed to pull image "{IMAGE}": unauthorized: authentication '
                                                "required")
    assert h.events[2] == ("Normal", "BackOff", f'Back-off pulling image "{IMAGE}"')
    other = {"metadata": {"uid": "u2", "namespace": "ns"}, "spec": {}}
    with pytest.raises(ImagePullError):  # another pod's pull of the same image is not held back
        h.ensure(other, container)


def dockerconfigjson(auths: dict) -> dict[str, str]:
    return {".dockerconfigjson": json.dumps({"auths": auths})}


def test_credentials_from_secrets_tried_in_order_and_missing_secrets_reported():
    auth = base64.b64encode(b"bob:right").decode()
    objects = FakeObjects(
        secrets={"first": dockerconfigjson({"127.0.0.1:5000/team": {"username": "alice", "password": "wrong"}}),
                 "second": dockerconfigjson({"127.0.0.1:5000": {"auth": auth}}),
                 "other-registry": dockerconfigjson({"127.0.0.1:6000": {"username": "eve", "password": "x"}})},
        secret_types={"first": "kubernetes.io/dockerconfigjson", "second": "kubernetes.io/dockerconfigjson",
                      "other-registry": "kubernetes.io/dockerconfigjson"})
    h = Harness(objects)
    h.images.accept = {("bob", "right")}
    h.ensure(pod("other-registry", "gone", "first", "second"), {"image": IMAGE, "imagePullPolicy": "Always"})
    assert [(a.username, a.password, a.server_address) for a in h.images.pulls if a] == [
        ("alice", "wrong", "127.0.0.1:5000/team"), ("bob", "right", "127.0.0.1:5000")]
    assert ("Warning", "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (gone); "
            "attempting to pull the image may not succeed.") in h.events
    assert h.events[-1][1] == "Pulled"


def test_every_credential_failing_aggregates_the_errors_and_no_secret_means_anonymous():
    objects = FakeObjects(secrets={"s": dockerconfigjson({"127.0.0.1:5000": {"username": "a", "password": "b"},
                                                          "127.0.0.1:5000/team": {"username": "c", "password": "d"}})},
                          secret_types={"s": "kubernetes.io/dockerconfigjson"})
    h = Harness(objects)
    h.images.accept = set()
    with pytest.raises(ImagePullError) as caught:
        h.ensure(pod("s"), {"image": IMAGE, "imagePullPolicy": "Always"})
    assert str(caught.value) == "[unauthorized: authentication required, unauthorized: authentication required]"
    assert len(h.images.pulls) == 2
    h2 = Harness(objects)
    h2.images.accept = set()
    with pytest.raises(ImagePullError):
        h2.ensure(pod(), {"image": IMAGE, "imagePullPolicy": "Always"})
    assert h2.images.pulls == [None]


def test_an_unreadable_pull_secret_fails_the_pull():
    objects = FakeObjects(secrets={"s": {".dockerconfigjson": "{nope"}},
                          secret_types={"s": "kubernetes.io/dockerconfigjson"})
    h = Harness(objects)
    with pytest.raises(ImagePullError, match="not JSON"):
        h.ensure(pod("s"), {"image": IMAGE, "imagePullPolicy": "Always"})
    assert h.images.pulls == [] and h.manager.retry_after("u1", IMAGE) == 10
