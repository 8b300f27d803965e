"""Two `slimkube server`s on one etcd: both serve the API, the controller manager runs
only on the holder of the Lease kube-system/kube-controller-manager, and after kill -9 of the holder the
other takes the Lease over within the lease duration and its controllers act.

Short election timings (lease 4 s, renew deadline 3 s, retry 1 s) keep the test quick; the defaults are
upstream's 15 s / 10 s / 2 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from control.apimachinery.meta import format_timestamp
from control.client.errors import NotFound
from control.client.rest import RESTClient
from tests.conftest import unavailable
from tests.integration.test_endpoints_controller import addresses, make_pod, make_service
from tests.support.apiserver import ProcessServer
from tests.support.controlplane import new_namespace
from tests.support.etcd import ETCD, etcd_binary, running_etcd
from tests.support.polling import wait_until
from tests.support.scheduler_objects import make_node
from tests.support.scheduler_objects import make_pod as scheduler_pod

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
LEASE = f"{LEASES}/kube-controller-manager"
SCHEDULER_LEASE = f"{LEASES}/kube-scheduler"
LEASE_SECONDS = 4
RETRY_SECONDS = 1
ELECTION = ("--leader-elect-lease-duration", f"{LEASE_SECONDS}s", "--leader-elect-renew-deadline", "3s",
            "--leader-elect-retry-period", f"{RETRY_SECONDS}s")
TAKEOVER_SECONDS = LEASE_SECONDS + 2 * 1.2 * RETRY_SECONDS + 2
STARTED = "controller manager: started"


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[str]:
    binary = etcd_binary()
    if binary is None:
        unavailable("etcd", f"not installed ({ETCD} missing; run ./install.sh)")
    (tmp_path / "etcd").mkdir()
    with running_etcd(tmp_path / "etcd", binary) as (endpoint, _):
        yield endpoint.removeprefix("http://")


def holder(client: RESTClient, lease: str = LEASE) -> str:
    try:
        return client.get(lease).get("spec", {}).get("holderIdentity") or ""
    except NotFound:
        return ""


def started(server: ProcessServer) -> bool:
    """Whether the server's whole log (not just its tail) says its controller manager started."""
    return STARTED in Path(server.log_path).read_text(errors="replace")


def node_object(name: str) -> dict:
    """A Node with room for pods and a fresh Ready heartbeat (no kubelet: the scheduler only reads it)."""
    node = make_node(name)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "lastHeartbeatTime": format_timestamp(datetime.now(UTC))}]
    return node


def bound_to(client: RESTClient, ns: str, name: str) -> str:
    return client.get(f"/api/v1/namespaces/{ns}/pods/{name}").get("spec", {}).get("nodeName") or ""


def scheduled_events(client: RESTClient, ns: str, name: str) -> int:
    events = client.list(f"/api/v1/namespaces/{ns}/events",
                         params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return sum(event.get("count") or 1 for event in events if event.get("reason") == "Scheduled")


def identity_suffix(server: ProcessServer) -> str:
    return "_" + (Path(server.data_dir) / "server-id").read_text().strip()


def test_two_servers_run_the_controllers_once_and_fail_over(tmp_path: Path, etcd: str):
    servers = [ProcessServer(str(tmp_path / name), datastore=f"etcd://{etcd}", args=ELECTION) for name in "ab"]
    clients: list[RESTClient] = []
    try:
        for server in servers:
            endpoint = server.start()
            clients.append(RESTClient.from_kubeconfig(endpoint.kubeconfig))
        # One of the two holds the Lease; both answer it the same (they share the store).
        assert wait_until(lambda: holder(clients[0]) != "", timeout=15), [s.log() for s in servers]
        leader_index = next(i for i, s in enumerate(servers) if holder(clients[0]).endswith(identity_suffix(s)))
        leader, follower = servers[leader_index], servers[1 - leader_index]
        follower_client = clients[1 - leader_index]
        assert holder(clients[1]) == holder(clients[0])
        assert wait_until(lambda: started(leader), timeout=10), leader.log()
        assert not started(follower)

        # Written through the follower, acted on by the leader's endpoints controller.
        ns = new_namespace(follower_client)
        make_service(follower_client, ns)
        make_pod(follower_client, ns, "a", "10.244.0.41", ready=True)
        assert wait_until(lambda: (addresses(follower_client, ns) or {}).get("http:8080") == ["10.244.0.41"],
                          timeout=10)

        # The scheduler (whichever server holds kube-scheduler) binds a pod once.
        follower_client.create("/api/v1/nodes", node_object(f"sk-{ns}"))
        follower_client.create(f"/api/v1/namespaces/{ns}/pods", scheduler_pod("s1", namespace=ns))
        assert wait_until(lambda: bound_to(follower_client, ns, "s1") == f"sk-{ns}", timeout=15), \
            [s.log() for s in servers]

        # kill -9 of the leader: the follower takes over within the lease duration counted from its last
        # observation of the leader's renewal, i.e. at most one jittered retry after the renewal and one
        # after the expiry, plus slack for a loaded 2-core machine.
        leader.kill()
        assert wait_until(lambda: holder(follower_client).endswith(identity_suffix(follower)),
                          timeout=TAKEOVER_SECONDS), follower.log()
        assert wait_until(lambda: started(follower), timeout=10), follower.log()
        # Both parts now run on the survivor: the next pod is scheduled, the first was scheduled once.
        assert wait_until(lambda: holder(follower_client, SCHEDULER_LEASE).endswith(identity_suffix(follower)),
                          timeout=TAKEOVER_SECONDS), follower.log()
        follower_client.create(f"/api/v1/namespaces/{ns}/pods", scheduler_pod("s2", namespace=ns))
        assert wait_until(lambda: bound_to(follower_client, ns, "s2") == f"sk-{ns}", timeout=15), follower.log()
        assert scheduled_events(follower_client, ns, "s1") == 1
        make_service(follower_client, ns, name="api")
        make_pod(follower_client, ns, "b", "10.244.0.42", ready=True, app="api")
        assert wait_until(lambda: (addresses(follower_client, ns, "api") or {}).get("http:8080") == ["10.244.0.42"],
                          timeout=10), follower.log()
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
