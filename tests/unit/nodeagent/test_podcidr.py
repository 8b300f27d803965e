"""Which pod CIDR the kubelet uses (nodeagent/podcidr.py): the Node's, waited for with a log line; the
config's as an override that must match the Node's; a clear error when none comes in time."""

from __future__ import annotations

import logging
import threading

import pytest

from nodeagent.podcidr import PodCIDRError, choose, wait_for_pod_cidr


def node(cidr: str = "") -> dict:
    return {"metadata": {"name": "n1"}, "spec": {"podCIDR": cidr} if cidr else {}}


@pytest.mark.parametrize(("configured", "assigned", "expected"), [
    pytest.param("", "10.244.3.0/24", "10.244.3.0/24", id="the Node's"),
    pytest.param("10.244.3.0/24", "10.244.3.0/24", "10.244.3.0/24", id="override that matches"),
    pytest.param("10.244.3.0/24", "", "10.244.3.0/24", id="override before the Node has one"),
    pytest.param("", "", "", id="neither yet"),
])
def test_choose(configured, assigned, expected):
    assert choose(configured, assigned, node_name="n1") == expected


def test_an_override_that_differs_from_the_node_is_refused():
    with pytest.raises(PodCIDRError, match=r"--pod-cidr 10.244.9.0/24 does not match node n1's spec.podCIDR "
                                           r"10.244.3.0/24"):
        choose("10.244.9.0/24", "10.244.3.0/24", node_name="n1")


def test_waits_for_the_node_ipam_then_uses_the_nodes_cidr(caplog):
    answers = iter([node(), node(), node("10.244.5.0/24")])
    caplog.set_level(logging.INFO, logger="nodeagent.podcidr")
    cidr = wait_for_pod_cidr(lambda: next(answers), node(), configured="", node_name="n1", poll=0.001)
    assert cidr == "10.244.5.0/24"
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "waiting for node n1 to get a spec.podCIDR" in said[0] and "--pod-cidr" in said[0]


def test_gives_up_with_a_clear_error_after_the_timeout_or_on_stop():
    clock = iter(range(0, 1000, 100))
    with pytest.raises(PodCIDRError, match="got no spec.podCIDR in 300 s: is the controller manager's nodeipam"):
        wait_for_pod_cidr(lambda: node(), node(), configured="", node_name="n1", poll=0,
                          monotonic=lambda: float(next(clock)))
    stop = threading.Event()
    stop.set()
    with pytest.raises(PodCIDRError):
        wait_for_pod_cidr(lambda: node(), node(), configured="", node_name="n1", stop=stop)
