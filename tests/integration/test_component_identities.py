"""The control plane's components as their upstream users, against a real `slimkube server` process
(slimkube/componentcreds.py, slimkube/controlplane.py): DIR/scheduler.kubeconfig and
DIR/controller-manager.kubeconfig (mode 0600, client certificates of the cluster CA) are `system:kube-scheduler`
and `system:kube-controller-manager` and nothing more (the controller manager's credential may not create a
Pod); both hold their Leases with those credentials; the controllers, each as its service account, still do
their work (a Deployment gets its ReplicaSet and Pods, a Namespace is finalized away); and the server's log
has no 403 for any of them."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.client import errors
from control.client.rest import RESTClient
from tests.support.apiserver import Endpoint, ProcessServer
from tests.support.polling import wait_for

WAIT = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProcessServer, Endpoint]]:
    process = ProcessServer(str(tmp_path_factory.mktemp("server")), args=("--scheduler-port", "0"))
    try:
        yield process, process.start()
    finally:
        process.stop()


def whoami(kubeconfig: str) -> dict:
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        review = client.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                               {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return review["status"]["userInfo"]


@pytest.mark.parametrize("name, user", [
    pytest.param("scheduler", "system:kube-scheduler", id="scheduler"),
    pytest.param("controller-manager", "system:kube-controller-manager", id="controller-manager"),
])
def test_each_component_kubeconfig_is_its_upstream_user(server: tuple[ProcessServer, Endpoint], name: str,
                                                        user: str) -> None:
    process, _ = server
    data = Path(process.data_dir)
    kubeconfig = data / f"{name}.kubeconfig"
    wait_for(kubeconfig.exists, WAIT, f"{kubeconfig} written")  # the components start once /readyz answers
    info = whoami(str(kubeconfig))
    assert info["username"] == user and "system:masters" not in info.get("groups", [])
    for path in (kubeconfig, data / "tls" / f"client-{name}.crt", data / "tls" / f"client-{name}.key"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_the_controller_managers_own_credential_cannot_write_pods(server: tuple[ProcessServer, Endpoint]) -> None:
    process, _ = server
    kubeconfig = Path(process.data_dir) / "controller-manager.kubeconfig"
    wait_for(kubeconfig.exists, WAIT, f"{kubeconfig} written")
    with RESTClient.from_kubeconfig(str(kubeconfig)) as client:
        assert client.list("/api/v1/pods")["items"] is not None  # list and watch everything, as upstream's role
        with pytest.raises(errors.ApiError) as refused:
            client.create("/api/v1/namespaces/default/pods", {"metadata": {"name": "nope"}, "spec": {
                "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
        assert refused.value.code == 403


def test_leases_are_held_and_controllers_work_as_their_service_accounts(
        server: tuple[ProcessServer, Endpoint]) -> None:
    process, endpoint = server
    with RESTClient.from_kubeconfig(endpoint.kubeconfig) as admin:
        for lease in ("kube-scheduler", "kube-controller-manager"):
            wait_for(lambda lease=lease: _holder(admin, lease), WAIT, f"the {lease} Lease held")
        admin.create("/apis/apps/v1/namespaces/default/deployments", {
            "metadata": {"name": "web"}, "spec": {
                "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}}}})
        wait_for(lambda: len(admin.list("/api/v1/namespaces/default/pods",
                                        params={"labelSelector": "app=web"})["items"]) == 2, WAIT,
                 "the Deployment's ReplicaSet made its two Pods")
        admin.create("/api/v1/namespaces", {"metadata": {"name": "sktest-gone"}})
        admin.delete("/api/v1/namespaces/sktest-gone")
        wait_for(lambda: not _exists(admin, "/api/v1/namespaces/sktest-gone"), WAIT, "the namespace finalized")
    assert "forbidden" not in process.log().lower(), process.log()


def _holder(client: RESTClient, name: str) -> str:
    try:
        lease = client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    except errors.NotFound:
        return ""
    return str(lease.get("spec", {}).get("holderIdentity") or "")


def _exists(client: RESTClient, path: str) -> bool:
    try:
        client.get(path)
    except errors.NotFound:
        return False
    return True
