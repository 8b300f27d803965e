"""The kubelet end to end: a real API server (in a thread), the real dockerd, the real kernel network.

One Kubelet (own bridge, chains, podCIDR and data dir) serves the whole module; pods are created through
the API with spec.nodeName set (no scheduler needed). Checked:
- a pod with an init container and two app containers reaches Running with a pod IP; the host reaches
  busybox httpd at podIP:8080; the pod's containers reach each other on localhost;
- a crashing container shows CrashLoopBackOff with a growing restartCount and back-off;
- an unknown image shows ErrImagePull then ImagePullBackOff; a bad command RunContainerError, then
  CrashLoopBackOff; the kubelet keeps serving the other pods;
- a deleted pod's preStop hook runs (it writes into a hostPath) and the pod is gone within its grace;
- a static pod file runs, its status shows on its mirror pod; removing the file removes both;
- a kubelet stopped and started again on the same data dir leaves running containers untouched, keeps
  restartCount, hands a new pod an address no other pod holds, and kills the containers of a pod deleted
  from the API while it was away (an orphan).
Everything this module made is removed at the end, even on failure: pods through the API, then the
kubelet stopped, then containers by label, the bridge and our chains.
"""

from __future__ import annotations

import ipaddress
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from control.client.errors import NotFound
from control.client.rest import RESTClient
from nodeagent.config import KubeletConfig
from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.kubelet import Kubelet
from nodeagent.network.bridge import delete_bridge
from nodeagent.network.ipam import LocalIPAM, state_path
from tests.conftest import TEST_LABEL
from tests.support.apiserver import ThreadServer
from tests.support.hostnet import free_pod_cidr
from tests.support.polling import wait_for

NAMESPACE = "default"
STATIC_MANIFEST = f"""apiVersion: v1
kind: Pod
metadata: {{name: static-web, namespace: default}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{{name: web, image: "{BUSYBOX_IMAGE}", imagePullPolicy: Never, command: ["httpd", "-f"]}}]
"""


class Node:
    """The module's kubelet and what the tests need to reach it."""

    def __init__(self, client: RESTClient, config: KubeletConfig, labels: dict[str, str]) -> None:
        self.client = client
        self.config = config
        self.labels = labels
        self.kubelet = Kubelet(config, client, extra_labels=labels, oom_score_adj=None)

    def restart(self) -> None:
        self.kubelet.stop()
        self.kubelet = Kubelet(self.config, self.client, extra_labels=self.labels, oom_score_adj=None)
        self.kubelet.start()

    def create(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"nodeName": self.config.node_name, "terminationGracePeriodSeconds": 3, **spec}}
        return self.client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", body)

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        except NotFound:
            return None

    def statuses(self, name: str) -> dict[str, dict[str, Any]]:
        pod = self.get(name) or {}
        items = (pod.get("status") or {}).get("containerStatuses") or []
        return {s["name"]: s for s in items}


def container(name: str, *command: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": list(command), **extra}


@pytest.fixture(scope="module")
def node(tmp_path_factory, docker_api, images, iptables) -> Iterator[Node]:
    rid = uuid.uuid4().hex[:6]
    server = ThreadServer(str(tmp_path_factory.mktemp("apiserver")))
    client = RESTClient.from_kubeconfig(server.start().kubeconfig)
    config = KubeletConfig(
        node_name=f"sktest-{rid}", node_ip="127.0.0.1", address="127.0.0.1", port=0,
        data_dir=str(tmp_path_factory.mktemp("kubelet")), pod_cidr=free_pod_cidr(), pod_bridge=f"sktest{rid}"[:15],
        pod_network="none", veth_prefix="sktest", pod_forward_chain=f"KUBE-SKTEST-{rid}-FWD",
        pod_masquerade_chain=f"KUBE-SKTEST-{rid}-MASQ",
        static_pod_path=str(tmp_path_factory.mktemp("manifests")), file_check_frequency=0.5,
        sync_frequency=5.0, node_status_update_frequency=5.0, pleg_relist_period=0.25,
        crash_loop_backoff_initial=1.0, crash_loop_backoff_max=8.0)
    labels = {TEST_LABEL: rid}
    state = Node(client, config, labels)
    try:
        state.kubelet.start()
        yield state
    finally:
        try:
            for pod in client.list(f"/api/v1/namespaces/{NAMESPACE}/pods").get("items") or []:
                try:
                    client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}",
                                  grace_period_seconds=1)
                except NotFound:
                    pass
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and client.list(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]:
                time.sleep(0.3)
        finally:
            state.kubelet.stop()
            for entry in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={rid}"}):
                docker_api.remove_container(entry["Id"], force=True)
            if state.kubelet.parts is not None:
                state.kubelet.parts.network.manager.remove_host_rules()
            delete_bridge(config.pod_bridge)
            client.close()
            server.stop()


def get_direct(url: str) -> requests.Response:
    with requests.Session() as session:
        session.trust_env = False  # a pod IP is never reached through a proxy
        return session.get(url, timeout=3)


def test_pod_with_init_and_two_containers_runs_and_serves(node: Node, docker_api) -> None:
    node.create("web", {
        "volumes": [{"name": "www", "emptyDir": {}}],
        "initContainers": [container("init", "sh", "-c", "echo hello-from-$(hostname) > /www/index.html",
                                     volumeMounts=[{"name": "www", "mountPath": "/www"}])],
        "containers": [
            container("httpd", "httpd", "-f", "-p", "8080", "-h", "/www",
                      volumeMounts=[{"name": "www", "mountPath": "/www"}], ports=[{"containerPort": 8080}]),
            container("side", "sleep", "3600"),
        ]})
    pod = wait_for(lambda: (p := node.get("web")) and (p.get("status") or {}).get("phase") == "Running"
                   and all(s.get("ready") for s in p["status"].get("containerStatuses") or [None]) and p,
                   30, "pod web Running and ready", interval=0.2)
    ip = pod["status"]["podIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(node.config.pod_cidr)
    assert pod["status"]["hostIP"] == "127.0.0.1"
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    response = wait_for(lambda: _try(lambda: get_direct(f"http://{ip}:8080/")), 10, "httpd answering", interval=0.2)
    assert response.status_code == 200 and response.text.strip() == "hello-from-web"
    side = node.statuses("web")["side"]["containerID"].removeprefix("docker://")
    exec_id = docker_api.exec_create(side, ["wget", "-qO-", "http://127.0.0.1:8080/"])["Id"]
    assert docker_api.exec_start(exec_id).decode().strip() == "hello-from-web"
    assert docker_api.exec_inspect(exec_id)["ExitCode"] == 0


def _try(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except requests.RequestException:
        return None


def test_crash_loop_backs_off_and_bad_specs_show_reasons(node: Node) -> None:
    node.create("crash", {"containers": [container("crash", "sh", "-c", "exit 3")]})
    node.create("badimage", {"containers": [{"name": "c", "image": "127.0.0.1:1/sktest/none:1",
                                              "imagePullPolicy": "Always"}]})
    node.create("badcmd", {"containers": [container("c", "/no/such/binary")]})
    seen: dict[str, set[str]] = {"crash": set(), "badimage": set(), "badcmd": set()}
    messages: list[str] = []
    restarts: list[int] = []

    def observe() -> bool:
        for name, reasons in seen.items():
            for status in node.statuses(name).values():
                waiting = (status.get("state") or {}).get("waiting") or {}
                if waiting.get("reason"):
                    reasons.add(waiting["reason"])
                if name == "crash":
                    restarts.append(status.get("restartCount", 0))
                    if waiting.get("reason") == "CrashLoopBackOff":
                        messages.append(waiting.get("message", ""))
        return ({"CrashLoopBackOff"} <= seen["crash"] and max(restarts, default=0) >= 3
                and {"ErrImagePull", "ImagePullBackOff"} <= seen["badimage"]
                and {"RunContainerError", "CrashLoopBackOff"} <= seen["badcmd"])

    wait_for(observe, 40, lambda: f"crash-loop and error reasons (seen {seen}, restarts {restarts[-3:]}, "
                                  f"pods {[node.get(n) for n in seen]})", interval=0.2)
    delays = sorted({m.split()[1] for m in messages if m.startswith("back-off ")}, key=lambda d: int(d[:-1]))
    assert len(delays) >= 2, messages  # e.g. 1s then 2s: the back-off grows
    assert "restarting failed container=crash pod=crash_default(" in messages[-1]
    terminated = node.statuses("crash")["crash"]["lastState"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"
    assert node.kubelet.is_ready() or node.kubelet.health() == []
    for name in seen:
        node.client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", grace_period_seconds=1)


def test_deleted_pod_runs_prestop_and_goes_within_grace(node: Node, tmp_path) -> None:
    tmp_path.chmod(0o777)
    hook = {"preStop": {"exec": {"command": ["sh", "-c", "echo bye > /host/prestop"]}}}
    node.create("stopper", {
        "terminationGracePeriodSeconds": 4,
        "volumes": [{"name": "host", "hostPath": {"path": str(tmp_path), "type": "Directory"}}],
        "containers": [container("main", "sleep", "3600", lifecycle=hook,
                                 volumeMounts=[{"name": "host", "mountPath": "/host"}])]})
    wait_for(lambda: ((node.get("stopper") or {}).get("status") or {}).get("phase") == "Running", 30, "Running",
             interval=0.2)
    started = time.monotonic()
    node.client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/stopper")
    wait_for(lambda: node.get("stopper") is None, 15, "pod stopper removed", interval=0.2)
    assert time.monotonic() - started < 4 + 4  # grace, plus a relist and the API round trips
    assert (tmp_path / "prestop").read_text().strip() == "bye"


def test_static_pod_runs_with_its_status_on_the_mirror_pod(node: Node, docker_api) -> None:
    manifest = Path(node.config.static_pod_path) / "static.yaml"
    manifest.write_text(STATIC_MANIFEST)
    name = f"static-web-{node.config.node_name}"
    mirror = wait_for(lambda: (p := node.get(name)) and (p.get("status") or {}).get("phase") == "Running" and p,
                      30, "the mirror pod of a static pod Running", interval=0.2)
    assert "kubernetes.io/config.mirror" in mirror["metadata"]["annotations"] and mirror["status"]["podIP"]
    manifest.unlink()
    wait_for(lambda: node.get(name) is None and not docker_api.containers(
        all=True, filters={"label": [f"{TEST_LABEL}={node.labels[TEST_LABEL]}", "io.kubernetes.pod.name=" + name]}),
        30, "the static pod and its mirror gone", interval=0.2)


def test_restarted_kubelet_adopts_pods_and_kills_orphans(node: Node, docker_api) -> None:
    wait_for(lambda: ((node.get("web") or {}).get("status") or {}).get("phase") == "Running", 30, "web Running",
             interval=0.2)
    quick_exit = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    orphan = node.create("orphan", {"containers": [container("c", *quick_exit)]})
    wait_for(lambda: ((node.get("orphan") or {}).get("status") or {}).get("phase") == "Running", 30,
             "orphan Running", interval=0.2)
    before = node.statuses("web")
    ip_before = node.get("web")["status"]["podIP"]
    node.kubelet.stop()
    node.client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/orphan", grace_period_seconds=0)  # while away
    node.restart()
    node.create("late", {"containers": [container("c", "sleep", "3600")]})
    late = wait_for(lambda: (p := node.get("late")) and (p.get("status") or {}).get("podIP") and p, 30, "late IP",
                    interval=0.2)
    time.sleep(2 * node.config.pleg_relist_period + 1)  # a few syncs of the adopted pod
    after = node.statuses("web")
    for name, status in before.items():
        assert after[name]["containerID"] == status["containerID"]
        assert after[name]["restartCount"] == status["restartCount"]
        assert "running" in after[name]["state"]
    assert node.get("web")["status"]["podIP"] == ip_before != late["status"]["podIP"]
    ipam = LocalIPAM(state_path(node.config.state_dir), node.config.pod_cidr)
    addresses = [a.ip for a in ipam.allocations().values()]
    assert len(addresses) == len(set(addresses)) and {ip_before, late["status"]["podIP"]} <= set(addresses)
    uid = orphan["metadata"]["uid"]
    wait_for(lambda: not docker_api.containers(all=True, filters={"label": f"io.kubernetes.pod.uid={uid}"}), 20,
             "the orphan's containers removed", interval=0.2)
