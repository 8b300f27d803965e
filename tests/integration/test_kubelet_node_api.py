"""The kubelet's node-facing parts against a real API server (in a thread) and the real dockerd:
registration makes a Node with labels, capacity and a Ready condition; the Lease is renewed; a static
pod file gets a mirror pod that goes with the file; the kubelet's HTTP API answers /healthz, /pods,
/stats/summary and /containerLogs for a real busybox container, and the API server's pods/log proxy
reaches it through the Node's InternalIP (127.0.0.1) and daemonEndpoints port. The kubelet serves HTTPS with a
certificate the API server signed; the test calls it with the API server's kubelet-client certificate."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
import requests

from control.client.errors import NotFound
from control.client.rest import RESTClient
from nodeagent import node_lifecycle, servingcert
from nodeagent.config import KubeletConfig
from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.mirror import MirrorPods
from nodeagent.node_lifecycle import NodeReporter, runtime_facts
from nodeagent.parts import SERVING_CERT_PATH
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.spechash import container_hash
from nodeagent.server import KubeletServer
from nodeagent.sources import CONFIG_MIRROR, FileSource
from tests.support.apiserver import free_port, running_server
from tests.support.cri_configs import container_docker_labels
from tests.support.polling import wait_until

MANIFEST = """apiVersion: v1
kind: Pod
metadata: {name: static-web, namespace: kube-system}
spec:
  containers: [{name: web, image: "slimkube/busybox:1", command: ["httpd", "-f"]}]
"""


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("apiserver"))


@pytest.fixture(scope="module")
def client(server_dir: str) -> Iterator[RESTClient]:
    with running_server(server_dir) as endpoint, RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
        yield rest


@pytest.fixture
def setup(client, docker_api, images, run_id, tmp_path):
    config = KubeletConfig(node_name=f"sktest-{run_id}", node_ip="127.0.0.1", port=free_port(),
                           data_dir=str(tmp_path), pod_cidr="10.244.77.0/24", labels={"slimkube.test": run_id})
    runtime = DockerRuntime(docker_api, node_name=config.node_name)
    facts = runtime_facts(config, runtime)
    reporter = NodeReporter(client, config, facts=facts, health=lambda: [])
    return config, runtime, reporter


def test_register_report_and_lease(client, setup):
    config, _, reporter = setup
    reporter.register()
    node = client.get(f"/api/v1/nodes/{config.node_name}/status")
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == config.node_name and labels["kubernetes.io/os"] == "linux"
    assert node["spec"]["podCIDR"] == "10.244.77.0/24"
    assert int(node["status"]["capacity"]["cpu"]) >= 1 and node["status"]["capacity"]["pods"] == "110"
    ready = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
    assert ready["status"] == "True" and reporter.ready
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("docker://")
    assert any(BUSYBOX_IMAGE in image["names"] for image in node["status"]["images"])
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
    # a second kubelet start adopts the Node (same uid), keeping the CIDR it has
    again = NodeReporter(client, KubeletConfig(node_name=config.node_name, node_ip="127.0.0.1", port=config.port,
                                               pod_cidr="10.244.99.0/24"), facts=reporter._facts, health=lambda: [])
    assert again.register()["metadata"]["uid"] == node["metadata"]["uid"] and again.pod_cidr == "10.244.77.0/24"
    lease_path = node_lifecycle.lease_path(config.node_name)
    reporter.renew_lease()
    first = client.get(lease_path)["spec"]
    time.sleep(0.01)
    reporter.renew_lease()
    second = client.get(lease_path)["spec"]
    assert first["holderIdentity"] == config.node_name and second["leaseDurationSeconds"] == 40
    assert second["renewTime"] > first["renewTime"]


def test_static_pod_gets_a_mirror_that_goes_with_its_file(client, setup, tmp_path):
    config, _, reporter = setup
    node = reporter.register()
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "web.yaml").write_text(MANIFEST)
    mirrors = MirrorPods(client, config.node_name)
    source = FileSource(str(manifests), 60, mirrors.sync, config.node_name)
    path = f"/api/v1/namespaces/kube-system/pods/static-web-{config.node_name}"
    assert source.poll()
    mirror = client.get(path)
    assert mirror["metadata"]["annotations"][CONFIG_MIRROR] == mirror["metadata"]["annotations"][
        "kubernetes.io/config.hash"]
    assert mirror["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    client.delete(path)  # `kubectl delete`: graceful, so it waits for the kubelet; the next sync makes it again
    assert client.get(path)["metadata"].get("deletionTimestamp")
    mirrors.sync(source.read() or [])
    again = client.get(path)["metadata"]
    assert again["uid"] != mirror["metadata"]["uid"] and not again.get("deletionTimestamp")
    os.unlink(manifests / "web.yaml")
    assert source.poll()
    with pytest.raises(NotFound):
        client.get(path)


def test_kubelet_server_and_the_api_servers_log_proxy(client, server_dir, setup, docker_api, container_labels,
                                                      cleanup):
    config, runtime, reporter = setup
    reporter.register()
    spec = {"nodeName": config.node_name, "containers": [{"name": "echo", "image": BUSYBOX_IMAGE}]}
    pod = client.create("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod",
                                                           "metadata": {"name": f"echo-{config.node_name}"},
                                                           "spec": spec})
    cleanup(lambda: client.delete(f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}", grace_period_seconds=0))
    container = pod["spec"]["containers"][0]
    labels = container_docker_labels(pod, container, node=config.node_name, sandbox_id="none", attempt=0,
                                spec_hash=container_hash(container), extra=container_labels)
    created = docker_api.create_container(BUSYBOX_IMAGE, labels=labels, command=[
        "sh", "-c", "for i in 1 2 3; do echo line-$i; done; sleep 60"])
    cid = created["Id"]
    cleanup(lambda: docker_api.remove_container(cid, force=True))
    docker_api.start(cid)
    failed: list[str] = []
    tls = servingcert.ensure(config.state_dir, config.node_name, addresses=["127.0.0.1"], ca_file=client.config.ca_file,
                             sign=lambda body: client.create(SERVING_CERT_PATH, body)["certificate"])
    server = KubeletServer("127.0.0.1", config.port, tls=tls, authenticate_token=lambda token: None,
                           authorize=lambda user, check: True,  # authorization: test_kubelet_authn_api.py
                           pods=lambda: [pod], runtime=runtime, health=lambda: list(failed),
                           find_container=lambda ns, name, c: cid if (name, c) == (pod["metadata"]["name"], "echo")
                           else None, node_name=config.node_name,
                           pod_status=lambda uid: {"containerStatuses": [{
                               "name": "echo", "containerID": f"docker://{cid}", "state": {"running": {}}}]})
    server.start()
    cleanup(server.stop)
    base = f"https://127.0.0.1:{server.port}"
    session = requests.Session()  # what the API server presents; tests/integration/test_kubelet_authn_api.py
    session.cert = (os.path.join(server_dir, "tls", "apiserver-kubelet-client.crt"),  # has the refusals
                    os.path.join(server_dir, "tls", "apiserver-kubelet-client.key"))
    session.verify, session.trust_env = client.config.ca_file, False  # REQUESTS_CA_BUNDLE would override verify
    cleanup(session.close)
    assert session.get(f"{base}/healthz", timeout=5).text == "ok"
    failed.append("pleg")
    answer = session.get(f"{base}/healthz", timeout=5)
    assert answer.status_code == 500 and "[-]pleg failed" in answer.text
    pods = session.get(f"{base}/pods", timeout=5).json()
    assert pods["kind"] == "PodList" and pods["items"][0]["metadata"]["uid"] == pod["metadata"]["uid"]
    url = f"{base}/containerLogs/default/{pod['metadata']['name']}/echo"
    assert wait_until(lambda: session.get(url, timeout=5).text == "line-1\nline-2\nline-3\n",
                      timeout=10, interval=0.1)
    assert session.get(url, params={"tailLines": "1"}, timeout=5).text == "line-3\n"
    assert session.get(url, params={"limitBytes": "6"}, timeout=5).text == "line-1"
    assert session.get(f"{base}/containerLogs/default/nope/echo", timeout=5).status_code == 404
    with session.get(url, params={"follow": "true"}, stream=True, timeout=5) as followed:
        assert next(followed.iter_lines()) == b"line-1"
    summary = session.get(f"{base}/stats/summary", timeout=10).json()
    assert summary["node"]["memory"]["availableBytes"] > 0 and summary["node"]["fs"]["capacityBytes"] > 0
    ours = [p for p in summary["pods"] if p["podRef"]["uid"] == pod["metadata"]["uid"]]
    assert ours and ours[0]["containers"][0]["memory"]["usageBytes"] > 0
    proxied = client._session.get(f"{client.config.server}/api/v1/namespaces/default/pods/"
                                  f"{pod['metadata']['name']}/log", params={"tailLines": "2"},
                                  verify=client._verify, timeout=10)
    assert proxied.status_code == 200 and proxied.text == "line-2\nline-3\n"
