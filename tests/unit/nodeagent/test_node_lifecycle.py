"""NodeReporter against the shared fake API server: registration creates or adopts the Node (podCIDR kept),
reports PATCH the whole status with conditions that only transition on change, the Lease is created
then renewed, and run() survives API errors."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from control.client.errors import ApiError
from nodeagent.config import KubeletConfig
from nodeagent.node_lifecycle import NodeReporter, adoption_patch, lease_path
from nodeagent.node_status import NodeFacts
from tests.support.fake_apiserver import Action, FakeAPIServer
from tests.support.fake_clock import FakeClock

FACTS = NodeFacts(hostname="n1", internal_ip="10.0.0.5", cpus=4, memory_bytes=8 << 30,
                  memory_available_bytes=4 << 30, disk_bytes=100 << 30, disk_available_bytes=50 << 30,
                  pid_max=4194304, pids_in_use=300, kernel_version="6.1", os_image="Debian", architecture="amd64",
                  machine_id="m", boot_id="b", runtime_version="docker://24.0")


KUBELET = "kubelet"


class Harness:
    """The shared fake API server, the kubelet's client on it, and a switch that fails every call."""

    def __init__(self, *objects: dict) -> None:
        self.api = FakeAPIServer(*objects)
        self.client = self.api.client(KUBELET)
        self.fail: ApiError | None = None
        self.api.prepend_reactor(self._fail)

    def _fail(self, action: Action) -> None:
        if self.fail is not None:
            raise self.fail

    @property
    def calls(self) -> list[tuple[str, str]]:
        return [(a.verb, a.path) for a in self.api.actions_of(KUBELET)]

    def get(self, path: str) -> dict:
        return self.api.client("test").get(path)


def Clock() -> FakeClock:
    return FakeClock(wall=datetime(2026, 11, 23, 10, 0, tzinfo=UTC))


def reporter(harness: Harness, *, health=None, clock=None, **config) -> NodeReporter:
    cfg = KubeletConfig(node_name="n1", labels={"tier": "edge"}, **config)
    return NodeReporter(harness.client, cfg, facts=lambda: FACTS, health=health or (lambda: []),
                        clock=(clock or Clock()).now)


def conditions(node: dict) -> dict[str, dict]:
    return {c["type"]: c for c in node["status"]["conditions"]}


def test_register_creates_the_node_with_labels_cidr_and_a_ready_status():
    client = Harness()
    r = reporter(client, pod_cidr="10.244.3.0/24")
    node = r.register()
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert node["metadata"]["labels"]["tier"] == "edge"
    assert node["spec"]["podCIDR"] == "10.244.3.0/24"
    assert conditions(node)["Ready"]["status"] == "True"
    assert node["status"]["capacity"]["cpu"] == "4"
    assert r.ready and r.pod_cidr == "10.244.3.0/24"
    assert ("patch", "/api/v1/nodes/n1/status") in client.calls


def test_register_adopts_an_existing_node_keeping_its_pod_cidr():
    client = Harness({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": "n1", "uid": "old", "resourceVersion": "7",
                                   "labels": {"custom": "x", "kubernetes.io/os": "linux"}},
                      "spec": {"podCIDR": "10.244.9.0/24"}})
    r = reporter(client, pod_cidr="10.244.3.0/24")
    node = r.register()
    assert node["metadata"]["uid"] == "old"
    assert node["spec"]["podCIDR"] == "10.244.9.0/24"
    assert node["metadata"]["labels"]["custom"] == "x"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert r.pod_cidr == "10.244.9.0/24"


def test_adoption_patch_sets_cidr_only_when_the_node_has_none_and_is_empty_when_in_line():
    wanted = {"metadata": {"labels": {"a": "1"}}, "spec": {"podCIDR": "10.1.0.0/24"}}
    assert adoption_patch({"metadata": {}, "spec": {}}, wanted) == {
        "metadata": {"labels": {"a": "1"}}, "spec": {"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24"]}}
    assert adoption_patch({"metadata": {"labels": {"a": "1"}}, "spec": {"podCIDR": "10.9.0.0/24"}}, wanted) == {}


def test_report_moves_heartbeat_but_not_transition_and_goes_not_ready_on_failed_checks():
    client, clock, failed = Harness(), Clock(), []
    r = reporter(client, clock=clock, health=lambda: list(failed))
    first = conditions(r.register())["Ready"]
    clock.step(10)
    second = conditions(r.report())["Ready"]
    assert second["lastHeartbeatTime"] != first["lastHeartbeatTime"]
    assert second["lastTransitionTime"] == first["lastTransitionTime"]
    failed.append("pleg")
    clock.step(10)
    third = conditions(r.report())["Ready"]
    assert third["status"] == "False" and "pleg" in third["message"]
    assert third["lastTransitionTime"] == "2026-11-23T10:00:20Z"
    assert not r.ready


def test_renew_lease_creates_then_updates_with_microtime():
    client, clock = Harness(), Clock()
    r = reporter(client, clock=clock)
    r.register()
    r.renew_lease()
    lease = client.get(lease_path("n1"))
    assert lease["spec"] == {"holderIdentity": "n1", "leaseDurationSeconds": 40,
                             "renewTime": "2026-11-23T10:00:00.000000Z"}
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    clock.step(10)
    r.renew_lease()
    assert client.get(lease_path("n1"))["spec"]["renewTime"] == "2026-11-23T10:00:10.000000Z"


def test_report_failure_clears_ready_and_run_survives_api_errors():
    client = Harness()
    r = reporter(client, node_status_update_frequency=0.02, node_lease_duration_seconds=1)
    r.register()
    client.fail = ApiError(500, "InternalError", "boom")
    stop = threading.Event()
    thread = threading.Thread(target=r.run, args=(stop,))
    thread.start()
    try:
        deadline = threading.Event()
        deadline.wait(0.2)
        assert thread.is_alive() and not r.ready
        client.fail = None
        for _ in range(100):
            if r.ready:
                break
            deadline.wait(0.02)
        assert r.ready
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
