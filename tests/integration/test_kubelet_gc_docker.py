"""The kubelet's garbage collectors against the real dockerd (nodeagent/gc/).

Containers: real exited containers made by the kubelet's own runtime (its names and labels) for a live
pod and a deleted one, beside containers the kubelet did not make → one round removes exactly what the
policy says and keeps the latest dead instance per (pod, container).

Images: throwaway images imported here (no registry), labelled with this test's run id. The disk reading
is fake (it reports the usage each step needs: the real disk is far below any threshold) but the image
list, the containers that use images and the removals are Docker's. The image service is the real
runtime's with one restriction: its list holds only this test's images and the pause image, so a GC that
must free "everything eligible" can never reach an image the suite needs (slimkube/busybox:1, which on a
real node is just an unused image) nor anything else on this host. The pause image is in that list on
purpose: it is unused here and would be the first to go if pinning failed (the cleanup rebuilds it then).

The kubelet: a real one runs both collectors on their periods: its container GC removes the older dead
instance of a live pod's container, and its image GC, told to act at 1% usage but to touch no image
younger than 1000 hours, reads the real disk and reports FreeDiskSpaceFailed on the Node.
"""

from __future__ import annotations

import io
import re
import tarfile
import time
import uuid

import docker.errors
import pytest

from control.client.rest import RESTClient
from nodeagent.config import KubeletConfig
from nodeagent.gc.containers import ContainerGCPolicy
from nodeagent.gc.images import ImageGCPolicy
from nodeagent.gc.manager import ContainerGC, ImageGCError, ImageGCManager
from nodeagent.images import BUSYBOX, BUSYBOX_IMAGE, PAUSE, PAUSE_IMAGE, ensure_image
from nodeagent.kubelet import Kubelet
from nodeagent.network.bridge import delete_bridge
from nodeagent.runtime import labels as L
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.interface import ImageRecord
from tests.support.apiserver import ThreadServer
from tests.support.cri_configs import container_config, sandbox_config
from tests.support.hostnet import free_pod_cidr
from tests.support.polling import wait_for
from tests.support.substrate import TEST_LABEL


@pytest.fixture
def node(run_id: str) -> str:
    return f"sktest-{run_id}"


@pytest.fixture
def runtime(docker_api, images, node, cleanup, container_labels) -> DockerRuntime:
    def remove_ours() -> None:
        for c in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={container_labels[TEST_LABEL]}"}):
            DockerRuntime(docker_api, node_name=node).remove_container(c["Id"])

    cleanup(remove_ours)
    return DockerRuntime(docker_api, node_name=node)


def pod(name: str, uid: str) -> dict:
    return {"metadata": {"name": name, "namespace": "sktest", "uid": uid}, "spec": {"terminationGracePeriodSeconds": 1}}


def test_container_gc_removes_dead_containers_and_keeps_the_latest_per_unit(docker_api, runtime, node, run_id,
                                                                            container_labels):
    live, deleted = pod(f"live-{run_id}", f"uid-live-{run_id}"), pod(f"gone-{run_id}", f"uid-gone-{run_id}")

    def run(p: dict, sandbox: str, name: str, attempt: int, script: str, *, wait: bool = True) -> str:
        config = container_config(p, {"name": name, "image": BUSYBOX_IMAGE}, attempt=attempt,
                                  extra_labels=container_labels, image=BUSYBOX_IMAGE, args=("sh", "-c", script))
        cid = runtime.create_container(sandbox, config, sandbox_config(p))
        runtime.start_container(cid)
        if wait:
            assert docker_api.wait(cid, timeout=30)["StatusCode"] == 0
        return cid

    old_sandbox = runtime.run_sandbox(sandbox_config(live, attempt=0, extra_labels=container_labels))
    runtime.stop_sandbox(old_sandbox)
    sandbox = runtime.run_sandbox(sandbox_config(live, attempt=1, extra_labels=container_labels))
    app = [run(live, sandbox, "app", attempt, "true") for attempt in range(3)]
    web = run(live, sandbox, "web", 0, "exec sleep 60", wait=False)
    gone_sandbox = runtime.run_sandbox(sandbox_config(deleted, attempt=0, extra_labels=container_labels))
    job = run(deleted, gone_sandbox, "job", 0, "true")
    runtime.stop_sandbox(gone_sandbox)
    # Ours by the node label but no pod identity: unidentified. Not ours at all: a plain container and
    # one of another kubelet; both must stay.
    unidentified = docker_api.create_container(BUSYBOX_IMAGE, command=["true"], name=f"sktest-odd-{run_id}",
                                               labels={**container_labels, L.NODE: node})["Id"]
    plain = docker_api.create_container(BUSYBOX_IMAGE, command=["true"], labels=container_labels)["Id"]
    other = DockerRuntime(docker_api, node_name=f"{node}-other")
    other_sandbox = other.run_sandbox(sandbox_config(deleted, attempt=0, extra_labels=container_labels))
    other.stop_sandbox(other_sandbox)

    gc = ContainerGC(runtime, ContainerGCPolicy(), known_pods=lambda: frozenset({live["metadata"]["uid"]}))
    result = gc.garbage_collect()

    assert result.errors == ()
    assert {e.id: e.reason for e in result.plan.containers} == {
        unidentified: "unidentified", job: "pod deleted", app[0]: "maxPerPodContainer",
        app[1]: "maxPerPodContainer"}
    assert set(result.plan.sandboxes) == {old_sandbox, gone_sandbox}
    left = {c["Id"] for c in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={run_id}"})}
    assert left == {app[2], web, sandbox, plain, other_sandbox}
    assert gc.garbage_collect().plan.containers == ()  # a second round finds nothing more


def tiny_rootfs(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("payload")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


class OnlyThese:
    """The real runtime's image service, its list restricted to `allowed` image ids (see the module notes)."""

    def __init__(self, runtime: DockerRuntime, allowed: set[str]) -> None:
        self.runtime = runtime
        self.allowed = allowed

    def images(self) -> list[ImageRecord]:
        return [i for i in self.runtime.images() if i.id in self.allowed]

    def image_ids_in_use(self) -> set[str]:
        return self.runtime.image_ids_in_use()

    def remove_image(self, image_id: str, tags: tuple[str, ...]) -> None:
        assert image_id in self.allowed
        self.runtime.remove_image(image_id, tags)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj, type, reason, message) -> None:
        self.events.append((reason, message))


class Steps:
    """The fake clock and disk reading the test moves forward."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.disk = (100, 50)

    def clock(self) -> float:
        return self.now

    def usage(self) -> tuple[int, int]:
        return self.disk


def test_image_gc_frees_the_least_recently_used_unused_image_and_never_the_pause_image(docker_api, runtime, run_id,
                                                                                       container_labels, cleanup):
    repository = f"sktest-gc-{run_id}"
    refs = {name: f"{repository}:{name}" for name in ("old", "new", "busy")}

    def remove_test_images() -> None:
        for ref in refs.values():
            try:
                docker_api.remove_image(ref, force=True)
            except docker.errors.NotFound:
                pass
        ensure_image(docker_api, PAUSE)  # only does something if the GC wrongly removed it

    cleanup(remove_test_images)  # registered first: runs after the containers are gone
    ids = {}
    for index, (name, ref) in enumerate(refs.items()):
        payload = f"{run_id}-{name}".encode() * (2000 * (index + 1))
        docker_api.import_image_from_data(tiny_rootfs(payload), repository=repository, tag=name,
                                          changes=[f"LABEL {TEST_LABEL}={run_id}"])
        ids[name] = docker_api.inspect_image(ref)["Id"]
    pause_id = docker_api.inspect_image(PAUSE_IMAGE)["Id"]
    busybox_id = docker_api.inspect_image(BUSYBOX_IMAGE)["Id"]
    users = {name: docker_api.create_container(ref, command=["x"], labels=container_labels)["Id"]
             for name, ref in refs.items()}

    steps, recorder = Steps(), Recorder()
    gc = ImageGCManager(OnlyThese(runtime, {*ids.values(), pause_id}), steps.usage, ImageGCPolicy(),
                        recorder=recorder, node_ref={"kind": "Node", "name": "n"}, pinned=(PAUSE_IMAGE,),
                        clock=steps.clock)
    assert gc.garbage_collect().need == 0  # 50% used: the images are detected, all three in use
    docker_api.remove_container(users["old"])
    steps.now = 1100.0
    gc.garbage_collect()  # old's last use stays at 1000
    docker_api.remove_container(users["new"])
    steps.now = 1200.0
    gc.garbage_collect()  # new's at 1100
    records = gc.records
    # The pause image is unused here: only pinning keeps it.
    assert records[pause_id].pinned and not records[pause_id].in_use
    assert (records[ids["old"]].last_used, records[ids["new"]].last_used) == (1000.0, 1100.0)

    size_old = records[ids["old"]].size
    steps.now, steps.disk = 1300.0, (10 * size_old, size_old)  # 90% used: free 20% - 10% = one old image
    result = gc.garbage_collect()
    assert (result.need, result.freed, result.removed) == (size_old, size_old, (ids["old"],))
    present = {i.id for i in runtime.images()}
    assert ids["old"] not in present and {ids["new"], ids["busy"], pause_id, busybox_id} <= present

    size_new = records[ids["new"]].size
    steps.now, steps.disk = 1400.0, (100 * size_old, size_old)  # 99% used: far more than is eligible
    with pytest.raises(ImageGCError):
        gc.garbage_collect()
    present = {i.id for i in runtime.images()}
    assert ids["new"] not in present and {ids["busy"], pause_id, busybox_id} <= present
    need = 100 * size_old * 20 // 100 - size_old
    assert recorder.events == [("FreeDiskSpaceFailed",
                                f"Failed to garbage collect required amount of images. Attempted to free {need} "
                                f"bytes, but only found {size_new} bytes eligible to free.")]


@pytest.fixture
def kubelet(tmp_path_factory, docker_api, images, iptables, cleanup):
    """A real kubelet (API server in a thread) whose container GC runs every half second and whose image
    GC must act (high threshold 1%) but may remove nothing (a minimum age of 1000 hours): the real disk,
    `docker info` and the Node's events, with no image of this host at risk."""
    rid = uuid.uuid4().hex[:6]
    server = ThreadServer(str(tmp_path_factory.mktemp("apiserver")))
    client = RESTClient.from_kubeconfig(server.start().kubeconfig)
    config = KubeletConfig(
        node_name=f"sktest-{rid}", node_ip="127.0.0.1", address="127.0.0.1", port=0,
        data_dir=str(tmp_path_factory.mktemp("kubelet")), pod_cidr=free_pod_cidr(), pod_bridge=f"sktest{rid}"[:15],
        pod_network="none", veth_prefix="sktest", pod_forward_chain=f"KUBE-SKTEST-{rid}-FWD",
        pod_masquerade_chain=f"KUBE-SKTEST-{rid}-MASQ",
        pleg_relist_period=0.25, container_gc_period=0.5, image_gc_period=0.5,
        image_gc_high_threshold_percent=1, image_gc_low_threshold_percent=0, image_minimum_gc_age=3_600_000.0)
    labels = {TEST_LABEL: rid}
    node = Kubelet(config, client, extra_labels=labels, oom_score_adj=None)

    def stop() -> None:
        try:
            for pod in client.list("/api/v1/namespaces/default/pods").get("items") or []:
                client.delete(f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}", grace_period_seconds=0)
        finally:
            node.stop()
            for entry in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={rid}"}):
                docker_api.remove_container(entry["Id"], force=True)
            if node.parts is not None:
                node.parts.network.manager.remove_host_rules()
            delete_bridge(config.pod_bridge)
            client.close()
            server.stop()
            for spec in (PAUSE, BUSYBOX):
                ensure_image(docker_api, spec)  # only does something if the image GC wrongly removed one

    cleanup(stop)
    node.start()
    return node, client, labels


def test_the_kubelet_runs_both_collectors(kubelet, docker_api):
    node, client, labels = kubelet
    name = node.config.node_name
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gc-live", "namespace": "default"},
            "spec": {"nodeName": name, "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "app", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}}
    pod = client.create("/api/v1/namespaces/default/pods", body)
    uid = pod["metadata"]["uid"]
    sandbox = wait_for(lambda: docker_api.containers(filters={"label": [f"{L.POD_UID}={uid}",
                                                                        f"{L.CONTAINER_TYPE}=podsandbox"]}),
                       30, "the pod's sandbox running")[0]["Id"]
    # Two dead instances of a container the spec no longer has: only the container GC removes the older.
    runtime = DockerRuntime(docker_api, node_name=name)
    dead = []
    for attempt in range(2):
        config = container_config(pod, {"name": "retired", "image": BUSYBOX_IMAGE}, attempt=attempt,
                                  extra_labels=labels, image=BUSYBOX_IMAGE, args=("true",))
        cid = runtime.create_container(sandbox, config, sandbox_config(pod))
        runtime.start_container(cid)
        docker_api.wait(cid, timeout=30)
        dead.append(cid)

    def present() -> set[str]:
        return {c["Id"] for c in docker_api.containers(all=True, filters={"label": f"{L.POD_UID}={uid}"})}

    wait_for(lambda: dead[0] not in present(), 15, "the container GC removing the older dead instance")
    time.sleep(1.5)  # a few more rounds
    assert dead[1] in present() and sandbox in present()

    def failed_events() -> list[dict]:
        return [e for e in client.list("/api/v1/events").get("items") or []
                if e.get("reason") == "FreeDiskSpaceFailed" and e["involvedObject"].get("name") == name]

    event = wait_for(failed_events, 15, "a FreeDiskSpaceFailed event on the Node")[0]
    assert event["type"] == "Warning"
    assert re.fullmatch(r"Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, "
                        r"but only found 0 bytes eligible to free\.", event["message"])
    for ref in (PAUSE_IMAGE, BUSYBOX_IMAGE):
        docker_api.inspect_image(ref)  # still there
