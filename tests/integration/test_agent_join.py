"""Joining with only `--server URL --token TOKEN` against a real API server (k3s's TLS bootstrapping):
DIR/node-token is a K10 token whose hash is the served /cacerts, the agent's bootstrap verifies it and then
talks TLS-verified with the password; a token for another CA is refused before anything is sent; the
token survives a server restart unchanged; `slimkube agent` with only those runs a kubelet to Ready and
stops with exit 0 on SIGTERM."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from control.client import errors
from control.client.rest import RESTClient
from control.util.iptables import detect
from control.util.jointoken import JoinToken, ca_hash, parse
from nodeagent.bootstrap import BootstrapError, join
from nodeagent.config import load
from nodeagent.teardown import RealHostNetwork, teardown
from tests.support.apiserver import Endpoint, ThreadServer, free_port
from tests.support.hostnet import free_pod_cidr


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[ThreadServer, Endpoint]]:
    thread_server = ThreadServer(str(tmp_path / "server"))
    endpoint = thread_server.start()
    try:
        yield thread_server, endpoint
    finally:
        thread_server.stop()


def node_token(data_dir: str) -> str:
    with open(os.path.join(data_dir, "node-token"), encoding="utf-8") as handle:
        return handle.read().strip()


def test_node_token_names_the_served_ca_and_joins_with_tls_verified(server, tmp_path):
    thread_server, api = server
    token = parse(node_token(thread_server.config.data_dir))
    served = requests.get(api.url + "/cacerts", verify=api.ca, timeout=10)  # no Authorization header
    assert served.status_code == 200
    with open(api.ca, "rb") as handle:
        assert served.content == handle.read()
    assert token.ca_hash == ca_hash(served.content) and token.user == "node"

    config = join(api.url, str(token), data_dir=str(tmp_path / "agent"))
    assert config.ca_file == str(tmp_path / "agent" / "agent" / "server-ca.crt") and config.token == token.password
    with RESTClient(config) as client:
        assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
    full = requests.get(api.url + "/api/v1/namespaces", verify=api.ca, timeout=10,
                        headers={"Authorization": f"Bearer {token}"})
    assert full.status_code == 200  # the whole K10 string works as a bearer token too
    wrong = requests.get(api.url + "/api/v1/namespaces", verify=api.ca, timeout=10,
                         headers={"Authorization": "Bearer " + token.password[:-1]})
    assert wrong.status_code == 401


def test_a_token_for_another_ca_is_refused_before_sending_it(server, tmp_path):
    thread_server, api = server
    token = parse(node_token(thread_server.config.data_dir))
    forged = JoinToken(token.password, ca_hash(b"another CA"))
    with pytest.raises(BootstrapError, match="does not match"):
        join(api.url, str(forged), data_dir=str(tmp_path / "agent"))
    with pytest.raises(BootstrapError, match="--ca-file"):
        join(api.url, token.password, data_dir=str(tmp_path / "agent"))
    config = join(api.url, token.password, data_dir=str(tmp_path / "agent"), ca_file=api.ca)
    with RESTClient(config) as client:
        assert client.get("/version")["major"] == "1"


def test_node_token_is_stable_across_restarts(tmp_path):
    data_dir = str(tmp_path / "server")
    first = ThreadServer(data_dir)
    first.start()
    before = node_token(data_dir)
    first.stop()
    second = ThreadServer(data_dir)
    api = second.start()
    try:
        assert node_token(data_dir) == before and before.startswith("K10")
        response = requests.get(api.url + "/api/v1/namespaces", verify=api.ca, timeout=10,
                                headers={"Authorization": f"Bearer {parse(before).password}"})
        assert response.status_code == 200
    finally:
        second.stop()


def test_agent_command_exits_1_on_a_forged_token(server, tmp_path):
    _, api = server
    forged = str(JoinToken("pw", ca_hash(b"another CA")))
    result = subprocess.run([sys.executable, "-m", "slimkube.cli", "agent", "--server", api.url, "--token", forged,
                             "--data-dir", str(tmp_path / "agent")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "does not match the token's hash" in result.stderr


def test_agent_joins_with_only_server_and_token_and_stops_on_sigterm(
        server, tmp_path, root, docker_api, iptables, run_id: str, cleanup) -> None:
    thread_server, api = server
    name = f"sktest-{run_id}"
    settings = {"nodeName": name, "podBridge": f"sktest{run_id}", "vethPrefix": "skt", "podCIDR": free_pod_cidr(),
                "podNetwork": "none", "address": "127.0.0.1", "port": free_port(),
                "podForwardChain": f"KUBE-SKTEST-{run_id}-FWD", "podMasqueradeChain": f"KUBE-SKTEST-{run_id}-MASQ",
                "nodeStatusUpdateFrequency": "1s"}
    config_path = tmp_path / "kubelet.yaml"
    config_path.write_text(yaml.safe_dump(settings))
    config = load(str(config_path), overrides={"data_dir": str(tmp_path / "agent")})
    cleanup(lambda: teardown(config, docker_api=docker_api, iptables=detect(), network=RealHostNetwork()))
    agent = subprocess.Popen([sys.executable, "-m", "slimkube.cli", "agent", "--server", api.url, "--token",
                              node_token(thread_server.config.data_dir), "--config", str(config_path),
                              "--data-dir", str(tmp_path / "agent")], stderr=subprocess.PIPE, text=True)
    cleanup(lambda: agent.poll() is None and (agent.kill(), agent.wait(10)))
    admin = RESTClient.from_kubeconfig(api.kubeconfig)
    cleanup(admin.close)
    deadline, ready = time.monotonic() + 60, False
    while not ready and time.monotonic() < deadline and agent.poll() is None:
        try:
            conditions = admin.get(f"/api/v1/nodes/{name}")["status"].get("conditions") or []
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        except errors.NotFound:
            pass
        time.sleep(0.2)
    assert ready, f"node {name} not Ready (agent exit {agent.poll()})"
    assert (tmp_path / "agent" / "agent" / "server-ca.crt").read_bytes() == Path(api.ca).read_bytes()
    agent.terminate()
    _, stderr = agent.communicate(timeout=30)
    assert agent.returncode == 0, stderr
    assert f"[agent] node {name} Ready" in stderr and "stopping kubelet (pods keep running)" in stderr
