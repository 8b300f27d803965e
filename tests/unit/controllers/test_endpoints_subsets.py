"""control/controllers/endpoints/subsets.py on tables: services × pods → subsets (upstream
endpoints_controller_test.go cases: named and numeric targetPort, a pod lacking the named port, not-ready
pods, publishNotReadyAddresses, terminal and terminating pods, multi-port, repacking) and the
"write only on change" decision."""

from __future__ import annotations

from typing import Any

import pytest

from control.controllers.endpoints.subsets import (
    MAX_CAPACITY,
    OVER_CAPACITY_ANNOTATION,
    compute_subsets,
    desired_endpoints,
    repack_subsets,
    truncate_subsets,
)
from control.controllers.shared.endpoint_util import (
    HEADLESS_LABEL,
    TRIGGER_TIME_ANNOTATION,
    find_port,
    selects,
    should_pod_be_in_endpoints,
)


def service(ports: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
                     if ports is None else ports, **spec}}


def pod(name: str, ip: str | None, *, ready: bool = True, phase: str = "Running", node: str = "n1",
        ports: list[dict[str, Any]] | None = None, deleting: bool = False, restart: str = "Always",
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase,
                              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": meta, "status": status,
            "spec": {"nodeName": node, "restartPolicy": restart,
                     "containers": [{"name": "c", "ports": ports or []}], **spec}}


def addr(name: str, ip: str, node: str = "n1", **extra: str) -> dict[str, Any]:
    return {"ip": ip, **extra, "nodeName": node,
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": name, "uid": f"uid-{name}"}}


HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}
NAMED = [{"name": "web", "containerPort": 8080, "protocol": "TCP"}]


@pytest.mark.parametrize(("svc", "pods", "expected"), [
    pytest.param(service(), [], [], id="no-pods"),
    pytest.param(service(), [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")],
                 [{"addresses": [addr("a", "10.0.0.1"), addr("b", "10.0.0.2")], "ports": [HTTP]}], id="two-ready"),
    pytest.param(service(), [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", ready=False)],
                 [{"addresses": [addr("a", "10.0.0.1")], "notReadyAddresses": [addr("b", "10.0.0.2")],
                   "ports": [HTTP]}], id="ready-and-not-ready-share-a-subset"),
    pytest.param(service(), [pod("a", None), pod("b", "10.0.0.2", phase="Pending", ready=False)],
                 [{"notReadyAddresses": [addr("b", "10.0.0.2")], "ports": [HTTP]}], id="no-ip-left-out"),
    pytest.param(service(), [pod("a", "10.0.0.1", phase="Succeeded"), pod("b", "10.0.0.2", phase="Failed"),
                             pod("c", "10.0.0.3")],
                 [{"addresses": [addr("c", "10.0.0.3")], "ports": [HTTP]}], id="terminal-pods-left-out"),
    pytest.param(service(), [pod("a", "10.0.0.1", deleting=True)], [], id="terminating-left-out"),
    pytest.param(service(publishNotReadyAddresses=True),
                 [pod("a", "10.0.0.1", ready=False), pod("b", "10.0.0.2", deleting=True, ready=False)],
                 [{"addresses": [addr("a", "10.0.0.1"), addr("b", "10.0.0.2")], "ports": [HTTP]}],
                 id="publish-not-ready-all-ready-and-terminating-kept"),
    pytest.param(service([{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}]),
                 [pod("a", "10.0.0.1", ports=NAMED), pod("b", "10.0.0.2")],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [HTTP]}], id="named-port-missing-on-one-pod"),
    pytest.param(service([{"name": "http", "port": 80, "targetPort": "web", "protocol": "UDP"}]),
                 [pod("a", "10.0.0.1", ports=NAMED)], [], id="named-port-protocol-must-match"),
    pytest.param(service([{"port": 80, "protocol": "TCP"}]), [pod("a", "10.0.0.1")],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [{"port": 80, "protocol": "TCP"}]}],
                 id="no-target-port-no-name"),
    pytest.param(service([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                          {"name": "dns", "port": 53, "targetPort": "dns", "protocol": "UDP"}]),
                 [pod("a", "10.0.0.1", ports=[{"name": "dns", "containerPort": 5353, "protocol": "UDP"}]),
                  pod("b", "10.0.0.2")],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [{"name": "dns", "port": 5353, "protocol": "UDP"}]},
                  {"addresses": [addr("a", "10.0.0.1"), addr("b", "10.0.0.2")], "ports": [HTTP]}],
                 id="multi-port-split-by-address-set"),
    pytest.param(service([], clusterIP="None"), [pod("a", "10.0.0.1")],
                 [{"addresses": [addr("a", "10.0.0.1")]}], id="headless-without-ports"),
    pytest.param(service([]), [pod("a", "10.0.0.1")], [], id="no-ports-not-headless"),
    pytest.param(service(), [pod("a", "10.0.0.1", hostname="h", subdomain="web")],
                 [{"addresses": [addr("a", "10.0.0.1", hostname="h")], "ports": [HTTP]}], id="hostname-subdomain"),
    pytest.param(service(), [pod("a", "10.0.0.1", hostname="h", subdomain="other")],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [HTTP]}], id="hostname-other-subdomain"),
    pytest.param(service(), [pod("b", "10.0.0.2"), pod("a", "10.0.0.10")],
                 [{"addresses": [addr("a", "10.0.0.10"), addr("b", "10.0.0.2")], "ports": [HTTP]}],
                 id="addresses-in-string-order"),
])
def test_compute_subsets(svc, pods, expected):
    assert compute_subsets(svc, pods) == expected


def test_repack_merges_ports_with_the_same_addresses_and_ready_wins():
    a, b = addr("a", "10.0.0.1"), addr("b", "10.0.0.2")
    p1, p2 = {"name": "a", "port": 1, "protocol": "TCP"}, {"name": "b", "port": 2, "protocol": "TCP"}
    raw = [{"addresses": [a], "ports": [p2]}, {"addresses": [a], "ports": [p1]},
           {"notReadyAddresses": [a], "ports": [p1]}, {"notReadyAddresses": [b], "ports": [p1]},
           {"notReadyAddresses": [b], "ports": [p2]}]
    assert repack_subsets(raw) == [{"addresses": [a], "notReadyAddresses": [b], "ports": [p1, p2]}]


def test_repack_is_order_independent():
    raw = [{"addresses": [addr(n, f"10.0.0.{i}")], "ports": [{"name": "p", "port": i, "protocol": "TCP"}]}
           for i, n in enumerate("abcd", 1)]
    assert repack_subsets(raw) == repack_subsets(list(reversed(raw)))


@pytest.mark.parametrize(("target", "expected"), [
    pytest.param(8080, 8080, id="number"), pytest.param("8081", 8081, id="numeric-string"),
    pytest.param("web", 9000, id="name"), pytest.param("nope", None, id="missing-name"),
    pytest.param(None, 80, id="unset-means-port"),
])
def test_find_port(target, expected):
    svc_port = {"port": 80, "protocol": "TCP", **({} if target is None else {"targetPort": target})}
    assert find_port(pod("a", "10.0.0.1", ports=[{"name": "web", "containerPort": 9000}]), svc_port) == expected


def test_should_pod_be_in_endpoints():
    assert should_pod_be_in_endpoints(pod("a", "10.0.0.1"), include_terminating=False)
    assert not should_pod_be_in_endpoints(pod("a", "10.0.0.1", deleting=True), include_terminating=False)
    assert should_pod_be_in_endpoints(pod("a", "10.0.0.1", deleting=True), include_terminating=True)
    assert not should_pod_be_in_endpoints(pod("a", "10.0.0.1", phase="Succeeded"), include_terminating=True)


def test_selects_needs_a_selector_and_the_same_namespace():
    assert selects(service(), pod("a", "1.1.1.1"))
    assert not selects(service(selector=None), pod("a", "1.1.1.1"))
    assert not selects(service(selector={}), pod("a", "1.1.1.1"))
    other = pod("a", "1.1.1.1")
    other["metadata"]["namespace"] = "other"
    assert not selects(service(), other)


def test_desired_endpoints_creates_then_only_writes_on_change():
    svc = service()
    subsets = compute_subsets(svc, [pod("a", "10.0.0.1")])
    created = desired_endpoints(svc, subsets, None)
    assert created == {"apiVersion": "v1", "kind": "Endpoints",
                       "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}}, "subsets": subsets}
    stored = {**created, "metadata": {**created["metadata"], "resourceVersion": "7", "uid": "u",
                                      "annotations": {"keep": "me"}}}
    assert desired_endpoints(svc, compute_subsets(svc, [pod("a", "10.0.0.1")]), stored) is None
    changed = desired_endpoints(svc, compute_subsets(svc, [pod("a", "10.0.0.1", ready=False)]), stored)
    assert changed is not None and changed["metadata"]["resourceVersion"] == "7"
    assert changed["metadata"]["annotations"] == {"keep": "me"}
    assert changed["subsets"][0]["notReadyAddresses"][0]["ip"] == "10.0.0.1"
    relabelled = desired_endpoints({**svc, "metadata": {**svc["metadata"], "labels": {"app": "v2"}}}, subsets, stored)
    assert relabelled is not None and relabelled["metadata"]["labels"] == {"app": "v2"}


def test_headless_service_endpoints_carry_the_headless_label():
    svc = service(clusterIP="None")
    wanted = desired_endpoints(svc, [], None)
    assert wanted is not None and wanted["metadata"]["labels"] == {"app": "web", HEADLESS_LABEL: ""}
    assert "subsets" not in wanted


def _ready(*names: str) -> list[dict[str, Any]]:
    return [addr(n, f"10.0.1.{i}") for i, n in enumerate(names, 1)]


def _not_ready(*names: str) -> list[dict[str, Any]]:
    return [addr(n, f"10.0.2.{i}") for i, n in enumerate(names, 1)]


def _counts(subsets: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(len(s.get("addresses") or ()), len(s.get("notReadyAddresses") or ())) for s in subsets]


P1, P2, P3 = ({"name": f"p{i}", "port": i, "protocol": "TCP"} for i in (1, 2, 3))


@pytest.mark.parametrize(("subsets", "counts", "truncated"), [
    pytest.param([{"addresses": _ready(*"abcd"), "notReadyAddresses": _not_ready(*"ef"), "ports": [P1]}],
                 [(4, 2)], False, id="under-capacity-untouched"),
    pytest.param([{"addresses": _ready(*"abcdefgh"), "notReadyAddresses": _not_ready(*"ij"), "ports": [P1]}],
                 [(8, 2)], False, id="exactly-at-capacity-untouched"),
    pytest.param([{"addresses": _ready(*"abcd"), "notReadyAddresses": _not_ready(*"efg"), "ports": [P1]},
                  {"addresses": _ready(*"hi"), "notReadyAddresses": _not_ready(*"jkl"), "ports": [P2]}],
                 [(4, 2), (2, 2)], True, id="ready-kept-not-ready-shared"),
    pytest.param([{"addresses": _ready(*"abcdef"), "notReadyAddresses": _not_ready(*"xy"), "ports": [P1]},
                  {"addresses": _ready(*"ghijkl"), "ports": [P2]}],
                 [(5, 0), (5, 0)], True, id="ready-over-cap-not-ready-dropped"),
    pytest.param([{"addresses": _ready("a"), "ports": [P1]}, {"addresses": _ready(*"bc"), "ports": [P2]},
                  {"addresses": _ready(*"defghijklm"), "ports": [P3]}],
                 [(1, 0), (2, 0), (7, 0)], True, id="rounded-up-last-subset-gets-the-rest"),
])
def test_truncate_subsets_keeps_ready_first_and_shares_the_cap(subsets, counts, truncated):
    """Upstream TestTruncateEndpoints-style cases on a cap of 10: each subset gets ceil(share), in order."""
    result, was_truncated = truncate_subsets(subsets, capacity=10)
    assert was_truncated is truncated
    assert _counts(result) == counts
    assert sum(a + b for a, b in _counts(result)) <= 10
    # the first addresses of each sorted list are the ones kept (emptied subsets are dropped: not strict)
    for before, after in zip(subsets, result, strict=False):
        for field in ("addresses", "notReadyAddresses"):
            assert after.get(field, []) == (before.get(field) or [])[:len(after.get(field, []))]
        assert after["ports"] == before["ports"]


def test_truncate_subsets_proportional_shares():
    ready = [{"addresses": [addr(f"r{i}-{j}", f"10.{i}.0.{j}") for j in range(n)], "ports": [port]}
             for i, (n, port) in enumerate(((1, P1), (2, P2), (7, P3)))]
    result, truncated = truncate_subsets(ready, capacity=5)
    assert truncated and _counts(result) == [(1, 0), (1, 0), (3, 0)]  # ceil(.5)=1, ceil(1)=1, ceil(3.5)=4 → 3 left


def test_a_subset_left_without_addresses_is_dropped():
    """Ready addresses over the cap: a subset of only not-ready addresses loses them all, and one that comes
    after the cap is used up gets none; neither stays behind as a subset of bare ports."""
    subsets = [{"notReadyAddresses": _not_ready(*"xy"), "ports": [P1]},
               {"addresses": _ready(*"abcdefgh"), "ports": [P2]},
               {"addresses": _ready(*"ijkl"), "ports": [P3]}]
    result, truncated = truncate_subsets(subsets, capacity=8)
    assert truncated and [s["ports"] for s in result] == [[P2], [P3]]
    assert _counts(result) == [(6, 0), (2, 0)]  # ceil(8 × 8/12) = 6, then the 2 left
    three = [{"addresses": _ready(*names), "ports": [p]} for names, p in (("abc", P1), ("def", P2), ("ghi", P3))]
    result, _ = truncate_subsets(three, capacity=2)
    assert [s["ports"] for s in result] == [[P1], [P2]] and _counts(result) == [(1, 0), (1, 0)]  # ceil(2/3) each


def test_desired_endpoints_truncates_at_1000_and_annotates_until_under_cap_again():
    svc = service()
    pods = [pod(f"p{i}", f"10.1.{i // 250}.{i % 250}") for i in range(1001)]
    subsets = compute_subsets(svc, pods)
    created = desired_endpoints(svc, subsets, None)
    assert created is not None
    assert sum(len(s.get("addresses", [])) for s in created["subsets"]) == MAX_CAPACITY
    assert created["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
    stored = {**created, "metadata": {**created["metadata"], "resourceVersion": "3"}}
    assert desired_endpoints(svc, compute_subsets(svc, pods), stored) is None  # still over: nothing new
    unannotated = {**stored, "metadata": {**stored["metadata"], "annotations": {"keep": "me"}}}
    fixed = desired_endpoints(svc, subsets, unannotated)
    assert fixed is not None
    assert fixed["metadata"]["annotations"] == {"keep": "me", OVER_CAPACITY_ANNOTATION: "truncated"}
    under = desired_endpoints(svc, compute_subsets(svc, pods[:999]), stored)
    assert under is not None and "annotations" not in under["metadata"]
    assert sum(len(s.get("addresses", [])) for s in under["subsets"]) == 999
    at_cap = desired_endpoints(svc, compute_subsets(svc, pods[:1000]), stored)
    assert at_cap is not None and "annotations" not in at_cap["metadata"]  # the subsets match, the annotation not


def test_trigger_time_annotation_rides_along_but_never_causes_a_write():
    svc = service()
    subsets = compute_subsets(svc, [pod("a", "10.0.0.1")])
    created = desired_endpoints(svc, subsets, None, trigger_time="2026-01-01T00:00:00Z")
    assert created is not None
    assert created["metadata"]["annotations"] == {TRIGGER_TIME_ANNOTATION: "2026-01-01T00:00:00Z"}
    stored = {**created, "metadata": {**created["metadata"], "resourceVersion": "7"}}
    assert desired_endpoints(svc, subsets, stored, trigger_time="2026-01-02T00:00:00.5Z") is None
    assert desired_endpoints(svc, subsets, stored) is None
    not_ready = compute_subsets(svc, [pod("a", "10.0.0.1", ready=False)])
    updated = desired_endpoints(svc, not_ready, stored, trigger_time="2026-01-02T00:00:00.5Z")
    assert updated is not None and updated["metadata"]["annotations"] == {
        TRIGGER_TIME_ANNOTATION: "2026-01-02T00:00:00.5Z"}
    cleared = desired_endpoints(svc, not_ready, stored)  # no trigger time: upstream removes the annotation
    assert cleared is not None and "annotations" not in cleared["metadata"]
