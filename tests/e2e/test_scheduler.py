"""The scheduler on `slimkube up --nodes 3` as a user meets it (issue 14): pods created without
`spec.nodeName` are bound by the scheduler, spread over the three nodes and run there; a nodeSelector is
respected; a pod that fits nowhere (a huge cpu request) stays Pending with upstream's FailedScheduling event
and PodScheduled=False. Then Ctrl-C and `down`.

The cluster (data dir, node network, pod CIDRs, service CIDR, teardown of everything `up` may make) is
tests/e2e/test_multinode.py's `cluster` fixture.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from control.client.rest import RESTClient
from tests.e2e import test_multinode
from tests.e2e.test_multinode import NODES, cli
from tests.e2e.test_up_down import UpProcess, wait_running
from tests.support.apiserver import free_port
from tests.support.polling import wait_for

cluster = test_multinode.cluster  # the same fixture, under its own name
pytestmark = pytest.mark.timeout(180)
SPREAD_PODS = 6
LABEL = "sktest-disk"


def sleeper(name: str, *, node_selector: dict | None = None, cpu: str | None = None) -> dict:
    container = {"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                 "command": ["sleep", "3600"]}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def pod_scheduled(client: RESTClient, name: str) -> dict | None:
    pod = client.get(f"/api/v1/namespaces/default/pods/{name}")
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def failed_scheduling(client: RESTClient, name: str) -> list[dict]:
    events = client.list("/api/v1/namespaces/default/events",
                         params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return [e for e in events if e["reason"] == "FailedScheduling"]


def test_pods_without_node_name_are_spread_selectors_respected_and_unfit_pods_explained(
        cluster: dict, cleanup: Callable) -> None:
    data_dir, names = cluster["data_dir"], cluster["names"]
    up = UpProcess(data_dir, free_port(), "--nodes", str(NODES), "--nodes-cidr", cluster["nodes_cidr"],
                   "--service-cidr", cluster["service_cidr"], bind_address="0.0.0.0")
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")

    with RESTClient.from_kubeconfig(kubeconfig) as client:
        client.patch(f"/api/v1/nodes/{names[2]}", {"metadata": {"labels": {LABEL: "ssd"}}})
        for i in range(SPREAD_PODS):
            client.create("/api/v1/namespaces/default/pods", sleeper(f"spread-{i}"))
        running = [wait_running(client, f"/api/v1/namespaces/default/pods/spread-{i}") for i in range(SPREAD_PODS)]
        placed = [pod["spec"]["nodeName"] for pod in running]
        assert set(placed) == set(names), placed  # LeastAllocated spreads equal nodes
        assert pod_scheduled(client, "spread-0")["status"] == "True"

        client.create("/api/v1/namespaces/default/pods", sleeper("picky", node_selector={LABEL: "ssd"}))
        assert wait_running(client, "/api/v1/namespaces/default/pods/picky")["spec"]["nodeName"] == names[2]

        client.create("/api/v1/namespaces/default/pods", sleeper("huge", cpu="100000"))
        event = wait_for(lambda: failed_scheduling(client, "huge"), 20, "a FailedScheduling event for huge")[0]
        assert event["message"] == f"0/{NODES} nodes are available: {NODES} Insufficient cpu."
        assert event["source"]["component"] == "default-scheduler"
        condition = wait_for(lambda: pod_scheduled(client, "huge"), 10, "huge's PodScheduled condition")
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
        pod = client.get("/api/v1/namespaces/default/pods/huge")
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")

    assert up.interrupt() == 0, "\n".join(up.lines)
    down = cli("down", "--data-dir", data_dir)
    assert down.returncode == 0, down.stderr
