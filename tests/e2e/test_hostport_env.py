"""hostPort and Service environment variables on the shared `up --nodes 3`.

- hostPort: a busybox httpd pod on the second node (its own network namespace) with hostPort 18080 →
  containerPort 8080 answers on that node's InternalIP:18080 from this host (PREROUTING in the node's
  namespace) and from a pod on the first node (the host's); the node's nat table holds KUBE-HOSTPORTS with the pod's
  rule and a KUBE-HP- chain DNATing to podIP:8080; after the pod is deleted the chains and jumps are gone
  and the port no longer answers.
- Service env: a Service created before the pods shows in the first pod's environment with upstream's
  names (`…_SERVICE_HOST`, `…_SERVICE_PORT_HTTP`, `…_PORT_80_TCP_ADDR`, …), the container's own value
  wins over a service variable of the same name; the second pod, with `enableServiceLinks: false`, has
  only the master service's (`KUBERNETES_…`), as upstream keeps.

Traffic goes only to the node addresses and pod network the cluster fixture made.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

from control.client.rest import RESTClient
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_multinode import fetch, host_fetch
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(150)
IMAGE = "slimkube/busybox:1"
HOST_PORT = 18080


def pod(name: str, node: str, command: str, *, container: dict[str, Any] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, **spec,
                     "containers": [{"name": "app", "image": IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", command], **(container or {})}]}}


def internal_ip(client: RESTClient, node: str) -> str:
    addresses = client.get(f"/api/v1/nodes/{node}")["status"]["addresses"]
    return next(a["address"] for a in addresses if a["type"] == "InternalIP")


def nat_rules(netns: str | None) -> str:
    """The nat table of a node (both backends, so whichever the node's kubelet chose is seen)."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    out = []
    for tool in ("iptables-legacy-save", "iptables-nft-save"):
        done = subprocess.run([*prefix, tool, "-t", "nat"], capture_output=True, text=True)
        out.append(done.stdout if done.returncode == 0 else "")
    return "\n".join(out)


def container_env(docker_api: Any, ns: str, name: str) -> dict[str, str]:
    """`env` in the pod's app container, run through dockerd (the test's hand, not the kubelet's)."""
    found = docker_api.containers(filters={"status": "running", "label": [
        f"io.kubernetes.pod.namespace={ns}", f"io.kubernetes.pod.name={name}", "io.kubernetes.container.name=app"]})
    assert len(found) == 1, found
    exec_id = docker_api.exec_create(found[0]["Id"], ["env"])["Id"]
    output = docker_api.exec_start(exec_id).decode()
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def running_ip(client: RESTClient, ns: str, name: str) -> str:
    def ip() -> str:
        status = client.get(f"/api/v1/namespaces/{ns}/pods/{name}").get("status") or {}
        return status.get("podIP", "") if status.get("phase") == "Running" else ""

    wait_for(ip, 40, f"pod {name} running")
    return ip()


def test_hostport_reaches_the_pod_and_service_env(workload_cluster: RunningCluster, cluster_namespace: str,
                                                  docker_api) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    # the other pod runs on the host's node: node-to-node traffic between two node namespaces crosses this
    # host's node bridge, where Docker's FORWARD policy (DROP) stops it in this harness (not on real nodes)
    web_node, other_node = workload_cluster.names[1], workload_cluster.names[0]
    pods = f"/api/v1/namespaces/{ns}/pods"
    started = time.monotonic()
    service = client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "sktest-web"},
        "spec": {"selector": {"app": "sktest-none"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    cluster_ip = service["spec"]["clusterIP"]
    client.create(pods, pod("hp", web_node, "mkdir -p /www && echo hostport-ok > /www/index.html && "
                                             "exec httpd -f -p 8080 -h /www",
                            container={"ports": [{"containerPort": 8080, "hostPort": HOST_PORT}],
                                       "env": [{"name": "SKTEST_WEB_SERVICE_PORT_HTTP", "value": "mine"}]}))
    client.create(pods, pod("nolinks", other_node, "exec sleep 3600", enableServiceLinks=False))
    pod_ip = running_ip(client, ns, "hp")
    running_ip(client, ns, "nolinks")
    node_ip = internal_ip(client, web_node)

    # hostPort: from this host, and from a pod on another node, to the node's address
    url = f"http://{node_ip}:{HOST_PORT}/"
    wait_for(lambda: host_fetch(url) == "hostport-ok", 20, f"{url} answering from the host")
    assert fetch(docker_api, "nolinks", url) == "hostport-ok"
    rules = nat_rules(web_node)
    assert f'--comment "hp_{ns} hostport {HOST_PORT}"' in rules and "-j KUBE-HOSTPORTS" in rules, rules
    assert f"--to-destination {pod_ip}:8080" in rules, rules

    # Service env: the namespace's Service (the container's own variable wins) and the master service
    env = container_env(docker_api, ns, "hp")
    assert env["SKTEST_WEB_SERVICE_HOST"] == cluster_ip and env["SKTEST_WEB_SERVICE_PORT"] == "80"
    assert env["SKTEST_WEB_SERVICE_PORT_HTTP"] == "mine"
    assert env["SKTEST_WEB_PORT"] == env["SKTEST_WEB_PORT_80_TCP"] == f"tcp://{cluster_ip}:80"
    assert (env["SKTEST_WEB_PORT_80_TCP_PROTO"], env["SKTEST_WEB_PORT_80_TCP_PORT"],
            env["SKTEST_WEB_PORT_80_TCP_ADDR"]) == ("tcp", "80", cluster_ip)
    kubernetes_ip = client.get("/api/v1/namespaces/default/services/kubernetes")["spec"]["clusterIP"]
    assert env["KUBERNETES_SERVICE_HOST"] == kubernetes_ip
    no_links = container_env(docker_api, ns, "nolinks")
    assert no_links["KUBERNETES_SERVICE_HOST"] == kubernetes_ip and "KUBERNETES_PORT_443_TCP" in no_links
    assert not [name for name in no_links if name.startswith("SKTEST_WEB_")], no_links

    # deletion closes the port: chains and jumps gone from the node's nat table
    client.delete(f"{pods}/hp", grace_period_seconds=0)
    wait_for(lambda: "KUBE-HOSTPORTS" not in nat_rules(web_node) and "KUBE-HP-" not in nat_rules(web_node), 30,
             "hostport rules removed after the pod's deletion")
    assert host_fetch(url) == ""
    assert time.monotonic() - started < 90
