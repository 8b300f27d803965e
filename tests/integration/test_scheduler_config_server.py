"""`slimkube server --scheduler-config FILE` as an operator runs it: a real server process
(SQLite, 127.0.0.1, no kubelet: Node objects only) with a KubeSchedulerConfiguration of two profiles; a pod
naming the second profile's schedulerName is scheduled by that profile (its plugin config packs pods onto one
node; its Scheduled events are reported as that schedulerName), and the scheduler's /healthz, /readyz and
/metrics answer on --scheduler-port with upstream's metric names. A bad file stops the process with exit 2
naming the field. With two servers on one etcd, only the holder of kube-system/kube-scheduler schedules,
while both answer /healthz and /readyz."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
import yaml

from control.apimachinery.meta import format_timestamp
from control.client.errors import NotFound
from control.client.rest import RESTClient
from tests.conftest import unavailable
from tests.support.apiserver import ProcessServer, free_port
from tests.support.controlplane import new_namespace
from tests.support.etcd import ETCD, etcd_binary, running_etcd
from tests.support.polling import wait_until
from tests.support.scheduler_objects import make_node, make_pod

PACKING = "bin-packing"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 5,
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": PACKING, "percentageOfNodesToScore": 100,
         "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 1}]}},
         "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
             "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}}]},
    ]}


def node_object(name: str) -> dict:
    """A Node with room for pods and a fresh Ready heartbeat (no kubelet: the scheduler only reads it)."""
    node = make_node(name, cpu="4")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "lastHeartbeatTime": format_timestamp(datetime.now(UTC))}]
    return node


def node_of(client: RESTClient, ns: str, name: str) -> str:
    return client.get(f"/api/v1/namespaces/{ns}/pods/{name}").get("spec", {}).get("nodeName") or ""


def scheduled_event(client: RESTClient, ns: str, name: str) -> dict | None:
    events = client.list(f"/api/v1/namespaces/{ns}/events",
                         params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return next((event for event in events if event.get("reason") == "Scheduled"), None)


def create_schedulable_node(client: RESTClient, name: str) -> None:
    """A Node without the not-ready taint every new Node gets (TaintNodesByCondition): removing it is the
    node lifecycle controller's job, and it does not run here."""
    client.create("/api/v1/nodes", node_object(name))
    client.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}})


def metric_lines(port: int) -> list[str]:
    return requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text.splitlines()


def answers_ok(port: int, path: str) -> bool:
    answer = requests.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    return answer.status_code == 200 and answer.text == "ok"


@pytest.fixture
def config_file(tmp_path: Path) -> str:
    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return str(path)


@pytest.fixture
def server(tmp_path: Path, config_file: str) -> Iterator[tuple[RESTClient, int]]:
    port = free_port()
    process = ProcessServer(str(tmp_path / "server"), args=(
        "--scheduler-config", config_file, "--scheduler-port", str(port), "--disable", "nodelifecycle"))
    endpoint = process.start()
    try:
        with RESTClient.from_kubeconfig(endpoint.kubeconfig) as client:
            yield client, port
    finally:
        process.stop()


def test_a_pod_of_the_second_profile_is_scheduled_by_it_and_the_scheduler_reports_health_and_metrics(server) -> None:
    client, port = server
    ns = new_namespace(client)
    for name in ("n1", "n2"):
        create_schedulable_node(client, f"{name}-{ns}")
    for i in range(3):
        client.create(f"/api/v1/namespaces/{ns}/pods",
                      make_pod(f"packed{i}", namespace=ns, requests=[{"cpu": "500m"}], scheduler_name=PACKING))
    client.create(f"/api/v1/namespaces/{ns}/pods", make_pod("plain", namespace=ns, requests=[{"cpu": "500m"}]))
    client.create(f"/api/v1/namespaces/{ns}/pods",
                  make_pod("nobodys", namespace=ns, requests=[{"cpu": "500m"}], scheduler_name="no-such-profile"))
    nodes = wait_until(lambda: all(node_of(client, ns, f"packed{i}") for i in range(3)) and
                       {node_of(client, ns, f"packed{i}") for i in range(3)}, 20)
    assert len(nodes) == 1  # MostAllocated packs; the default LeastAllocated would have spread them
    for name, profile in (("packed0", PACKING), ("packed2", PACKING), ("plain", "default-scheduler")):
        event = wait_until(lambda name=name: scheduled_event(client, ns, name), 10)
        assert (event["source"]["component"], event["reportingComponent"]) == (profile, profile), event
    assert node_of(client, ns, "nobodys") == ""  # no profile of that name here: left to another scheduler

    assert answers_ok(port, "/healthz") and answers_ok(port, "/livez")
    assert wait_until(lambda: answers_ok(port, "/readyz"), 10)
    lines = metric_lines(port)
    assert f'scheduler_schedule_attempts_total{{profile="{PACKING}",result="scheduled"}} 3.0' in lines
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in lines
    assert any(line.startswith(f'scheduler_scheduling_attempt_duration_seconds_count{{profile="{PACKING}",'
                               'result="scheduled"} 3.0') for line in lines)
    assert 'scheduler_pending_pods{queue="active"} 0.0' in lines


@pytest.mark.parametrize(("document", "message"), [
    pytest.param({**CONFIG, "percentageOfNodesToScore": 101}, "percentageOfNodesToScore: Invalid value: 101",
                 id="range"),
    pytest.param({**CONFIG, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
                 "profiles[1].schedulerName: Duplicate value: 'a'", id="duplicate"),
])
def test_a_bad_config_file_stops_the_server_with_exit_2_naming_the_field(tmp_path: Path, document, message) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump(document))
    result = subprocess.run([sys.executable, "-m", "slimkube.cli", "server", "--data-dir", str(tmp_path / "data"),
                             "--bind-address", "127.0.0.1", "--port", str(free_port()), "--scheduler-config",
                             str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "--scheduler-config" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[str]:
    binary = etcd_binary()
    if binary is None:
        unavailable("etcd", f"not installed ({ETCD} missing; run ./install.sh)")
    (tmp_path / "etcd").mkdir()
    with running_etcd(tmp_path / "etcd", binary) as (endpoint, _):
        yield endpoint.removeprefix("http://")


def scheduler_holder(client: RESTClient) -> str:
    try:
        lease = client.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler")
    except NotFound:
        return ""
    return lease.get("spec", {}).get("holderIdentity") or ""


def test_only_the_lease_holder_schedules_while_both_answer_health(tmp_path: Path, etcd: str) -> None:
    ports = [free_port(), free_port()]
    servers = [ProcessServer(str(tmp_path / name), datastore=f"etcd://{etcd}",
                             args=("--scheduler-port", str(port), "--disable", "nodelifecycle"))
               for name, port in zip("ab", ports, strict=True)]
    clients: list[RESTClient] = []
    try:
        for server in servers:
            clients.append(RESTClient.from_kubeconfig(server.start().kubeconfig))
        holder = wait_until(lambda: scheduler_holder(clients[0]), 20)
        leader = next(i for i, s in enumerate(servers)
                      if holder.endswith("_" + (Path(s.data_dir) / "server-id").read_text().strip()))
        ns = new_namespace(clients[1])
        create_schedulable_node(clients[1], f"n-{ns}")
        clients[1].create(f"/api/v1/namespaces/{ns}/pods", make_pod("p", namespace=ns, requests=[{"cpu": "100m"}]))
        assert wait_until(lambda: node_of(clients[1], ns, "p"), 20) == f"n-{ns}"
        scheduled = 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
        assert wait_until(lambda: scheduled in metric_lines(ports[leader]), 10)
        follower_lines = metric_lines(ports[1 - leader])
        assert not any(line.startswith("scheduler_schedule_attempts_total{") for line in follower_lines)
        for port in ports:
            assert answers_ok(port, "/healthz") and answers_ok(port, "/readyz")
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
