"""The pod substrate with no kubelet yet: our pause image holds a network namespace that busybox
containers join, exactly as the kubelet's sandbox does."""

from __future__ import annotations

import os
import time

import pytest

from nodeagent.images import BUSYBOX_IMAGE, PAUSE_IMAGE


@pytest.fixture
def run(docker_api, images, container_labels):
    """Create and start a test-labelled container; returns its id."""

    def start(image: str, command: list[str] | None = None, **host_config) -> str:
        container = docker_api.create_container(
            image,
            command=command,
            labels=container_labels,
            host_config=docker_api.create_host_config(**host_config),
        )
        docker_api.start(container["Id"])
        return container["Id"]

    return start


def wait_exit(docker_api, cid: str, timeout: float = 30) -> tuple[int, str]:
    code = docker_api.wait(cid, timeout=timeout)["StatusCode"]
    return code, docker_api.logs(cid).decode()


def test_busybox_replies_through_the_sandbox_network_namespace(docker_api, run):
    sandbox = run(PAUSE_IMAGE, network_mode="none", ipc_mode="shareable")
    joined = {"network_mode": f"container:{sandbox}", "ipc_mode": f"container:{sandbox}"}
    server = run(BUSYBOX_IMAGE, ["sh", "-c", "echo hello-from-pod > /tmp/index.html && httpd -f -p 8080 -h /tmp"],
                 **joined)
    client = run(
        BUSYBOX_IMAGE,
        ["sh", "-c",
         "for i in $(seq 50); do timeout 3 wget -qO- http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1"],
        **joined,
    )
    code, out = wait_exit(docker_api, client)
    assert (code, out.strip()) == (0, "hello-from-pod")

    def netns(cid: str) -> str:
        pid = docker_api.inspect_container(cid)["State"]["Pid"]
        return os.readlink(f"/proc/{pid}/ns/net")

    assert netns(server) == netns(sandbox)
    assert docker_api.inspect_container(sandbox)["NetworkSettings"]["Networks"].keys() == {"none"}


def test_pause_exits_at_once_on_sigterm(docker_api, run):
    sandbox = run(PAUSE_IMAGE, network_mode="none")
    started = time.monotonic()
    docker_api.stop(sandbox, timeout=10)  # PID 1 without a handler would ignore SIGTERM and wait 10 s
    assert time.monotonic() - started < 3
    assert docker_api.inspect_container(sandbox)["State"]["ExitCode"] == 0


def test_pause_reaps_orphaned_children_in_a_shared_pid_namespace(docker_api, run):
    sandbox = run(PAUSE_IMAGE, network_mode="none", ipc_mode="shareable")
    # The subshell exits at once, so its `sleep` is reparented to PID 1 (pause); when it exits only
    # pause can reap it. Without reaping it would show as a zombie (Z) in ps.
    app = run(
        BUSYBOX_IMAGE,
        ["sh", "-c", "(sleep 0.3 &); sleep 1.5; ps -o pid,stat,comm"],
        network_mode=f"container:{sandbox}",
        pid_mode=f"container:{sandbox}",
    )
    code, out = wait_exit(docker_api, app)
    assert code == 0
    rows = [line.split() for line in out.strip().splitlines()[1:]]
    assert ["1", "S", "pause"] in [row[:3] for row in rows], out
    assert not [row for row in rows if row[1].startswith("Z")], out
