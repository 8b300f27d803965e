"""Pure helpers of the Docker runtime: image references, hostnames, Docker times,
exit reasons and PodStatus assembly order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodeagent.runtime import labels as L
from nodeagent.runtime.docker import split_reference
from nodeagent.runtime.docker_status import (
    assemble,
    container_status,
    exit_reason,
    parse_time,
    sandbox_status,
)
from nodeagent.runtime.interface import InvalidImageNameError
from nodeagent.runtime.types import ContainerState
from tests.support.cri_configs import container_docker_labels, sandbox_docker_labels


@pytest.mark.parametrize(
    "image, expected",
    [
        ("busybox", ("busybox", "latest")),
        ("slimkube/busybox:1", ("slimkube/busybox", "1")),
        ("127.0.0.1:5000/team/app", ("127.0.0.1:5000/team/app", "latest")),
        ("127.0.0.1:5000/team/app:v2", ("127.0.0.1:5000/team/app", "v2")),
        ("app@sha256:abc", ("app", "sha256:abc")),
    ],
)
def test_split_reference(image, expected):
    assert split_reference(image) == expected


@pytest.mark.parametrize("image", ["", " busybox", "bad name", "busybox:"])
def test_invalid_image_names(image):
    with pytest.raises(InvalidImageNameError):
        split_reference(image)


def test_parse_time():
    assert parse_time("0001-01-01T00:00:00Z") is None
    assert parse_time("2026-11-23T09:15:12.611339971Z") == datetime(2026, 11, 23, 9, 15, 12, 611339, UTC)
    assert parse_time("2026-11-23T09:15:12Z") == datetime(2026, 11, 23, 9, 15, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "state, reason",
    [({"ExitCode": 0}, "Completed"), ({"ExitCode": 1}, "Error"), ({"ExitCode": 137, "OOMKilled": True}, "OOMKilled")],
)
def test_exit_reason(state, reason):
    assert exit_reason(state) == reason


def inspect(cid: str, second: int, *, running: bool = True) -> dict:
    stamp = f"2026-01-01T00:00:0{second}Z"
    return {"Id": cid, "Created": stamp, "Config": {"Image": "img"},
            "State": {"Running": running, "Status": "running" if running else "exited", "ExitCode": 0,
                      "StartedAt": stamp, "FinishedAt": stamp}}


def test_assemble_orders_newest_first_and_takes_the_ready_sandboxes_ip():
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
    sb = L.parse_labels(sandbox_docker_labels(pod, node="n", attempt=0))
    sb1 = L.parse_labels(sandbox_docker_labels(pod, node="n", attempt=1))
    app0, app1 = (L.parse_labels(container_docker_labels(pod, {"name": "app"}, node="n", sandbox_id="s",
                                                         attempt=attempt, spec_hash="h")) for attempt in (0, 1))
    items = [
        (sb, sandbox_status(sb, inspect("s0", 1, running=False))),
        (app0, container_status(app0, inspect("a0", 2, running=False), message="m")),
        (sb1, sandbox_status(sb1, inspect("s1", 3))),
        (app1, container_status(app1, inspect("a1", 4))),
    ]
    status = assemble("u", items, pod_ip=lambda s: {"s1": "10.0.0.7"}.get(s.id, ""))
    assert [s.id for s in status.sandboxes] == ["s1", "s0"] and status.ips == ("10.0.0.7",)
    assert [c.id for c in status.containers] == ["a1", "a0"]
    assert status.latest("app").state is ContainerState.RUNNING
    assert (status.containers[1].message, status.containers[1].reason) == ("m", "Completed")
