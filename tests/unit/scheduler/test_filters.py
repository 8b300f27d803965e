"""Filter plugins, table-driven (upstream's fit_test.go, node_ports_test.go, node_name_test.go,
node_unschedulable_test.go, node_affinity_test.go, taint_toleration_test.go)."""

from __future__ import annotations

import pytest

from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState
from control.scheduler.nodeinfo import node_info
from control.scheduler.plugins.basic import NodeName, NodePorts, NodeUnschedulable
from control.scheduler.plugins.nodeaffinity import NodeAffinity
from control.scheduler.plugins.noderesources import Fit
from control.scheduler.plugins.tainttoleration import TaintToleration
from tests.support.scheduler_objects import make_node, make_pod


def _filter(plugin, pod, node, *existing):
    info = node_info(node, *existing)
    state = CycleState(Snapshot.of(info))
    pre_filter = getattr(plugin, "pre_filter", None)
    if pre_filter is not None and pre_filter(state, pod, state.snapshot).code is Code.SKIP:
        return Code.SUCCESS, ()
    status = plugin.filter(state, pod, info)
    return status.code, status.reasons


OK = (Code.SUCCESS, ())
NODE = make_node("n", cpu="10", memory="20", pods=32, extra={"example.com/foo": "5", "ephemeral-storage": "20"})


def _used(cpu: str, memory: str) -> dict:
    return make_pod("used", requests=[{"cpu": cpu, "memory": memory}], node_name="n")


@pytest.mark.parametrize(("pod", "existing", "expected"), [
    pytest.param(make_pod("p"), [_used("10", "20")], OK, id="no-requests-always-fit"),
    pytest.param(make_pod("p", requests=[{"cpu": "1", "memory": "1"}]), [_used("5", "5")], OK, id="fits"),
    pytest.param(make_pod("p", requests=[{"cpu": "1", "memory": "1"}]), [_used("10", "20")],
                 (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory")), id="both-short"),
    pytest.param(make_pod("p", requests=[{"cpu": "1", "memory": "1"}], init_requests=[{"cpu": "3", "memory": "1"}]),
                 [_used("8", "19")], (Code.UNSCHEDULABLE, ("Insufficient cpu",)), id="init-container-too-big"),
    pytest.param(make_pod("p", requests=[{"cpu": "1", "memory": "1"}], init_requests=[{"cpu": "2", "memory": "1"}]),
                 [_used("8", "19")], OK, id="init-container-fits"),
    pytest.param(make_pod("p", requests=[{"example.com/foo": "3"}]),
                 [make_pod("u", requests=[{"example.com/foo": "3"}], node_name="n")],
                 (Code.UNSCHEDULABLE, ("Insufficient example.com/foo",)), id="extended-resource"),
    pytest.param(make_pod("p", requests=[{"example.com/bar": "1"}]), [],
                 (Code.UNSCHEDULABLE, ("Insufficient example.com/bar",)), id="extended-resource-absent"),
    pytest.param(make_pod("p", requests=[{"ephemeral-storage": "21"}]), [],
                 (Code.UNSCHEDULABLE, ("Insufficient ephemeral-storage",)), id="ephemeral-storage"),
])
def test_node_resources_fit(pod, existing, expected) -> None:
    assert _filter(Fit(), pod, NODE, *existing) == expected


def test_too_many_pods_comes_first() -> None:
    node = make_node("n", cpu="1", memory="1", pods=1)
    existing = make_pod("u", requests=[{"cpu": "1"}], node_name="n")
    assert _filter(Fit(), make_pod("p", requests=[{"cpu": "1"}]), node, existing) == \
        (Code.UNSCHEDULABLE, ("Too many pods", "Insufficient cpu"))


def _port_pod(name: str, *ports: tuple[str, str, int], node_name: str = "") -> dict:
    pod = make_pod(name, node_name=node_name)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": p, "hostPort": p, "hostIP": ip, "protocol": proto}
                                             for ip, proto, p in ports]
    return pod


PORTS_REJECTED = (Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))


@pytest.mark.parametrize(("wanted", "used", "expected"), [
    pytest.param([], [("", "TCP", 80)], OK, id="no-host-ports"),
    pytest.param([("127.0.0.1", "UDP", 8080)], [("127.0.0.1", "UDP", 9090)], OK, id="other-port"),
    pytest.param([("127.0.0.1", "UDP", 8080)], [("127.0.0.1", "UDP", 8080)], PORTS_REJECTED, id="same"),
    pytest.param([("127.0.0.1", "TCP", 8080)], [("127.0.0.1", "UDP", 8080)], OK, id="other-protocol"),
    pytest.param([("127.0.0.2", "UDP", 8080)], [("127.0.0.1", "UDP", 8080)], OK, id="other-ip"),
    pytest.param([("0.0.0.0", "TCP", 8001)], [("127.0.0.1", "TCP", 8001)], PORTS_REJECTED, id="wildcard-wanted"),
    pytest.param([("127.0.0.1", "TCP", 8001)], [("0.0.0.0", "TCP", 8001)], PORTS_REJECTED, id="wildcard-used"),
])
def test_node_ports(wanted, used, expected) -> None:
    existing = [_port_pod("u", *used, node_name="n")]
    assert _filter(NodePorts(), _port_pod("p", *wanted), make_node("n"), *existing) == expected


def test_node_name() -> None:
    assert _filter(NodeName(), make_pod("p"), make_node("n")) == OK
    assert _filter(NodeName(), make_pod("p", node_name="n"), make_node("n")) == OK
    assert _filter(NodeName(), make_pod("p", node_name="other"), make_node("n")) == \
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match the requested node name",))


def test_node_unschedulable_and_its_toleration() -> None:
    cordoned = make_node("n", unschedulable=True)
    assert _filter(NodeUnschedulable(), make_pod("p"), cordoned) == \
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
    tolerant = make_pod("p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                           "effect": "NoSchedule"}])
    assert _filter(NodeUnschedulable(), tolerant, cordoned) == OK
    assert _filter(NodeUnschedulable(), make_pod("p"), make_node("n")) == OK


AFFINITY_REJECTED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))


def _required(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key: str, operator: str, *values: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


LABELS = {"foo": "bar", "gpus": "4", "zone": "a"}


@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(make_pod("p"), OK, id="nothing-asked"),
    pytest.param(make_pod("p", node_selector={"foo": "bar"}), OK, id="selector-matches"),
    pytest.param(make_pod("p", node_selector={"foo": "baz"}), AFFINITY_REJECTED, id="selector-differs"),
    pytest.param(make_pod("p", affinity=_required(_expr("foo", "In", "bar", "value2"))), OK, id="in"),
    pytest.param(make_pod("p", affinity=_required(_expr("foo", "NotIn", "bar"))), AFFINITY_REJECTED, id="not-in"),
    pytest.param(make_pod("p", affinity=_required(_expr("foo", "Exists"))), OK, id="exists"),
    pytest.param(make_pod("p", affinity=_required(_expr("foo", "DoesNotExist"))), AFFINITY_REJECTED,
                 id="does-not-exist"),
    pytest.param(make_pod("p", affinity=_required(_expr("gpus", "Gt", "3"))), OK, id="gt"),
    pytest.param(make_pod("p", affinity=_required(_expr("gpus", "Lt", "4"))), AFFINITY_REJECTED, id="lt"),
    pytest.param(make_pod("p", affinity=_required(_expr("foo", "Gt", "3"))), AFFINITY_REJECTED, id="gt-not-a-number"),
    pytest.param(make_pod("p", affinity=_required(_expr("zone", "In", "b"), _expr("foo", "In", "bar"))), OK,
                 id="terms-are-ored"),
    pytest.param(make_pod("p", affinity=_required({"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}, {"key": "foo", "operator": "In", "values": ["x"]}]})),
        AFFINITY_REJECTED, id="expressions-are-anded"),
    pytest.param(make_pod("p", affinity=_required({})), AFFINITY_REJECTED, id="empty-term-matches-nothing"),
    pytest.param(make_pod("p", affinity=_required({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n"]}]})), OK, id="match-fields-name"),
    pytest.param(make_pod("p", node_selector={"foo": "bar"}, affinity=_required(_expr("zone", "In", "b"))),
                 AFFINITY_REJECTED, id="selector-and-affinity-both-needed"),
])
def test_node_affinity(pod, expected) -> None:
    assert _filter(NodeAffinity(), pod, make_node("n", labels=LABELS)) == expected


NO_SCHEDULE = {"key": "dedicated", "value": "user1", "effect": "NoSchedule"}


@pytest.mark.parametrize(("taints", "tolerations", "expected"), [
    pytest.param([], [], OK, id="no-taints"),
    pytest.param([NO_SCHEDULE], [], (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                     ("node(s) had untolerated taint {dedicated: user1}",)), id="untolerated"),
    pytest.param([NO_SCHEDULE], [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}], OK, id="equal"),
    pytest.param([NO_SCHEDULE], [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: user1}",)),
                 id="other-value"),
    pytest.param([NO_SCHEDULE], [{"key": "dedicated", "operator": "Exists"}], OK, id="exists-any-effect"),
    pytest.param([NO_SCHEDULE], [{"operator": "Exists"}], OK, id="exists-everything"),
    pytest.param([{**NO_SCHEDULE, "effect": "NoExecute"}], [{"key": "dedicated", "value": "user1",
                                                             "effect": "NoSchedule"}],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: user1}",)),
                 id="no-execute-other-effect"),
    pytest.param([{**NO_SCHEDULE, "effect": "PreferNoSchedule"}], [], OK, id="prefer-no-schedule-is-a-score"),
])
def test_taint_toleration(taints, tolerations, expected) -> None:
    assert _filter(TaintToleration(), make_pod("p", tolerations=tolerations or None),
                   make_node("n", taints=taints or None)) == expected
