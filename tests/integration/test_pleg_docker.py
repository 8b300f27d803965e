"""The PLEG relisting the real dockerd: a pod's sandbox and container are seen started, the container
dying and being removed, each within about two relists, and the pod cache follows."""

from __future__ import annotations

import threading
import time

from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.pleg import EventType, GenericPLEG, PodLifecycleEvent
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.types import ContainerState
from tests.support.cri_configs import container_config, sandbox_config
from tests.support.substrate import TEST_LABEL

PERIOD = 0.2


class Recorder:
    def __init__(self) -> None:
        self.events: list[PodLifecycleEvent] = []
        self.changed = threading.Condition()

    def __call__(self, uid: str, events: tuple[PodLifecycleEvent, ...]) -> None:
        with self.changed:
            self.events += events
            self.changed.notify_all()

    def wait_for(self, kind: EventType, cid: str, within: float) -> float:
        """Seconds until the event arrived; fails if it did not within `within`."""
        began = time.monotonic()
        with self.changed:
            seen = self.changed.wait_for(lambda: any(e.type is kind and e.container_id == cid for e in self.events),
                                         timeout=within)
        assert seen, f"no {kind.value} for {cid[:12]} within {within}s; got {self.events}"
        return time.monotonic() - began


def test_pleg_reports_real_container_lifecycle(docker_api, images, run_id, container_labels, cleanup):
    node = f"sktest-{run_id}"
    runtime = DockerRuntime(docker_api, node_name=node)

    def remove_ours() -> None:
        for c in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={run_id}"}):
            runtime.remove_container(c["Id"])

    cleanup(remove_ours)
    uid = f"uid-{run_id}"
    pod = {"metadata": {"name": f"p-{run_id}", "namespace": "sktest", "uid": uid}, "spec": {}}
    recorder = Recorder()
    pleg = GenericPLEG(runtime, on_events=recorder, period=PERIOD)
    pleg.start()
    cleanup(pleg.stop)
    within = 2 * PERIOD + 1.0  # two relists plus Docker's own latency

    sandbox = runtime.run_sandbox(sandbox_config(pod, attempt=0, extra_labels=container_labels))
    recorder.wait_for(EventType.CONTAINER_STARTED, sandbox, within)
    spec = {"name": "app", "image": BUSYBOX_IMAGE}
    config = container_config(pod, spec, extra_labels=container_labels, image=BUSYBOX_IMAGE,
                              args=("sh", "-c", "sleep 0.6; exit 4"))
    app = runtime.create_container(sandbox, config, sandbox_config(pod))
    acted = pleg.clock()
    runtime.start_container(app)
    recorder.wait_for(EventType.CONTAINER_STARTED, app, within)
    recorder.wait_for(EventType.CONTAINER_DIED, app, 0.6 + within)

    status = pleg.cache.get_newer_than(uid, acted, timeout=within)
    assert status is not None
    latest = status.latest("app")
    assert (latest.id, latest.state, latest.exit_code, latest.reason) == (app, ContainerState.EXITED, 4, "Error")
    assert pleg.healthy() == (True, "")

    runtime.remove_container(app)
    recorder.wait_for(EventType.CONTAINER_REMOVED, app, within)
    runtime.stop_sandbox(sandbox)
    recorder.wait_for(EventType.CONTAINER_DIED, sandbox, within)
    runtime.remove_sandbox(sandbox)
    recorder.wait_for(EventType.CONTAINER_REMOVED, sandbox, within)
    deadline = time.monotonic() + within
    while uid in pleg.cache.uids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uid not in pleg.cache.uids()
    assert not [e for e in recorder.events if e.pod_uid != uid]
