"""The scheduler loop (control/scheduler/scheduler.py) against the shared fake API server with real informers:
pending pods get bound with a Scheduled event, a pod that fits nowhere gets FailedScheduling with upstream's
message and PodScheduled=False, and is bound once a node frees up; other schedulers' pods are left alone; a
failed binding is forgotten and retried; the metrics carry upstream's names."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from control.client.errors import ApiError
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.scheduler.config import validate
from control.scheduler.queue import QueuedPodInfo
from control.scheduler.scheduler import Scheduler
from tests.support.fake_apiserver import FakeAPIServer, api_error
from tests.support.polling import wait_until
from tests.support.scheduler_objects import make_node, make_pod

SCHEDULER = "default-scheduler"


class Harness:
    def __init__(self, server: FakeAPIServer, *, config: dict | None = None) -> None:
        self.server = server
        self.client = server.client(SCHEDULER)
        self.factory = InformerFactory(self.client)
        self.scheduler = Scheduler(self.client, self.factory, config=config)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.scheduler.run, args=(self.stop,), daemon=True)

    def start(self) -> Harness:
        self.factory.start(self.stop)
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)

    def pod(self, name: str) -> dict:
        return self.server.client().get(resource_path("v1", "pods", namespace="default", name=name))

    def node_of(self, name: str) -> str:
        return self.pod(name)["spec"].get("nodeName", "")

    def events(self, reason: str) -> list[dict]:
        events = self.server.client().list(resource_path("v1", "events", namespace="default"))["items"]
        return [e for e in events if e["reason"] == reason]


@pytest.fixture
def harness() -> Iterator[Harness]:
    server = FakeAPIServer(make_node("n1", cpu="2"), make_node("n2", cpu="2"), make_node("n3", cpu="2"))
    h = Harness(server)
    yield h
    h.close()


def test_pending_pods_are_bound_spread_and_announced(harness: Harness) -> None:
    for i in range(6):
        harness.server.add(make_pod(f"p{i}", requests=[{"cpu": "500m"}]))
    harness.start()
    nodes = wait_until(lambda: all(harness.node_of(f"p{i}") for i in range(6)) and
                       [harness.node_of(f"p{i}") for i in range(6)])
    assert sorted(nodes) == ["n1", "n1", "n2", "n2", "n3", "n3"]  # LeastAllocated spreads them evenly
    scheduled = wait_until(lambda: len(harness.events("Scheduled")) == 6 and harness.events("Scheduled"))
    assert {e["message"] for e in scheduled} == {f"Successfully assigned default/p{i} to {harness.node_of(f'p{i}')}"
                                                 for i in range(6)}
    assert all(e["source"]["component"] == SCHEDULER for e in scheduled)
    condition = next(c for c in harness.pod("p0")["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["status"] == "True"
    text = generate_latest(harness.scheduler.metrics.registry).decode()
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 6.0' in text
    assert 'scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"}' \
        in text
    assert 'scheduler_pending_pods{queue="active"} 0.0' in text


def test_a_pod_that_fits_nowhere_fails_with_upstreams_message_then_runs_when_a_node_frees_up(harness: Harness) -> None:
    for node in ("n1", "n2", "n3"):
        harness.server.add(make_pod(f"hog-{node}", requests=[{"cpu": "1500m"}], node_name=node))
    harness.server.add(make_pod("big", requests=[{"cpu": "1"}]))
    harness.start()
    failed = wait_until(lambda: harness.events("FailedScheduling"))
    assert failed[0]["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                                    "available: 3 No preemption victims found for incoming pod.")
    assert failed[0]["type"] == "Warning"
    condition = wait_until(lambda: next((c for c in harness.pod("big")["status"].get("conditions") or []
                                         if c["type"] == "PodScheduled"), None))
    assert (condition["status"], condition["reason"], condition["message"]) == \
        ("False", "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                                   "available: 3 No preemption victims found for incoming pod.")
    assert harness.scheduler.queue.pending()["unschedulable"] == 1
    harness.server.client().delete(resource_path("v1", "pods", namespace="default", name="hog-n2"),
                                   grace_period_seconds=0)
    assert wait_until(lambda: harness.node_of("big"), timeout=10) == "n2"


def test_pods_of_other_schedulers_and_bound_pods_are_left_alone(harness: Harness) -> None:
    harness.server.add(make_pod("mine", scheduler_name=SCHEDULER))
    harness.server.add(make_pod("theirs", scheduler_name="my-scheduler"))
    harness.server.add(make_pod("bound", node_name="n3"))
    harness.start()
    assert wait_until(lambda: harness.node_of("mine"))
    harness.scheduler.recorder.flush()
    assert harness.node_of("theirs") == "" and harness.node_of("bound") == "n3"
    bindings = [a for a in harness.server.actions_of(SCHEDULER, "create") if a.path.endswith("/binding")]
    assert [a.path for a in bindings] == ["/api/v1/namespaces/default/pods/mine/binding"]


def test_a_failed_binding_is_forgotten_and_retried_with_backoff(harness: Harness) -> None:
    failures: list[ApiError] = [api_error(500, "InternalError", "etcd is down")]

    def fail_first_binding(action) -> None:
        if action.verb == "create" and action.path.endswith("/binding") and failures:
            raise failures.pop()

    harness.server.prepend_reactor(fail_first_binding)
    harness.server.add(make_pod("p", requests=[{"cpu": "1"}]))
    harness.start()
    failed = wait_until(lambda: harness.events("FailedScheduling"))
    assert failed[0]["message"].startswith('running Bind plugin "DefaultBinder": 500 InternalError')
    assert wait_until(lambda: harness.node_of("p"), timeout=10)  # after its 1 s backoff
    assert harness.scheduler.cache.pod_count() == 1  # counted once, not twice


def test_a_high_priority_pod_preempts_a_low_priority_one_and_runs_where_it_was_nominated(harness: Harness) -> None:
    for node in ("n1", "n3"):
        harness.server.add(make_pod(f"low-{node}", requests=[{"cpu": "1500m"}], node_name=node, priority=0))
    for i in range(3):
        harness.server.add(make_pod(f"low-n2-{i}", requests=[{"cpu": "600m"}], node_name="n2", priority=0))
    harness.server.add(make_pod("vip", requests=[{"cpu": "1"}], priority=1000))
    harness.start()
    preempted = wait_until(lambda: harness.events("Preempted"))
    victim = preempted[0]["involvedObject"]["name"]
    # n2 would need two victims (a larger sum of priorities); n1 and n3 one each
    assert victim in ("low-n1", "low-n3")
    node = victim.removeprefix("low-")
    assert preempted[0]["message"] == f"Preempted by pod uid-vip on node {node}"
    assert preempted[0]["type"] == "Normal"
    assert wait_until(lambda: harness.pod("vip")["status"].get("nominatedNodeName")) == node
    failed = harness.events("FailedScheduling")
    assert failed[0]["message"] == "0/3 nodes are available: 3 Insufficient cpu."
    path = resource_path("v1", "pods", namespace="default", name=victim)
    terminating = harness.server.client().get(path)  # deleted gracefully: it is terminating
    assert terminating["metadata"]["deletionTimestamp"]
    condition = next(c for c in terminating["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (condition["status"], condition["reason"], condition["message"]) == \
        ("True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    harness.scheduler.recorder.flush()
    assert harness.node_of("vip") == ""  # it waits for its victim
    harness.server.client().delete(path, grace_period_seconds=0)  # the kubelet confirms the deletion
    assert wait_until(lambda: harness.node_of("vip"), timeout=10) == node
    assert {harness.node_of(f"low-{n}") for n in ("n1", "n3") if f"low-{n}" != victim} == {"n1", "n3"} - {node}
    assert all(harness.node_of(f"low-n2-{i}") == "n2" for i in range(3))
    assert wait_until(lambda: harness.scheduler.nominator.node_of(harness.pod("vip")) is None)


def test_each_profile_schedules_its_own_pods_and_reports_as_its_scheduler_name() -> None:
    config = validate({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                       "podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 30,
                       "profiles": [{"schedulerName": SCHEDULER},
                                    {"schedulerName": "bin-packing", "pluginConfig": [{"name": "NodeResourcesFit",
                                     "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]})
    server = FakeAPIServer(make_node("n1", cpu="2"), make_node("n2", cpu="2"))
    harness = Harness(server, config=config)
    try:
        for i in range(3):
            server.add(make_pod(f"packed{i}", requests=[{"cpu": "300m"}], scheduler_name="bin-packing"))
        harness.start()
        nodes = wait_until(lambda: all(harness.node_of(f"packed{i}") for i in range(3)) and
                           {harness.node_of(f"packed{i}") for i in range(3)})
        assert len(nodes) == 1  # MostAllocated packs them on one node (LeastAllocated would spread them)
        scheduled = wait_until(lambda: len(harness.events("Scheduled")) == 3 and harness.events("Scheduled"))
        assert {(e["source"]["component"], e["reportingComponent"]) for e in scheduled} == {
            ("bin-packing", "bin-packing")}
        assert harness.scheduler.queue.backoff_expiry(QueuedPodInfo({}, 100.0, attempts=5)) == 130.0
        text = generate_latest(harness.scheduler.metrics.registry).decode()
        assert 'scheduler_schedule_attempts_total{profile="bin-packing",result="scheduled"} 3.0' in text
    finally:
        harness.close()


def _spread_pod(name: str, *, node: str = "", node_selector: dict | None = None) -> dict:
    pod = make_pod(name, node_name=node, node_selector=node_selector)
    pod["metadata"]["labels"] = {"app": "spread"}
    pod["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}}, "nodeAffinityPolicy": "Ignore"}]
    return pod


def test_a_pod_rejected_by_topology_spread_is_retried_when_an_assigned_pod_comes_or_goes() -> None:
    """n1 holds 2 pods of the group, n2 one, n3 none, and the pod may only go to n1 or n2: skews 3-0 and
    2-0 break maxSkew 1 (nodeAffinityPolicy Ignore: n3 counts). When a group pod lands on n3 (an assigned
    pod added, the event PodTopologySpread registered for) the pod is retried and n2 fits."""
    nodes = [make_node(n, labels={"kubernetes.io/hostname": n, "pool": "a" if n != "n3" else "b"})
             for n in ("n1", "n2", "n3")]
    server = FakeAPIServer(*nodes)
    h = Harness(server)
    try:
        for name, node in (("g1", "n1"), ("g2", "n1"), ("g3", "n2")):
            server.add(_spread_pod(name, node=node))
        server.add(_spread_pod("new", node_selector={"pool": "a"}))
        h.start()
        failed = wait_until(lambda: h.events("FailedScheduling"))
        assert failed[0]["message"] == (
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't "
            "match pod topology spread constraints. preemption: 0/3 nodes are available: 1 Preemption is not "
            "helpful for scheduling, 2 No preemption victims found for incoming pod.")
        wait_until(lambda: h.scheduler.queue.pending()["unschedulable"] == 1)
        server.add(_spread_pod("g4", node="n3"))
        assert wait_until(lambda: h.node_of("new"), timeout=10) == "n2"
    finally:
        h.close()


HOST = "kubernetes.io/hostname"


def _required_affinity(app: str, **term: object) -> dict:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST, **term}]}}


@pytest.fixture
def labelled_harness() -> Iterator[Harness]:
    server = FakeAPIServer(*[make_node(n, cpu="2", labels={HOST: n}) for n in ("n1", "n2", "n3")],
                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
                           {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "databases", "labels": {"team": "db"}}})
    h = Harness(server)
    yield h
    h.close()


def test_required_affinity_follows_pods_of_namespaces_the_selector_picks(labelled_harness: Harness) -> None:
    harness = labelled_harness
    harness.server.add(make_pod("db", namespace="databases", labels={"app": "db"}, node_name="n2"))
    harness.server.add(make_pod("app", affinity=_required_affinity(
        "db", namespaceSelector={"matchLabels": {"team": "db"}})))
    harness.start()
    assert wait_until(lambda: harness.node_of("app")) == "n2"


def test_a_pod_waiting_for_its_affinity_is_retried_when_a_matching_pod_is_bound(labelled_harness: Harness) -> None:
    harness = labelled_harness
    harness.server.add(make_pod("follower", affinity=_required_affinity("cache")))
    harness.start()
    failed = wait_until(lambda: harness.events("FailedScheduling"))
    assert failed[0]["message"] == ("0/3 nodes are available: 3 node(s) didn't match pod affinity rules. preemption: "
                                    "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    wait_until(lambda: harness.scheduler.queue.pending()["unschedulable"] == 1)
    harness.server.add(make_pod("unrelated", labels={"app": "web"}, node_name="n1"))
    wait_until(lambda: harness.scheduler.cache.pod_count() == 1)
    assert harness.scheduler.queue.pending()["unschedulable"] == 1  # the hint leaves it where it is
    harness.server.add(make_pod("cache", labels={"app": "cache"}, node_name="n3"))
    assert wait_until(lambda: harness.node_of("follower"), timeout=10) == "n3"


def test_preemption_spares_the_pod_a_disruption_budget_protects(harness: Harness) -> None:
    for node, started in (("n1", "2026-01-01T00:00:10Z"), ("n3", "2026-01-01T00:00:00Z")):
        low = make_pod(f"low-{node}", requests=[{"cpu": "1500m"}], node_name=node, priority=0, labels={"app": node})
        low["status"] = {"phase": "Running", "startTime": started}  # unprotected, n1's later start would win
        harness.server.add(low)
    for i in range(3):
        harness.server.add(make_pod(f"low-n2-{i}", requests=[{"cpu": "600m"}], node_name="n2", priority=0))
    harness.server.add({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": "keep-n1", "namespace": "default"},
                        "spec": {"selector": {"matchLabels": {"app": "n1"}}, "minAvailable": 1},
                        "status": {"disruptionsAllowed": 0}})
    harness.server.add(make_pod("vip", requests=[{"cpu": "1"}], priority=1000))
    harness.start()
    preempted = wait_until(lambda: harness.events("Preempted"))
    assert preempted[0]["involvedObject"]["name"] == "low-n3"
