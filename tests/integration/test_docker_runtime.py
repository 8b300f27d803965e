"""DockerRuntime against the real dockerd: a sandbox and two app containers sharing network and IPC,
adoption from labels alone, stop with a grace period, exec, logs, termination messages and image errors.
Every container carries the test label and this test's node name, and is removed at teardown."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import Mount
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.interface import (
    ExecTimeout,
    ImagePullError,
    InvalidImageNameError,
    StartContainerError,
)
from nodeagent.runtime.pod_files import ensure_termination_log, termination_log_path
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import ContainerState, SandboxState
from nodeagent.volumes.pod_volumes import teardown
from tests.support.cri_configs import container_config, sandbox_config
from tests.support.polling import wait_for
from tests.support.substrate import TEST_LABEL


@pytest.fixture
def node(run_id) -> str:
    return f"sktest-{run_id}"


@pytest.fixture
def runtime(docker_api, images, node, tmp_path, cleanup, container_labels) -> DockerRuntime:
    def remove_ours() -> None:
        for c in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={container_labels[TEST_LABEL]}"}):
            DockerRuntime(docker_api, node_name=node).remove_container(c["Id"])  # tolerates gone/being removed

    cleanup(remove_ours)
    return DockerRuntime(docker_api, node_name=node)


@pytest.fixture
def pod(run_id) -> dict:
    return {
        "metadata": {"name": f"web-{run_id}", "namespace": "sktest", "uid": f"uid-{run_id}"},
        "spec": {"terminationGracePeriodSeconds": 7},
    }


@pytest.fixture
def pods_dir(tmp_path) -> Path:
    return tmp_path / "pods"


@pytest.fixture
def start(runtime, pod, container_labels, pods_dir):
    """Create and start one busybox container of `pod` in `sandbox`, its termination message file
    bind-mounted from the pod directory as the kubelet does (build_container_config); returns its id."""

    def run(sandbox: str, name: str, script: str, *, attempt: int = 0, **spec) -> str:
        container = {"name": name, "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script], **spec}
        message_file = ensure_termination_log(pods_dir / pod["metadata"]["uid"], name, attempt)
        message_path = spec.get("terminationMessagePath", "/dev/termination-log")
        config = container_config(pod, container, attempt=attempt, extra_labels=container_labels,
                                  image=BUSYBOX_IMAGE, args=("sh", "-c", script),
                                  mounts=(Mount(message_file, message_path),))
        cid = runtime.create_container(sandbox, config, sandbox_config(pod))
        runtime.start_container(cid)
        return cid

    return run


def ns_of(docker_api, cid: str, kind: str) -> str:
    return os.readlink(f"/proc/{docker_api.inspect_container(cid)['State']['Pid']}/ns/{kind}")


def test_pod_containers_share_the_sandbox_and_are_adopted_from_labels(docker_api, runtime, pod, start, node,
                                                                      container_labels):
    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    server = start(sandbox, "server", "echo hello-from-pod > /tmp/index.html && exec httpd -f -p 8080 -h /tmp")
    client = start(sandbox, "client", "exec sleep 60")

    fetch = "for i in $(seq 50); do timeout 3 wget -qO- http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1"
    result = runtime.exec(client, ["sh", "-c", fetch], timeout=15)
    assert (result.exit_code, result.output.strip()) == (0, b"hello-from-pod")
    for kind in ("net", "ipc"):
        assert ns_of(docker_api, server, kind) == ns_of(docker_api, client, kind) == ns_of(docker_api, sandbox, kind)
    assert ns_of(docker_api, client, "pid") != ns_of(docker_api, sandbox, "pid")  # no shareProcessNamespace
    assert runtime.exec(client, ["hostname"], timeout=5).output.strip() == pod["metadata"]["name"].encode()
    assert runtime.sandbox_pid(sandbox) == docker_api.inspect_container(sandbox)["State"]["Pid"] > 0
    meta = pod["metadata"]
    assert docker_api.inspect_container(client)["Name"] == f"/k8s_client_{meta['name']}_sktest_{meta['uid']}_0"

    # A new runtime object (a restarted kubelet) rebuilds the pod from Docker alone.
    [status] = DockerRuntime(docker_api, node_name=node, pod_ip=lambda s: "10.244.9.9").list_pods()
    assert (status.uid, status.name, status.namespace, status.ips) == (
        pod["metadata"]["uid"], pod["metadata"]["name"], "sktest", ("10.244.9.9",))
    assert [(s.id, s.state, s.attempt) for s in status.sandboxes] == [(sandbox, SandboxState.READY, 0)]
    by_name = {c.name: c for c in status.containers}
    assert {n: (c.id, c.state, c.restart_count) for n, c in by_name.items()} == {
        "client": (client, ContainerState.RUNNING, 0), "server": (server, ContainerState.RUNNING, 0)}
    assert by_name["client"].hash == container_hash(
        {"name": "client", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", "exec sleep 60"]})
    assert by_name["client"].image == BUSYBOX_IMAGE and by_name["client"].image_id.startswith("sha256:")
    labels = docker_api.inspect_container(client)["Config"]["Labels"]
    assert (labels[L.GRACE_PERIOD], labels[L.SANDBOX_ID], labels[L.NODE]) == ("7", sandbox, node)
    assert DockerRuntime(docker_api, node_name=f"{node}-other").list_pods() == []

    runtime.stop_sandbox(sandbox)
    runtime.remove_sandbox(sandbox)
    runtime.remove_sandbox(sandbox)  # idempotent
    assert {s.id for p in runtime.list_pods() for s in p.sandboxes} == set()


def test_stop_waits_for_a_term_handler_and_kills_after_the_grace_period(runtime, pod, start, container_labels,
                                                                       docker_api):
    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    polite = start(sandbox, "polite", "trap 'echo bye; exit 0' TERM; echo up; while true; do sleep 0.1; done")
    stubborn = start(sandbox, "stubborn", "trap '' TERM; echo up; while true; do sleep 0.1; done")
    wait_for(lambda: b"up" in runtime.logs(polite) and b"up" in runtime.logs(stubborn), 10.0, "both containers up",
             interval=0.05)

    began = time.monotonic()
    runtime.stop_container(polite, 10)
    assert time.monotonic() - began < 3
    assert docker_api.inspect_container(polite)["State"]["ExitCode"] == 0
    assert runtime.logs(polite, tail=1).strip() == b"bye"

    began = time.monotonic()
    runtime.stop_container(stubborn, 1)
    elapsed = time.monotonic() - began
    assert 0.9 < elapsed < 5
    assert docker_api.inspect_container(stubborn)["State"]["ExitCode"] == 137  # SIGKILL
    runtime.stop_container(stubborn, 1)  # stopping a stopped container is a no-op


def test_exec_exit_codes_timeouts_and_logs(runtime, pod, start, container_labels):
    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    app = start(sandbox, "app", "echo out; echo err >&2; exec sleep 60")
    assert runtime.exec(app, ["sh", "-c", "echo probing; exit 7"], timeout=5).exit_code == 7
    assert runtime.exec(app, ["sh", "-c", "echo probing"], timeout=5).output == b"probing\n"
    assert runtime.exec(app, ["/no/such/binary"], timeout=5).exit_code != 0
    with pytest.raises(ExecTimeout):
        runtime.exec(app, ["sleep", "3"], timeout=0.3)
    wait_for(lambda: b"err" in runtime.logs(app), 10.0, "stderr in the logs", interval=0.05)
    assert sorted(runtime.logs(app).split()) == [b"err", b"out"]
    assert len(runtime.logs(app, tail=1).splitlines()) == 1
    stamped = runtime.logs(app, timestamps=True).splitlines()[0]
    assert stamped[:2] == b"20" and stamped.endswith((b" out", b" err"))
    stats = runtime.stats(app)
    assert stats is not None and stats.memory_usage_bytes > 0


def test_termination_messages(runtime, docker_api, pod, start, container_labels, node, pods_dir):
    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    start(sandbox, "file", "echo bye > /dev/termination-log; exit 3")
    start(sandbox, "fallback", "echo from-logs; exit 1", terminationMessagePolicy="FallbackToLogsOnError")
    start(sandbox, "ok", "echo fine; exit 0", terminationMessagePolicy="FallbackToLogsOnError")
    plain = DockerRuntime(docker_api, node_name=node)  # a runtime that never made them: copied out with get_archive
    start(sandbox, "archived", "echo copied > /tmp/msg; exit 0", terminationMessagePath="/tmp/msg")

    def exited():
        [status] = runtime.list_pods()
        done = {c.name: c for c in status.containers if c.state is ContainerState.EXITED}
        return done if len(done) == 4 else None

    done = wait_for(exited, 10.0, "all four containers exited", interval=0.05)
    assert (done["file"].exit_code, done["file"].reason, done["file"].message) == (3, "Error", "bye\n")
    assert (done["fallback"].reason, done["fallback"].message) == ("Error", "from-logs\n")
    assert (done["ok"].reason, done["ok"].message) == ("Completed", "")
    assert done["ok"].started_at and done["ok"].finished_at  # Docker's two stamps may be ~1 ms out of order
    [status] = plain.list_pods()
    assert {c.name: c.message for c in status.containers}["archived"] == "copied\n"
    runtime.remove_container(done["file"].id)
    teardown(pods_dir, pod["metadata"]["uid"])  # the pod's removal takes its message files
    assert not Path(termination_log_path(pods_dir / pod["metadata"]["uid"], "file", 0)).exists()


def test_bad_command_is_a_start_error(runtime, pod, container_labels):
    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    container = {"name": "bad", "image": BUSYBOX_IMAGE, "command": ["/no/such/binary"]}
    config = container_config(pod, container, extra_labels=container_labels, image=BUSYBOX_IMAGE,
                              args=("/no/such/binary",))
    cid = runtime.create_container(sandbox, config, sandbox_config(pod))
    with pytest.raises(StartContainerError) as caught:
        runtime.start_container(cid)
    assert caught.value.reason == "RunContainerError" and "no such file" in str(caught.value).lower()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_image_lookup_and_a_pull_that_fails_fast(runtime):
    image_id = runtime.image_ref(BUSYBOX_IMAGE)
    assert image_id is not None and image_id.startswith("sha256:")
    missing = f"127.0.0.1:{closed_port()}/sktest/nothing:1"
    assert runtime.image_ref(missing) is None
    began = time.monotonic()
    with pytest.raises(ImagePullError) as pull:
        runtime.pull_image(missing, None)
    assert time.monotonic() - began < 5
    assert pull.value.reason == "ErrImagePull" and "127.0.0.1" in str(pull.value)
    with pytest.raises(InvalidImageNameError):
        runtime.image_ref("bad name")
    [busybox] = [i for i in runtime.images() if BUSYBOX_IMAGE in i.repo_tags]
    assert busybox.id == image_id and busybox.size > 0
