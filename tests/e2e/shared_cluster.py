"""One `slimkube up --nodes 3` shared by the e2e tests that only *use* a cluster (scheduler, controllers,
workloads), so the suite pays for starting three nodes once instead of once per module.

A test asks for `workload_cluster` (the running cluster) and `cluster_namespace` (a fresh namespace of its
own, deleted at its teardown); it must leave the nodes as it found them (no node stop, no lasting labels or
taints — undo them through `cleanup`). Tests that stop nodes or need their own flags keep their own `up`
(tests/e2e/test_multinode.py).

The cluster: nodes named `sktest-<run>`, `…-2`, `…-3`, a node network and pod CIDRs clear of this host's
routes, the safety net routing the service CIDR to an empty bridge in the host's namespace and in each
node's before any test runs, `--node-monitor-grace-period 10s` and `--horizontal-pod-autoscaler-sync-period
3s` (tests/e2e/test_hpa.py). At the session's end: Ctrl-C, `down`,
then everything `up` may have made is removed even when a test failed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field

import pytest

from control.client.rest import RESTClient
from tests.e2e.test_multinode import NODES, cli, prepare_cluster, start_up
from tests.e2e.test_up_down import UpProcess
from tests.support.polling import wait_for

GRACE_SECONDS = 10
HPA_SYNC_SECONDS = 3


@dataclass
class RunningCluster:
    kubeconfig: str
    names: list[str]  # node names, the host's node first
    service_cidr: str
    up: UpProcess
    client: RESTClient  # shared by the session's tests; thread-safe like every RESTClient
    data_dir: str
    logs: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def workload_cluster(root, docker_api, images, iptables, tmp_path_factory: pytest.TempPathFactory,
                     ) -> Iterator[RunningCluster]:
    run_id = uuid.uuid4().hex[:8]
    actions: list[Callable[[], object]] = []
    with ExitStack() as stack:
        stack.callback(lambda: [action() for action in reversed(actions)])
        prepared = prepare_cluster(tmp_path_factory.mktemp("shared") / "up", run_id, docker_api, actions.append)
        up, kubeconfig = start_up(prepared, stack, actions.append,
                                  "--node-monitor-grace-period", f"{GRACE_SECONDS}s",
                                  "--horizontal-pod-autoscaler-sync-period", f"{HPA_SYNC_SECONDS}s")
        client = stack.enter_context(RESTClient.from_kubeconfig(kubeconfig))
        wait_for(lambda: len(client.get("/api/v1/nodes")["items"]) == NODES, 60, f"{NODES} nodes registered")
        yield RunningCluster(kubeconfig=kubeconfig, names=prepared["names"], service_cidr=prepared["service_cidr"],
                             up=up, client=client, data_dir=prepared["data_dir"])
        assert up.interrupt() == 0, "\n".join(up.lines)
        down = cli("down", "--data-dir", prepared["data_dir"])
        assert down.returncode == 0, down.stderr


@pytest.fixture
def cluster_namespace(workload_cluster: RunningCluster, run_id: str) -> Iterator[str]:
    """A namespace of this test's own in the shared cluster; deleted (with what is in it) at teardown."""
    name = f"sktest-{run_id}"
    workload_cluster.client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": name}})
    yield name
    for pod in workload_cluster.client.list(f"/api/v1/namespaces/{name}/pods")["items"]:
        workload_cluster.client.delete(f"/api/v1/namespaces/{name}/pods/{pod['metadata']['name']}",
                                       grace_period_seconds=0)
    workload_cluster.client.delete(f"/api/v1/namespaces/{name}")
