"""Cluster DNS on the shared `up --nodes 3`: pods on the host's node and on a namespaced
node find Services by name through the `kube-dns` Service at the service CIDR's tenth address.

- Every node's DNS server has written its `kube-dns` EndpointSlice (one per node, its InternalIP).
- A client pod's /etc/resolv.conf is upstream's ClusterFirst: the tenth address, `<ns>.svc.cluster.local
  svc.cluster.local cluster.local`, `ndots:5`.
- `nslookup web.<ns>.svc.cluster.local` answers the ClusterIP; `wget http://web.<ns>/` (the search path
  completes it) reaches the pod behind it through the kube-proxy.
- A pod with `hostname: web-0`, `subdomain: web` behind a headless Service `web` (in a second namespace,
  since `web` in the first is the ClusterIP one): `web-0.web.<ns2>.svc.cluster.local` is that pod's IP.
- `_http._tcp.web.<ns>.svc.cluster.local` SRV names port 80 and the Service; an unknown name is NXDOMAIN.
Only names inside the cluster domain are asked.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import pytest

from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
IMAGE = "slimkube/busybox:1"


def pod(name: str, node: str, command: str, *, labels: dict | None = None, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, **spec, "containers": [{
                "name": "app", "image": IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", command]}]}}


def httpd(name: str, node: str, **spec: object) -> dict:
    serve = f"mkdir -p /www && echo {name} > /www/index.html && exec httpd -f -p 8080 -h /www"
    return pod(name, node, serve, labels={"app": "web"}, **spec)


def run_in(docker_api, ns: str, name: str, *command: str) -> tuple[int, str]:
    (found,) = docker_api.containers(filters={"label": [f"io.kubernetes.pod.name={name}",
                                                        f"io.kubernetes.pod.namespace={ns}",
                                                        "io.kubernetes.container.name=app"]})
    exec_id = docker_api.exec_create(found["Id"], list(command))["Id"]
    output = docker_api.exec_start(exec_id).decode(errors="replace")
    return docker_api.exec_inspect(exec_id)["ExitCode"], output


def test_pods_find_services_by_name(workload_cluster: RunningCluster, cluster_namespace: str, cleanup: Callable,
                                    docker_api) -> None:
    cluster, ns = workload_cluster, cluster_namespace
    client = cluster.client
    dns_ip = str(ipaddress.ip_network(cluster.service_cidr).network_address + 10)
    ns2 = f"{ns}-h"
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns2}})

    def remove_ns2() -> None:
        for item in client.list(f"/api/v1/namespaces/{ns2}/pods")["items"]:
            client.delete(f"/api/v1/namespaces/{ns2}/pods/{item['metadata']['name']}", grace_period_seconds=0)
        client.delete(f"/api/v1/namespaces/{ns2}")
    cleanup(remove_ns2)

    def dns_nodes() -> list[str]:
        slices = client.list("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
                             params={"labelSelector": "kubernetes.io/service-name=kube-dns"})["items"]
        return sorted(s["endpoints"][0]["nodeName"] for s in slices)
    wait_for(lambda: dns_nodes() == sorted(cluster.names), 30, lambda: "a kube-dns EndpointSlice from every node; "
             "`up` said:\n" + "\n".join(line for line in cluster.up.lines if "DNS" in line))
    assert client.get("/api/v1/namespaces/kube-system/services/kube-dns")["spec"]["clusterIP"] == dns_ip

    client.create(f"/api/v1/namespaces/{ns}/pods", httpd("server", cluster.names[1]))
    client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    client.create(f"/api/v1/namespaces/{ns2}/pods", httpd("web-0", cluster.names[1], hostname="web-0",
                                                          subdomain="web"))
    client.create(f"/api/v1/namespaces/{ns2}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 8080}]}})
    clients = {"client-a": cluster.names[0], "client-b": cluster.names[2]}  # the host's node, a namespaced one
    for name, node in clients.items():
        client.create(f"/api/v1/namespaces/{ns}/pods", pod(name, node, "exec sleep 3600"))
    cluster_ip = client.get(f"/api/v1/namespaces/{ns}/services/web")["spec"]["clusterIP"]
    web0_ip = wait_running(client, f"/api/v1/namespaces/{ns2}/pods/web-0")["status"]["podIP"]
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/server")

    for name in clients:
        wait_running(client, f"/api/v1/namespaces/{ns}/pods/{name}")
        code, resolv = run_in(docker_api, ns, name, "cat", "/etc/resolv.conf")
        lines = resolv.splitlines()
        assert lines[0] == f"nameserver {dns_ip}" and lines[-1] == "options ndots:5", resolv
        assert lines[1].startswith(f"search {ns}.svc.cluster.local svc.cluster.local cluster.local"), resolv

        def lookup(host: str, *flags: str, client_pod: str = name) -> str:
            code, output = run_in(docker_api, ns, client_pod, "timeout", "5", "nslookup", *flags, host)
            return output if code == 0 else ""

        wait_for(lambda: cluster_ip in lookup(f"web.{ns}.svc.cluster.local"), 20, f"{name}: web.{ns} → {cluster_ip}")
        wait_for(lambda n=name: run_in(docker_api, ns, n, "timeout", "3", "wget", "-qO-", f"http://web.{ns}/")[1]
                 .strip() == "server", 20, f"{name}: wget http://web.{ns}/")
        wait_for(lambda: web0_ip in lookup(f"web-0.web.{ns2}.svc.cluster.local"), 20,
                 f"{name}: web-0.web.{ns2} → {web0_ip}")
        srv = lookup(f"_http._tcp.web.{ns}.svc.cluster.local", "-type=SRV")
        assert f"80 web.{ns}.svc.cluster.local" in srv, srv
        code, missing = run_in(docker_api, ns, name, "timeout", "5", "nslookup", f"nope.{ns}.svc.cluster.local")
        assert code != 0 and "NXDOMAIN" in missing, missing
