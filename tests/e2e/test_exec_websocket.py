"""Interactive exec and attach over WebSocket on the shared `up --nodes 3`, with every channel subprotocol.

The official Python client's `stream()` offers v5.channel.k8s.io and v4.channel.k8s.io (and writes `str`
stdin as text messages): the client's own end-to-end cases `test_pod_apis` (text and binary sessions with
/bin/sh: stdout and stderr lines, a Success Status after `exit`) and `test_pod_exec_close_channel` (v5
CLOSE of stdin ends `cat`, exit code 0) run unchanged in substance, plus its `returncode` for non-zero
exits, attach to a container's stdin, and its WSClient asked for v4.channel.k8s.io alone. The older
protocols (v4.base64.channel.k8s.io, base64.channel.k8s.io, channel.k8s.io) and every other protocol
asked for alone are driven with the `websocket-client` package the official client uses, the
`Sec-WebSocket-Protocol` header set by the test: stdin as text and as binary messages, stdout and stderr
apart, non-UTF-8 bytes both ways, and the end of the command as the protocol says (a Status from v4 on, a
failure's text before), then the close.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
import websocket
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL, WSClient, get_websocket_url

from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running

pytestmark = pytest.mark.timeout(240)
IMAGE = "slimkube/busybox:1"


def pod(name: str, node: str, command: str, *, stdin: bool = False) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "main", "image": IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", command],
                "stdin": stdin}]}}


@pytest.fixture
def core(workload_cluster: RunningCluster) -> Iterator[k8s.CoreV1Api]:
    api = config.new_client_from_config(config_file=workload_cluster.kubeconfig)
    try:
        yield k8s.CoreV1Api(api)
    finally:
        api.close()


@pytest.fixture
def busyboxes(workload_cluster: RunningCluster, cluster_namespace: str) -> list[str]:
    """A pod on the host's node and one on a node in its own network namespace."""
    client, names = workload_cluster.client, []
    for index, node in enumerate(workload_cluster.names[:2]):
        names.append(f"busybox-{index}")
        client.create(f"/api/v1/namespaces/{cluster_namespace}/pods",
                      pod(names[-1], node, "while true; do date; sleep 5; done"))
    for name in names:
        wait_running(client, f"/api/v1/namespaces/{cluster_namespace}/pods/{name}", timeout=60)
    return names


def test_python_client_pod_apis(core: k8s.CoreV1Api, cluster_namespace: str, busyboxes: list[str]) -> None:
    """The official client's e2e `test_pod_apis`, exec part, against each node."""
    ns = cluster_namespace
    for name in busyboxes:
        out = stream(core.connect_get_namespaced_pod_exec, name, ns, command=[
            "/bin/sh", "-c", "for i in $(seq 1 3); do date; done"], stderr=False, stdin=False, stdout=True, tty=False)
        assert isinstance(out, str) and len(out.splitlines()) == 3
        out = stream(core.connect_get_namespaced_pod_exec, name, ns, command=[
            "/bin/sh", "-c", 'echo -n "This is a test string" | gzip'], stderr=False, stdin=False, stdout=True,
            tty=False, binary=True)
        assert isinstance(out, bytes) and gzip.decompress(out).decode() == "This is a test string"
        out = stream(core.connect_post_namespaced_pod_exec, name, ns, command=["uptime"], stderr=False,
                     stdin=False, stdout=True, tty=False)
        assert len(out.splitlines()) == 1
        for binary in (False, True):
            text = (lambda value: value.encode()) if binary else (lambda value: value)
            started = time.monotonic()
            resp = stream(core.connect_post_namespaced_pod_exec, name, ns, command=["/bin/sh"], stderr=True,
                          stdin=True, stdout=True, tty=False, binary=binary, _preload_content=False)
            try:
                resp.write_stdin(text("echo test string 1\n"))
                assert resp.readline_stdout(timeout=5) == text("test string 1")
                assert time.monotonic() - started < 5  # at once, not at a timeout
                assert not resp.peek_stderr()
                resp.write_stdin(text("echo test string 2 >&2\n"))
                assert resp.readline_stderr(timeout=5) == text("test string 2")
                assert not resp.peek_stdout()
                resp.write_stdin(text("exit\n"))
                resp.update(timeout=5)
                deadline = time.monotonic() + 10
                while not (line := resp.read_channel(ERROR_CHANNEL)) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert json.loads(line)["status"] == "Success"
                resp.update(timeout=5)
                assert not resp.is_open()
            finally:
                resp.close()


def test_python_client_close_channel_ends_stdin(core: k8s.CoreV1Api, cluster_namespace: str,
                                                busyboxes: list[str]) -> None:
    """The official client's e2e `test_pod_exec_close_channel`: v5 is negotiated, CLOSE of channel 0 gives
    `cat` its EOF, the connection closes with exit code 0."""
    for name in busyboxes:
        resp = stream(core.connect_post_namespaced_pod_exec, name, cluster_namespace,
                      command=["/bin/sh", "-c", "cat"], stderr=True, stdin=True, stdout=True, tty=False,
                      _preload_content=False)
        try:
            assert resp.subprotocol == "v5.channel.k8s.io"
            resp.write_stdin("test-close\n")
            assert resp.readline_stdout(timeout=5) == "test-close"
            resp.close_channel(0)
            resp.run_forever(timeout=15)
            assert not resp.is_open(), "the connection should close after cat exits"
            assert resp.returncode == 0
        finally:
            resp.close()


@pytest.mark.parametrize(("command", "code"), [
    pytest.param(["false"], 1, id="false"),
    pytest.param(["/bin/sh", "-c", "sleep 1; exit 3"], 3, id="exit-3"),
    pytest.param(["true"], 0, id="true"),
])
def test_python_client_returncode(core: k8s.CoreV1Api, cluster_namespace: str, busyboxes: list[str],
                                  command: list[str], code: int) -> None:
    resp = stream(core.connect_get_namespaced_pod_exec, busyboxes[1], cluster_namespace, command=command,
                  stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    assert resp.returncode is None
    resp.run_forever(timeout=10)
    assert resp.returncode == code


def test_python_client_asking_for_v4_alone(workload_cluster: RunningCluster, core: k8s.CoreV1Api,
                                           cluster_namespace: str, busyboxes: list[str]) -> None:
    """The official client's own WSClient with its `sec-websocket-protocol` header set to v4.channel.k8s.io
    (what `stream()` cannot ask for): str stdin, stdout and stderr lines, the exit code from v4's Status."""
    configuration = core.api_client.configuration
    url = get_websocket_url(
        f"{configuration.host}/api/v1/namespaces/{cluster_namespace}/pods/{busyboxes[1]}/exec",
        [("command", ["sh", "-c", 'read line; echo "out:$line"; echo "err:$line" >&2; exit 4']),
         ("stdin", "true"), ("stdout", "true"), ("stderr", "true")])
    headers = {"authorization": f"Bearer {workload_cluster.client.config.token}",
               "sec-websocket-protocol": "v4.channel.k8s.io"}
    resp = WSClient(configuration, url, headers, capture_all=True)
    try:
        assert resp.subprotocol == "v4.channel.k8s.io"
        resp.write_stdin("v4\n")
        assert resp.readline_stdout(timeout=10) == "out:v4"
        assert resp.readline_stderr(timeout=10) == "err:v4"
        resp.run_forever(timeout=10)
        assert not resp.is_open() and resp.returncode == 4
    finally:
        resp.close()


def test_python_client_attach(workload_cluster: RunningCluster, core: k8s.CoreV1Api,
                              cluster_namespace: str) -> None:
    """Attach to a container that reads its stdin: what is written comes back from the main process."""
    client, ns = workload_cluster.client, cluster_namespace
    client.create(f"/api/v1/namespaces/{ns}/pods", pod(
        "reader", workload_cluster.names[1], 'while read line; do echo "attached:$line"; done', stdin=True))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/reader", timeout=60)
    resp = stream(core.connect_get_namespaced_pod_attach, "reader", ns, container="main", stderr=True, stdin=True,
                  stdout=True, tty=False, _preload_content=False)
    try:
        assert resp.subprotocol == "v5.channel.k8s.io"
        resp.write_stdin("one\n")
        assert resp.readline_stdout(timeout=10) == "attached:one"
        resp.write_stdin(b"two\n")
        assert resp.readline_stdout(timeout=10) == "attached:two"
    finally:
        resp.close()


# -- every subprotocol, driven with websocket-client directly -----------------------------------------------

@dataclass
class Session:
    """One exec WebSocket opened with one subprotocol; `frames` decodes what the server sends."""

    ws: websocket.WebSocket
    protocol: str

    @property
    def base64(self) -> bool:
        return "base64" in self.protocol

    def send(self, channel: int, data: bytes, *, text: bool) -> None:
        if self.base64:
            payload: bytes = str(channel).encode() + base64.b64encode(data)
        else:
            payload = bytes((channel,)) + data
        if text:
            self.ws.send(payload.decode(), opcode=websocket.ABNF.OPCODE_TEXT)
        else:
            self.ws.send_binary(payload)

    def frame(self) -> tuple[int, bytes] | None:
        """The next (channel, data), None once the server closed."""
        opcode, data = self.ws.recv_data(control_frame=False)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return None
        if self.base64:
            assert opcode == websocket.ABNF.OPCODE_TEXT, opcode
            return data[0] - ord("0"), base64.b64decode(data[1:])
        assert opcode == websocket.ABNF.OPCODE_BINARY, opcode
        return data[0], data[1:]

    def until(self, channel: int, wanted: bytes) -> bytes:
        """Data on `channel` up to `wanted` at its end; any other channel's data is a failure."""
        got = b""
        while not got.endswith(wanted):
            frame = self.frame()
            assert frame is not None, f"closed while waiting for {wanted!r} (got {got!r})"
            assert frame[0] == channel or not frame[1], frame
            got += frame[1] if frame[0] == channel else b""
        return got

    def rest(self) -> list[tuple[int, bytes]]:
        """Every non-empty frame up to the close."""
        frames = []
        while (frame := self.frame()) is not None:
            if frame[1]:
                frames.append(frame)
        return frames


def open_exec(cluster: RunningCluster, ns: str, name: str, command: list[str], protocol: str) -> Session:
    client = cluster.client
    query = urlencode({"command": command, "stdin": "true", "stdout": "true", "stderr": "true"}, doseq=True)
    url = client.config.server.replace("https://", "wss://") + f"/api/v1/namespaces/{ns}/pods/{name}/exec?{query}"
    ws = websocket.create_connection(url, timeout=15, header=[
        f"Authorization: Bearer {client.config.token}", f"Sec-WebSocket-Protocol: {protocol}"],
        sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": os.path.join(cluster.data_dir, "tls", "ca.crt")})
    assert ws.getheaders().get("sec-websocket-protocol") == protocol  # set by hand: not checked by the library
    return Session(ws, protocol)


STATUS_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io")


@pytest.mark.parametrize("protocol", [*STATUS_PROTOCOLS, "base64.channel.k8s.io", "channel.k8s.io"])
def test_every_subprotocol(workload_cluster: RunningCluster, cluster_namespace: str, busyboxes: list[str],
                           protocol: str) -> None:
    script = 'head -c 3; read line; echo "line:$line"; echo "err:$line" >&2; exit 3'
    for name in busyboxes:
        session = open_exec(workload_cluster, cluster_namespace, name, ["sh", "-c", script], protocol)
        try:
            session.send(0, b"\x00\xff\x01", text=False)  # bytes no text message could carry
            assert session.until(1, b"\x00\xff\x01") == b"\x00\xff\x01"
            session.send(0, b"typed\n", text=True)  # what the Python client sends for a str
            frames = session.rest()  # stdout and stderr are copied apart: their relative order may vary
            assert [b"".join(d for c, d in frames if c == channel) for channel in (1, 2)] == [
                b"line:typed\n", b"err:typed\n"], frames
            assert frames[-1][0] == 3 and [c for c, _ in frames].count(3) == 1, frames
            if protocol in STATUS_PROTOCOLS:
                status = json.loads(frames[-1][1])
                assert (status["status"], status["reason"], status["details"]["causes"]) == (
                    "Failure", "NonZeroExitCode", [{"reason": "ExitCode", "message": "3"}])
            else:
                assert frames[-1][1].startswith(b"command terminated with non-zero exit code")
        finally:
            session.ws.close()
    session = open_exec(workload_cluster, cluster_namespace, busyboxes[1], ["true"], protocol)
    try:
        frames = session.rest()
        if protocol in STATUS_PROTOCOLS:
            assert [(c, json.loads(d)["status"]) for c, d in frames] == [(3, "Success")]
        else:
            assert frames == []  # older protocols say nothing on success
    finally:
        session.ws.close()


def test_v5_close_over_the_raw_protocol(workload_cluster: RunningCluster, cluster_namespace: str,
                                        busyboxes: list[str]) -> None:
    """client-go's v5 CLOSE ([255, 0]) ends `wc -c`'s input; the count covers every byte sent."""
    session = open_exec(workload_cluster, cluster_namespace, busyboxes[0], ["wc", "-c"], "v5.channel.k8s.io")
    try:
        for _ in range(4):
            session.send(0, os.urandom(50_000), text=False)
        session.ws.send_binary(bytes((255, 0)))
        frames = session.rest()
        assert frames[0] == (1, b"200000\n")
        assert json.loads(frames[-1][1])["status"] == "Success"
    finally:
        session.ws.close()
