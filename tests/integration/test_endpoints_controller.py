"""The endpoints controller against a real API server on 127.0.0.1: pods whose status (podIP, Ready) is
set through pods/status, as a kubelet would; Endpoints follow readiness, pod deletion and service
deletion, and carry the last-change-trigger-time of the Ready transition that changed them; the API
server keeps `default/kubernetes` pointing at itself; `slimkube server` runs the controller and
`--disable endpoint` turns it off."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from control.client.errors import Conflict, NotFound
from control.client.rest import RESTClient
from control.controllers.shared.endpoint_util import TRIGGER_TIME_ANNOTATION
from tests.support.apiserver import ProcessServer
from tests.support.controlplane import new_namespace, server_with_controllers
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RESTClient, int]]:
    with server_with_controllers(str(tmp_path_factory.mktemp("apiserver"))) as (rest, endpoint):
        yield rest, int(endpoint.url.rsplit(":", 1)[1])


def make_service(client: RESTClient, ns: str, name: str = "web") -> dict[str, Any]:
    return client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"tier": "front"}},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                                                       {"name": "metrics", "port": 9100, "targetPort": 9100}]}})


def make_pod(client: RESTClient, ns: str, name: str, ip: str, *, ready: bool, app: str = "web") -> dict[str, Any]:
    client.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1",
                                 "ports": [{"name": "http", "containerPort": 8080}]}]}})
    return set_status(client, ns, name, ip, ready=ready)


def set_status(client: RESTClient, ns: str, name: str, ip: str, *, ready: bool,
               since: str | None = None) -> dict[str, Any]:
    """Write the pod's status as a kubelet would: read, change, write; read again on a conflict (a
    scheduler in the same server may bind or mark the pod in between)."""
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    if since is not None:
        condition["lastTransitionTime"] = since
    for _ in range(10):
        current = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        current["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "conditions": [condition]}
        try:
            return client.update(f"/api/v1/namespaces/{ns}/pods/{name}/status", current)
        except Conflict:
            continue
    raise AssertionError(f"pod {ns}/{name}: status write kept conflicting")


def endpoints(client: RESTClient, ns: str, name: str = "web") -> dict[str, Any] | None:
    try:
        return client.get(f"/api/v1/namespaces/{ns}/endpoints/{name}")
    except NotFound:
        return None


def addresses(client: RESTClient, ns: str, name: str = "web") -> dict[str, list[str]] | None:
    """port name → sorted "ip" (ready) / "ip?" (not ready) entries; None when there is no Endpoints."""
    ep = endpoints(client, ns, name)
    if ep is None:
        return None
    result: dict[str, list[str]] = {}
    for subset in ep.get("subsets") or []:
        for port in subset.get("ports") or []:
            entries = result.setdefault(f"{port['name']}:{port['port']}", [])
            entries += [a["ip"] for a in subset.get("addresses") or []]
            entries += [a["ip"] + "?" for a in subset.get("notReadyAddresses") or []]
    return {port: sorted(ips) for port, ips in result.items()}


def test_endpoints_follow_pods_readiness_and_the_service(server):
    client, _ = server
    ns = new_namespace(client)
    make_service(client, ns)
    make_pod(client, ns, "a", "10.244.0.11", ready=True)
    make_pod(client, ns, "b", "10.244.0.12", ready=False)
    make_pod(client, ns, "other", "10.244.0.13", ready=True, app="db")
    want = {"http:8080": ["10.244.0.11", "10.244.0.12?"], "metrics:9100": ["10.244.0.11", "10.244.0.12?"]}
    assert wait_until(lambda: addresses(client, ns) == want, timeout=10), addresses(client, ns)
    ep = endpoints(client, ns)
    assert ep is not None and ep["metadata"]["labels"] == {"tier": "front"}
    ready = ep["subsets"][0]["addresses"][0]
    assert ready["targetRef"]["kind"] == "Pod" and ready["targetRef"]["name"] == "a"
    assert ready["targetRef"]["uid"] == client.get(f"/api/v1/namespaces/{ns}/pods/a")["metadata"]["uid"]

    set_status(client, ns, "b", "10.244.0.12", ready=True, since="2026-01-02T03:04:05Z")
    want = {"http:8080": ["10.244.0.11", "10.244.0.12"], "metrics:9100": ["10.244.0.11", "10.244.0.12"]}
    assert wait_until(lambda: addresses(client, ns) == want, timeout=10), addresses(client, ns)
    settled = endpoints(client, ns)["metadata"]
    assert settled["annotations"] == {TRIGGER_TIME_ANNOTATION: "2026-01-02T03:04:05Z"}  # b's Ready transition
    settled = settled["resourceVersion"]

    client.delete(f"/api/v1/namespaces/{ns}/pods/a")
    want = {"http:8080": ["10.244.0.12"], "metrics:9100": ["10.244.0.12"]}
    assert wait_until(lambda: addresses(client, ns) == want, timeout=10), addresses(client, ns)
    assert endpoints(client, ns)["metadata"]["resourceVersion"] != settled

    client.delete(f"/api/v1/namespaces/{ns}/services/web")
    assert wait_until(lambda: endpoints(client, ns) is None, timeout=10)


def test_no_write_when_nothing_changed_and_selectorless_endpoints_untouched(server):
    client, _ = server
    ns = new_namespace(client)
    make_service(client, ns)
    make_pod(client, ns, "a", "10.244.0.21", ready=True)
    assert wait_until(lambda: addresses(client, ns) == {"http:8080": ["10.244.0.21"], "metrics:9100": ["10.244.0.21"]},
                      timeout=10)
    version = endpoints(client, ns)["metadata"]["resourceVersion"]
    client.patch(f"/api/v1/namespaces/{ns}/pods/a", {"metadata": {"annotations": {"touched": "yes"}}})
    client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual"},
        "spec": {"ports": [{"port": 5432}]}})
    manual = client.create(f"/api/v1/namespaces/{ns}/endpoints", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"},
        "subsets": [{"addresses": [{"ip": "192.0.2.7"}], "ports": [{"port": 5432}]}]})
    make_service(client, ns, "probe")  # a later change the controller must get to: the earlier ones are done
    assert wait_until(lambda: endpoints(client, ns, "probe") is not None, timeout=10)
    assert endpoints(client, ns)["metadata"]["resourceVersion"] == version
    assert endpoints(client, ns, "manual") == manual


def test_kubernetes_service_endpoints_point_at_the_api_server(server):
    client, port = server
    ep = endpoints(client, "default", "kubernetes")
    assert ep is not None
    assert ep["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}],
                              "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]


def test_slimkube_server_runs_the_endpoints_controller_and_disable_stops_it(tmp_path):
    for args, expect_endpoints in (((), True), (("--disable", "endpoint"), False)):
        process = ProcessServer(str(tmp_path / f"server{len(args)}"), args=args)
        endpoint = process.start()
        try:
            with RESTClient.from_kubeconfig(endpoint.kubeconfig) as client:
                kubernetes = endpoints(client, "default", "kubernetes")
                assert kubernetes is not None and kubernetes["subsets"][0]["ports"][0]["port"] == process.port
                ns = new_namespace(client)
                make_service(client, ns)
                make_pod(client, ns, "a", "10.244.0.31", ready=True)
                if expect_endpoints:
                    assert wait_until(lambda ns=ns: addresses(client, ns) == {
                        "http:8080": ["10.244.0.31"], "metrics:9100": ["10.244.0.31"]}, timeout=10), process.log()
                else:
                    time.sleep(1.5)
                    assert endpoints(client, ns) is None
        finally:
            process.stop()
        assert process.process is not None and process.process.returncode == 0, process.log()
