"""SIGTERM stops `slimkube up` within a few seconds whatever interactive streams are open.

A `up` of its own (the shared cluster must outlive this test), one busybox pod with stdin, and open at
once: the official Python client's exec of `/bin/sh` and of `cat` and its attach (v5), kubectl 1.33
`exec -i` (WebSocket v5), kubectl 1.20 `exec -i` (SPDY), `kubectl logs -f` and `kubectl port-forward` with a
connection through it. Every stream is shown to be live before the signal; afterwards `up` exits 0 within
STOP_SECONDS and each client sees its connection end.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable

import pytest
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.stream import stream

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.test_exec import free_port as free_local_port
from tests.e2e.test_up_down import UpProcess, wait_running
from tests.e2e.test_up_down import node as node  # a fixture
from tests.support.apiserver import free_port

pytestmark = pytest.mark.timeout(300)
STOP_SECONDS = 6.0  # about 2 s without streams on an idle machine


def readline(process: subprocess.Popen[str], timeout: float) -> str:
    """One line of a child's stdout, or '' when none came in `timeout` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return process.stdout.readline()


def test_sigterm_stops_up_with_interactive_streams_open(node: dict, tmp_path, cleanup: Callable) -> None:
    data_dir, name = node["data_dir"], node["nodeName"]
    up = UpProcess(data_dir, free_port())
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    children: list[subprocess.Popen[str]] = []
    cleanup(lambda: [child.kill() for child in children if child.poll() is None])
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        client.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shell"},
            "spec": {"nodeName": name, "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "main", "image": "slimkube/busybox:1", "imagePullPolicy": "Never", "stdin": True,
                "command": ["sh", "-c", "mkdir /www && echo served > /www/index.html && "
                                        "httpd -p 127.0.0.1:8080 -h /www && "
                                        'while read line; do echo "attached:$line"; done']}]}})
        wait_running(client, "/api/v1/namespaces/default/pods/shell", timeout=60)
    api = config.new_client_from_config(config_file=kubeconfig)
    cleanup(api.close)
    core = k8s.CoreV1Api(api)

    shell = stream(core.connect_post_namespaced_pod_exec, "shell", "default", command=["/bin/sh"], stderr=True,
                   stdin=True, stdout=True, tty=False, _preload_content=False)
    shell.write_stdin("echo live\n")
    assert shell.readline_stdout(timeout=10) == "live"
    attach = stream(core.connect_get_namespaced_pod_attach, "shell", "default", container="main", stderr=True,
                    stdin=True, stdout=True, tty=False, _preload_content=False)
    attach.write_stdin("one\n")
    assert attach.readline_stdout(timeout=10) == "attached:one"
    cat = stream(core.connect_post_namespaced_pod_exec, "shell", "default", command=["cat"], stderr=True,
                 stdin=True, stdout=True, tty=False, _preload_content=False)
    cat.write_stdin("cat-live\n")
    assert cat.readline_stdout(timeout=10) == "cat-live"

    for version in ("1.33", "1.20"):
        cache = tmp_path / f"cache-{version}"
        cache.mkdir()
        kubectl = Kubectl(KUBECTLS[version], kubeconfig, str(cache))
        child = subprocess.Popen([kubectl.binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", "exec",
                                  "-i", "shell", "--", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(cache)})
        children.append(child)
        assert child.stdin is not None
        child.stdin.write(f"kubectl-{version}\n")
        child.stdin.flush()
        assert readline(child, 20) == f"kubectl-{version}\n", version
    cache = tmp_path / "cache-pf"
    cache.mkdir()
    kubectl = Kubectl(KUBECTLS["1.33"], kubeconfig, str(cache))
    logs = kubectl.popen("logs", "-f", "shell")
    children.append(logs)
    assert readline(logs, 20) == "attached:one\n"
    local = free_local_port()
    forward = kubectl.popen("port-forward", "shell", f"{local}:8080", "--address", "127.0.0.1")
    children.append(forward)
    assert readline(forward, 20).startswith(f"Forwarding from 127.0.0.1:{local}")
    with socket.create_connection(("127.0.0.1", local), timeout=10) as sock:
        sock.sendall(b"GET /index.html HTTP/1.0\r\nHost: shell\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.endswith(b"served\n"), answer
    held = socket.create_connection(("127.0.0.1", local), timeout=10)  # a forwarded connection left open:
    cleanup(held.close)
    held.sendall(b"GET /index.html HTTP/1.0\r\n")  # httpd waits for the rest of the request

    started = time.monotonic()
    up.proc.send_signal(signal.SIGTERM)
    try:
        code = up.proc.wait(timeout=STOP_SECONDS + 10)
    except subprocess.TimeoutExpired:
        raise AssertionError("`up` did not stop on SIGTERM:\n" + up.thread_stacks()) from None
    took = time.monotonic() - started
    assert code == 0, "\n".join(up.lines[-40:])
    assert took < STOP_SECONDS, f"`up` took {took:.1f} s to stop:\n" + "\n".join(up.lines[-40:])

    for session in (shell, attach, cat):
        session.update(timeout=5)
        assert not session.is_open()
    for child in children:
        child.wait(timeout=15)  # each kubectl sees its stream end
