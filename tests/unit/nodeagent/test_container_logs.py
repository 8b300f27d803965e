"""Container logs on the kubelet (nodeagent/logs.py): the instance upstream's validateContainerLogStatus
picks from the pod status, RFC3339Nano timestamps, limitBytes, and Docker's rotation settings."""

from __future__ import annotations

import docker
import pytest

from nodeagent import logs
from nodeagent.logs import LogUnavailable, log_container_id


def _status(state: dict, last: dict | None = None, *, cid: str = "docker://new",
            key: str = "containerStatuses") -> dict:
    entry = {"name": "c", "containerID": cid, "state": state}
    if last is not None:
        entry["lastState"] = last
    return {key: [{"name": "other", "state": {"running": {}}, "containerID": "docker://x"}, entry]}


RUNNING = {"running": {"startedAt": "2026-11-27T11:00:00Z"}}
DEAD_OLD = {"terminated": {"exitCode": 1, "containerID": "docker://old"}}
DEAD_NEW = {"terminated": {"exitCode": 1, "containerID": "docker://new"}}


@pytest.mark.parametrize("status, previous, expected", [
    pytest.param(_status(RUNNING), False, "new", id="running"),
    pytest.param(_status(RUNNING, DEAD_OLD), True, "old", id="previous-of-running"),
    pytest.param(_status({"waiting": {"reason": "CrashLoopBackOff"}}, DEAD_NEW), False, "new",
                 id="crash-looping-reads-the-last-dead"),
    pytest.param(_status({"waiting": {"reason": "CrashLoopBackOff"}}, DEAD_NEW), True, "new",
                 id="crash-looping-previous"),
    pytest.param(_status(DEAD_NEW, DEAD_OLD), False, "new", id="terminated"),
    pytest.param(_status({"terminated": {"exitCode": 0}}, DEAD_OLD), False, "old", id="terminated-without-id"),
    pytest.param(_status(RUNNING, key="initContainerStatuses"), False, "new", id="init-container"),
    pytest.param(_status(RUNNING, cid="abc"), False, "abc", id="bare-id"),
])
def test_the_instance_read(status: dict, previous: bool, expected: str) -> None:
    assert log_container_id("p", "c", status, previous=previous) == expected


@pytest.mark.parametrize("status, previous, message", [
    pytest.param(_status(RUNNING), True, 'previous terminated container "c" in pod "p" not found',
                 id="no-previous"),
    pytest.param(_status({"waiting": {"reason": "ContainerCreating"}}), False,
                 'container "c" in pod "p" is waiting to start: ContainerCreating', id="creating"),
    pytest.param(_status({"waiting": {"reason": "ErrImagePull"}}), False,
                 'container "c" in pod "p" is waiting to start: image can\'t be pulled', id="image-pull"),
    pytest.param(_status({"waiting": {"reason": "ImagePullBackOff"}}), False,
                 'container "c" in pod "p" is waiting to start: trying and failing to pull image', id="pull-backoff"),
    pytest.param(_status({"terminated": {"exitCode": 0}}), False, 'container "c" in pod "p" is terminated',
                 id="terminated-unknown-id"),
    pytest.param(_status({}), False, 'container "c" in pod "p" is waiting to start - no logs yet', id="no-state"),
    pytest.param({}, False, 'container "c" in pod "p" is not available', id="no-status"),
])
def test_no_instance_to_read(status: dict, previous: bool, message: str) -> None:
    with pytest.raises(LogUnavailable) as caught:
        log_container_id("p", "c", status, previous=previous)
    assert str(caught.value) == message


@pytest.mark.parametrize("chunks, expected", [
    pytest.param([b"2026-11-27T11:00:00.120000000Z one\n2026-11-27T11:00:01.000000000Z two\n"],
                 b"2026-11-27T11:00:00.12Z one\n2026-11-27T11:00:01Z two\n", id="whole-log"),
    pytest.param([b"2026-11-27T11:00:00.123456789Z one\n", b"2026-11-27T11:00:02.500000000Z two\n"],
                 b"2026-11-27T11:00:00.123456789Z one\n2026-11-27T11:00:02.5Z two\n", id="frames"),
    pytest.param([b"2026-11-27T11:00:00.100000000Z long", b" 2026-11-27T11:00:00.100000000Z tail\n"],
                 b"2026-11-27T11:00:00.1Z long 2026-11-27T11:00:00.100000000Z tail\n", id="mid-line-untouched"),
    pytest.param([b"no stamp\n"], b"no stamp\n", id="no-stamp"),
])
def test_restamp_as_rfc3339nano(chunks: list[bytes], expected: bytes) -> None:
    assert b"".join(logs.restamp(chunks)) == expected


def test_limit_cuts_and_stops_a_stream() -> None:
    pulled: list[bytes] = []

    def endless():
        n = 0
        while True:
            n += 1
            pulled.append(b"x")
            yield b"line %d\n" % n

    assert b"".join(logs.limit(endless(), 10)) == b"line 1\nlin"
    assert len(pulled) == 2  # the source is not read past the limit
    assert b"".join(logs.limit([b"ab", b"cd"], None)) == b"abcd"


def test_log_config_is_dockers_json_file_rotation() -> None:
    config = logs.log_config(logs.DEFAULT_MAX_SIZE, logs.DEFAULT_MAX_FILES)
    host = docker.types.HostConfig(version="1.41", log_config=config)
    assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "10485760", "max-file": "5"}}
