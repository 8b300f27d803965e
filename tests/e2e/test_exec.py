"""Streaming through the API server to the kubelets on the shared `up --nodes 3`.

Two busybox pods, one on the host's node and one on a node in its own network namespace, so the API
server's relay reaches kubelets on both kinds of node. With the real kubectl 1.33 (WebSocket,
v5.channel.k8s.io): an exit status passes through (`sh -c 'exit 3'` → 3), stdin reaches the process and
its close ends it (`echo hi | kubectl exec -i … cat`), stdout and stderr stay apart, `hostname` is the
pod's, and `kubectl cp` copies a file in and back out (tar over exec, both directions). The official
Python client's `stream()` returns a command's output. A client offering only v4.channel.k8s.io gets
upstream's Status on the error channel (NonZeroExitCode, cause ExitCode "3"). kubectl attach sees the
main process's output. The kubelet's /exec without credentials is refused with 401 and runs nothing.
kubectl 1.20 (SPDY/3.1 only) gets the same exit status, stdin close, separate stdout/stderr and `kubectl cp`
in, through the API server's SPDY translation; `kubectl port-forward` (1.33 through its SPDY-in-WebSocket
tunnel, 1.20 over plain SPDY) carries HTTP requests to a busybox httpd on the pod's loopback.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import ssl
import time
from pathlib import Path

import aiohttp
import pytest
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.stream import portforward, stream

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_kubelet_auth import kubelet_url
from tests.e2e.test_up_down import wait_running

pytestmark = pytest.mark.timeout(180)
IMAGE = "slimkube/busybox:1"


def busybox(name: str, node: str, command: str = "sleep 3600") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "main", "image": IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", command]}]}}


@pytest.fixture
def pods(workload_cluster: RunningCluster, cluster_namespace: str) -> list[str]:
    client, ns = workload_cluster.client, cluster_namespace
    names = []
    for index, node in enumerate(workload_cluster.names[:2]):
        name = f"shell-{index}"
        client.create(f"/api/v1/namespaces/{ns}/pods", busybox(name, node))
        names.append(name)
    for name in names:
        wait_running(client, f"/api/v1/namespaces/{ns}/pods/{name}", timeout=60)
    return names


@pytest.fixture
def kubectl(workload_cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    return Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(cache))


def test_kubectl_exec_and_cp_over_websocket(workload_cluster: RunningCluster, cluster_namespace: str,
                                            pods: list[str], kubectl: Kubectl, tmp_path: Path) -> None:
    ns = cluster_namespace
    for name in pods:
        failed = kubectl.run("exec", "-n", ns, name, "--", "sh", "-c", "exit 3", check=False)
        assert failed.returncode == 3, failed.stderr
        assert kubectl.run("exec", "-n", ns, name, "--", "hostname").stdout == f"{name}\n"
        echoed = kubectl.run("exec", "-i", "-n", ns, name, "--", "cat", input="hi\n", timeout=20)
        assert echoed.stdout == "hi\n", echoed.stderr
        both = kubectl.run("exec", "-n", ns, name, "--", "sh", "-c", "echo out; echo err >&2")
        assert (both.stdout, both.stderr) == ("out\n", "err\n")
        source = tmp_path / f"in-{name}.txt"
        payload = "".join(f"line {i} of {name}\n" for i in range(2000))
        source.write_text(payload)
        kubectl.run("cp", str(source), f"{ns}/{name}:/tmp/copied.txt")
        inside = kubectl.run("exec", "-n", ns, name, "--", "md5sum", "/tmp/copied.txt").stdout.split()[0]
        back = tmp_path / f"back-{name}.txt"
        kubectl.run("cp", f"{ns}/{name}:/tmp/copied.txt", str(back))
        assert back.read_text() == payload
        assert inside == hashlib.md5(payload.encode()).hexdigest()


def test_kubectl_attach_sees_the_main_process(workload_cluster: RunningCluster, cluster_namespace: str,
                                              kubectl: Kubectl) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/api/v1/namespaces/{ns}/pods", busybox(
        "ticker", workload_cluster.names[1], "sleep 2; for i in 1 2 3; do echo tick-$i; sleep 0.5; done"))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/ticker", timeout=60)
    attached = kubectl.run("attach", "-n", ns, "ticker", check=False, timeout=30)
    assert "tick-3" in attached.stdout, (attached.returncode, attached.stdout, attached.stderr)


def test_python_client_stream(workload_cluster: RunningCluster, cluster_namespace: str, pods: list[str]) -> None:
    api = config.new_client_from_config(config_file=workload_cluster.kubeconfig)
    try:
        core = k8s.CoreV1Api(api)
        for name in pods:
            output = stream(core.connect_get_namespaced_pod_exec, name, cluster_namespace,
                            command=["sh", "-c", "echo from-$(hostname)"], stderr=True, stdin=False, stdout=True,
                            tty=False)
            assert output == f"from-{name}\n"
    finally:
        api.close()


def _tls(workload_cluster: RunningCluster) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=os.path.join(workload_cluster.data_dir, "tls", "ca.crt"))


async def _messages(url: str, *, protocols: tuple[str, ...], headers: dict[str, str],
                    context: ssl.SSLContext) -> tuple[str | None, list[bytes]]:
    async with aiohttp.ClientSession() as session, session.ws_connect(
            url, protocols=protocols, headers=headers, ssl=context) as ws:
        return ws.protocol, [m.data async for m in ws if m.type is aiohttp.WSMsgType.BINARY]


def test_v4_status_on_the_error_channel(workload_cluster: RunningCluster, cluster_namespace: str,
                                        pods: list[str]) -> None:
    client = workload_cluster.client
    server = client.config.server.rstrip("/")
    url = (f"{server}/api/v1/namespaces/{cluster_namespace}/pods/{pods[1]}/exec?command=sh&command=-c"
           "&command=echo+v4%3B+exit+3&stdout=true&stderr=true")
    protocol, messages = asyncio.run(_messages(url, protocols=("v4.channel.k8s.io",), context=_tls(workload_cluster),
                                               headers={"Authorization": f"Bearer {client.config.token}"}))
    assert protocol == "v4.channel.k8s.io"
    assert messages[:2] == [b"\x01", b"\x01v4\n"]  # upstream's empty "connected" message on stdout first
    assert messages[-1][0] == 3
    status = json.loads(messages[-1][1:])
    assert (status["status"], status["reason"], status["details"]["causes"]) == (
        "Failure", "NonZeroExitCode", [{"reason": "ExitCode", "message": "3"}])


def test_kubelet_exec_needs_credentials(workload_cluster: RunningCluster, cluster_namespace: str,
                                        pods: list[str], kubectl: Kubectl) -> None:
    client: RESTClient = workload_cluster.client
    ns = cluster_namespace
    for index, name in enumerate(pods):
        base = kubelet_url(client, workload_cluster.names[index]).replace("https://", "wss://")
        url = f"{base}/exec/{ns}/{name}/main?command=touch&command=/tmp/pwned&stdout=1"
        for headers in ({}, {"Authorization": "Bearer wrong-token"}):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                asyncio.run(_messages(url, protocols=("v5.channel.k8s.io",), headers=headers,
                                      context=_tls(workload_cluster)))
            assert refused.value.status == 401
        probe = kubectl.run("exec", "-n", ns, name, "--", "test", "-e", "/tmp/pwned", check=False)
        assert probe.returncode == 1, (probe.stdout, probe.stderr)


def test_python_client_port_forward_to_httpd(workload_cluster: RunningCluster, cluster_namespace: str) -> None:
    """The Python client's `portforward()` (WebSocket, port-prefixed channels) reaches a busybox httpd that
    listens on the pod's 127.0.0.1 only, on the host's node and on a node in its own namespace."""
    client, ns = workload_cluster.client, cluster_namespace
    for index, node in enumerate(workload_cluster.names[:2]):
        client.create(f"/api/v1/namespaces/{ns}/pods", busybox(
            f"web-{index}", node, f"mkdir /www && echo served-by-web-{index} > /www/index.html && "
                                  "httpd -f -p 127.0.0.1:8080 -h /www"))
    api = config.new_client_from_config(config_file=workload_cluster.kubeconfig)
    try:
        core = k8s.CoreV1Api(api)
        for index in range(2):
            wait_running(client, f"/api/v1/namespaces/{ns}/pods/web-{index}", timeout=60)
            forward = None
            for _ in range(20):  # httpd may not listen yet right after the container started
                forward = portforward(core.connect_get_namespaced_pod_portforward, f"web-{index}", ns, ports="8080")
                sock = forward.socket(8080)
                sock.settimeout(10)
                sock.sendall(b"GET /index.html HTTP/1.0\r\nHost: web\r\n\r\n")
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                sock.close()
                if answer:
                    break
                time.sleep(0.2)
            assert answer.startswith(b"HTTP/1.") and b" 200 " in answer.split(b"\r\n")[0], answer
            assert answer.endswith(f"served-by-web-{index}\n".encode())
    finally:
        api.close()


@pytest.fixture
def old_kubectl(workload_cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    binary = KUBECTLS["1.20"]
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing (install.sh unpacks kubectl 1.20)")
    cache = tmp_path / "kube-cache-1.20"
    cache.mkdir()
    return Kubectl(binary, workload_cluster.kubeconfig, str(cache))


def test_kubectl_1_20_exec_attach_and_cp_over_spdy(workload_cluster: RunningCluster, cluster_namespace: str,
                                                   pods: list[str], old_kubectl: Kubectl, tmp_path: Path) -> None:
    """kubectl 1.20 speaks SPDY/3.1 only (v4.channel.k8s.io streams): exit status from the Status on the
    error stream, stdin's FIN ends `cat`, stdout and stderr apart, `kubectl cp` in (tar over stdin) and a
    file larger than one 64 KiB window back out, attach to the main process."""
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/api/v1/namespaces/{ns}/pods", busybox(
        "ticker-old", workload_cluster.names[1], "sleep 2; for i in 1 2 3; do echo tick-$i; sleep 0.5; done"))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/ticker-old", timeout=60)
    attached = old_kubectl.run("attach", "-n", ns, "ticker-old", check=False, timeout=30)
    assert "tick-3" in attached.stdout, (attached.returncode, attached.stdout, attached.stderr)
    for name in pods:
        failed = old_kubectl.run("exec", "-n", ns, name, "--", "sh", "-c", "exit 3", check=False, timeout=30)
        assert failed.returncode == 3, (failed.stdout, failed.stderr)
        echoed = old_kubectl.run("exec", "-i", "-n", ns, name, "--", "cat", input="hi\n", timeout=20)
        assert echoed.stdout == "hi\n", echoed.stderr
        both = old_kubectl.run("exec", "-n", ns, name, "--", "sh", "-c", "echo out; echo err >&2", timeout=20)
        assert (both.stdout, both.stderr) == ("out\n", "err\n")
        source = tmp_path / f"spdy-{name}.txt"
        payload = "".join(f"spdy line {i} of {name}\n" for i in range(8000))  # > 64 KiB: several windows
        source.write_text(payload)
        old_kubectl.run("cp", str(source), f"{ns}/{name}:/tmp/spdy.txt", timeout=30)
        inside = old_kubectl.run("exec", "-n", ns, name, "--", "md5sum", "/tmp/spdy.txt", timeout=20)
        assert inside.stdout.split()[0] == hashlib.md5(payload.encode()).hexdigest()
        big = old_kubectl.run("exec", "-n", ns, name, "--", "cat", "/tmp/spdy.txt", timeout=20)
        assert big.stdout == payload


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(port: int, deadline: float) -> bytes:
    """GET / through the forwarded port, retried until the forward is up and httpd answers."""
    answer, last = b"", ""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"GET /index.html HTTP/1.0\r\nHost: web\r\n\r\n")
                while chunk := sock.recv(65536):
                    answer += chunk
        except OSError as exc:
            last = str(exc)
        if answer:
            return answer
        time.sleep(0.3)
    raise AssertionError(f"no answer through the forwarded port {port}: {last}")


@pytest.mark.parametrize("version", ["1.33", "1.20"])
def test_kubectl_port_forward_over_spdy(workload_cluster: RunningCluster, cluster_namespace: str, version: str,
                                        tmp_path: Path) -> None:
    """`kubectl port-forward` (1.33: SPDY tunnelled in a WebSocket, with no fallback to plain SPDY; 1.20:
    SPDY) carries HTTP requests to a busybox httpd listening on the pod's 127.0.0.1, twice over one
    forward (a new stream pair per connection)."""
    client, ns = workload_cluster.client, cluster_namespace
    binary = KUBECTLS[version]
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing")
    cache = tmp_path / "cache"
    cache.mkdir()
    kubectl = Kubectl(binary, workload_cluster.kubeconfig, str(cache))
    name = f"pf-{version.replace('.', '-')}"
    client.create(f"/api/v1/namespaces/{ns}/pods", busybox(
        name, workload_cluster.names[1], f"mkdir /www && echo served-by-{name} > /www/index.html && "
                                          "httpd -f -p 127.0.0.1:8080 -h /www"))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/{name}", timeout=60)
    port = free_port()
    process = kubectl.popen("port-forward", "-n", ns, name, f"{port}:8080", "--address", "127.0.0.1", "-v=4")
    try:
        for _ in range(2):
            answer = http_get(port, time.monotonic() + 30)
            assert answer.split(b"\r\n")[0].startswith(b"HTTP/1.") and b" 200 " in answer.split(b"\r\n")[0], \
                answer
            assert answer.endswith(f"served-by-{name}\n".encode())
        assert process.poll() is None
    finally:
        process.terminate()
        out, err = process.communicate(timeout=10)
    assert f"Forwarding from 127.0.0.1:{port} -> 8080" in out, (out, err)
    assert "fallback" not in err.lower(), err  # 1.33 kept its tunnel (client-go logs a fallback at -v=4)
