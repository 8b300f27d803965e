"""The systemd units without systemd as PID 1:

- `install.sh --role server|agent --units-only` writes the role's units, .env files (root-only: they hold
  the join token, given as --token-file, SLIMKUBE_TOKEN or the deprecated --token) and config files into
  temporary directories, with ExecStart on a real `slimkube` and no token on it, and `systemd-analyze
  verify` (Debian's systemd package, which install.sh installs) accepts each unit;
- each daemon, started as systemd would start a `Type=notify` service — the join token in its environment
  (SLIMKUBE_TOKEN, as the unit's EnvironmentFile gives it), `NOTIFY_SOCKET` naming a
  datagram socket this test binds (in the abstract namespace, as systemd's own is) — sends READY=1 only
  once it really is ready, checked at the moment the datagram arrives: the server's `/readyz` answers 200,
  the agent's Node object exists, the proxy's chains for a Service made before it started are in the
  kernel; and STOPPING=1 on SIGTERM, then exits 0.

Daemons are killed by PID at teardown; the agent's bridge, chains and IPAM state are torn down and the
proxy's rules removed (tests/integration/test_agent_join.py and test_proxy_daemon.py do the same). This
module uses the host's fixed KUBE-* proxy chains: do not run it beside another kube-proxy test.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import yaml

from control.client import errors
from control.client.rest import RESTClient
from control.util.iptables import Iptables, detect
from nodeagent.config import load
from nodeagent.teardown import RealHostNetwork, teardown
from proxy.app import run_cleanup
from proxy.tables import parse_chains
from tests.conftest import unavailable
from tests.support.apiserver import Endpoint, ProcessServer, free_port
from tests.support.hostnet import free_pod_cidr

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
ROLES = {"server": ("slimkube-server.service",), "agent": ("slimkube-agent.service", "slimkube-proxy.service")}


def required(tool: str) -> str:
    """The tool's path; without it skip, or fail under CI=true (install.sh installs it there)."""
    path = shutil.which(tool)
    if path is None:
        unavailable(tool, "not installed (install.sh installs it)")
    return path


TOKEN = "K10abc::node:secret"


@pytest.mark.parametrize("role, token_source", [
    pytest.param("server", None, id="server"),
    pytest.param("agent", "file", id="agent-token-file"),
    pytest.param("agent", "env", id="agent-SLIMKUBE_TOKEN"),
    pytest.param("agent", "argv", id="agent-deprecated-token"),
])
def test_install_role_writes_units_that_systemd_analyze_verifies(root, role: str, token_source: str | None,
                                                                 tmp_path: Path) -> None:
    analyze = required("systemd-analyze")
    dirs = {name: tmp_path / name for name in ("etc", "units", "bin")}
    token_file = tmp_path / "node-token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    token_flags = {"file": ["--token-file", str(token_file)], "argv": ["--token", TOKEN]}.get(token_source or "", [])
    flags = ["--server", "https://192.0.2.10:6443", *token_flags] if role == "agent" else []
    env = {key: value for key, value in os.environ.items() if key != "SLIMKUBE_TOKEN"}
    result = subprocess.run(
        [str(ROOT / "install.sh"), "--role", role, *flags, "--units-only", "--", "--node-ip" if role == "agent"
         else "--advertise-address", "192.0.2.11"],
        env={**env, "SLIMKUBE_VENV": sys.prefix, "SLIMKUBE_ETC_DIR": str(dirs["etc"]),
             "SLIMKUBE_UNIT_DIR": str(dirs["units"]), "SLIMKUBE_BIN_DIR": str(dirs["bin"]),
             **({"SLIMKUBE_TOKEN": TOKEN} if token_source == "env" else {})},
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("--token puts the join token on the command line" in result.stdout) == (token_source == "argv")
    assert "not running: systemctl daemon-reload && systemctl enable --now" in result.stdout
    assert (dirs["bin"] / "slimkube").resolve() == (Path(sys.prefix) / "bin" / "slimkube").resolve()

    for unit in ROLES[role]:
        text = (dirs["units"] / unit).read_text()
        assert f"ExecStart={dirs['bin']}/slimkube " in text
        exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
        assert "token" not in exec_start.lower(), exec_start  # the secret is in the environment, not on argv
        assert "/etc/slimkube" not in text and f"{dirs['etc']}/" in text
        verified = subprocess.run([analyze, "verify", str(dirs["units"] / unit)], capture_output=True, text=True,
                                  timeout=60)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    envs = sorted(path.name for path in dirs["etc"].glob("*.env"))
    assert envs == (["agent.env", "proxy.env"] if role == "agent" else ["server.env"])
    for name in envs:
        assert stat.S_IMODE((dirs["etc"] / name).stat().st_mode) == 0o600
    if role == "agent":
        agent_env = (dirs["etc"] / "agent.env").read_text()
        assert 'SLIMKUBE_TOKEN="K10abc::node:secret"' in agent_env
        assert 'SLIMKUBE_TOKEN="K10abc::node:secret"' in (dirs["etc"] / "proxy.env").read_text()
        assert 'SLIMKUBE_AGENT_ARGS="--node-ip 192.0.2.11"' in agent_env
        assert yaml.safe_load((dirs["etc"] / "agent.yaml").read_text())["kind"] == "KubeletConfiguration"
        assert yaml.safe_load((dirs["etc"] / "proxy.yaml").read_text())["kind"] == "KubeProxyConfiguration"
    else:
        assert 'SLIMKUBE_SERVER_ARGS="--advertise-address 192.0.2.11"' in (dirs["etc"] / "server.env").read_text()


class NotifySocket:
    """What systemd binds for a Type=notify service: an AF_UNIX datagram socket, here in the abstract
    namespace (`@name` in NOTIFY_SOCKET)."""

    def __init__(self, name: str) -> None:
        self.address = f"@{name}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(b"\0" + name.encode())

    def env(self) -> dict[str, str]:
        return {**os.environ, "NOTIFY_SOCKET": self.address}

    def receive(self, process: subprocess.Popen, timeout: float = WAIT) -> str:
        """The next datagram; fails if the daemon exits or nothing comes within `timeout`."""
        self.sock.settimeout(0.2)
        for _ in range(int(timeout / 0.2)):
            try:
                return self.sock.recv(4096).decode()
            except TimeoutError:
                assert process.poll() is None, f"the daemon exited with {process.returncode} before notifying"
        pytest.fail(f"no sd_notify datagram within {timeout}s")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def notify_socket(run_id: str) -> Iterator[NotifySocket]:
    sock = NotifySocket(f"sktest-notify-{run_id}")
    try:
        yield sock
    finally:
        sock.close()


def daemon(args: list[str], notify: NotifySocket, log_path: Path, cleanup: Callable, *,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    """`slimkube ARGS` as systemd would start it (`env`: its EnvironmentFile's variables); killed by PID at
    teardown if still running."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "slimkube.cli", *args], cwd=ROOT,
                                   env={**notify.env(), **(env or {})}, stdout=log, stderr=subprocess.STDOUT)

    def kill() -> None:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)  # by PID: the child this test started
            process.wait(timeout=10)

    cleanup(kill)
    return process


def stop_with_sigterm(process: subprocess.Popen, notify: NotifySocket, log_path: Path) -> None:
    process.send_signal(signal.SIGTERM)
    assert notify.receive(process, timeout=30) == "STOPPING=1"
    assert process.wait(timeout=WAIT) == 0, log_path.read_text(errors="replace")[-4000:]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[ProcessServer, Endpoint]]:
    server = ProcessServer(str(tmp_path / "server"))
    try:
        yield server, server.start()
    finally:
        server.stop()


def node_token(server: ProcessServer) -> str:
    return (Path(server.data_dir) / "node-token").read_text().strip()


def test_server_is_ready_once_readyz_answers(root, notify_socket: NotifySocket, tmp_path: Path,
                                             cleanup: Callable) -> None:
    data_dir, port = tmp_path / "server", free_port()
    log_path = tmp_path / "server.log"
    process = daemon(["server", "--data-dir", str(data_dir), "--bind-address", "127.0.0.1", "--port", str(port)],
                     notify_socket, log_path, cleanup)
    assert notify_socket.receive(process) == "READY=1"
    ready = requests.get(f"https://127.0.0.1:{port}/readyz", timeout=5, verify=str(data_dir / "tls" / "ca.crt"))
    assert ready.status_code == 200, ready.text
    assert (data_dir / "node-token").exists() and (data_dir / "admin.kubeconfig").exists()
    stop_with_sigterm(process, notify_socket, log_path)


def test_agent_is_ready_once_its_node_is_registered(root, docker_api, iptables, api, notify_socket: NotifySocket,
                                                    run_id: str, tmp_path: Path, cleanup: Callable) -> None:
    server, endpoint = api
    name = f"sktest-{run_id}"
    config_path = tmp_path / "kubelet.yaml"
    config_path.write_text(yaml.safe_dump({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "nodeName": name,
        "podBridge": f"sktest{run_id}", "vethPrefix": "skt", "podCIDR": free_pod_cidr(), "address": "127.0.0.1",
        "podNetwork": "none", "port": free_port(), "podForwardChain": f"KUBE-SKTEST-{run_id}-FWD",
        "podMasqueradeChain": f"KUBE-SKTEST-{run_id}-MASQ"}))
    config = load(str(config_path), overrides={"data_dir": str(tmp_path / "agent")})
    cleanup(lambda: teardown(config, docker_api=docker_api, iptables=detect(), network=RealHostNetwork()))
    admin = RESTClient.from_kubeconfig(endpoint.kubeconfig)
    cleanup(admin.close)
    cleanup(lambda: endpoint.request("DELETE", f"/api/v1/nodes/{name}"))
    with pytest.raises(errors.NotFound):
        admin.get(f"/api/v1/nodes/{name}")

    log_path = tmp_path / "agent.log"
    process = daemon(["agent", "--server", endpoint.url, "--config", str(config_path),
                      "--data-dir", str(tmp_path / "agent")], notify_socket, log_path, cleanup,
                     env={"SLIMKUBE_TOKEN": node_token(server)})
    assert notify_socket.receive(process) == "READY=1", log_path.read_text(errors="replace")[-4000:]
    assert admin.get(f"/api/v1/nodes/{name}")["metadata"]["name"] == name
    stop_with_sigterm(process, notify_socket, log_path)


def upstream_hash(text: str) -> str:
    """pkg/proxy/iptables/proxier.go portProtoHash, computed here independently of proxy/."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:16]


@pytest.fixture
def host_iptables(root, iptables: str, cleanup: Callable) -> Iptables:
    """The backend in use; the proxy's chains are removed at teardown whatever the test did."""
    backend = detect()
    cleanup(lambda: run_cleanup(backend))
    return backend


def test_proxy_is_ready_once_its_first_sync_wrote_the_rules(api, host_iptables: Iptables,
                                                            notify_socket: NotifySocket, run_id: str,
                                                            tmp_path: Path, cleanup: Callable) -> None:
    server, endpoint = api
    name = f"sktest-{run_id}"
    for kind, body in (
            ("services", {"metadata": {"name": name}, "spec": {"ports": [{"name": "http", "port": 80}]}}),
            ("endpoints", {"metadata": {"name": name}, "subsets": [
                {"addresses": [{"ip": "10.244.0.7"}], "ports": [{"name": "http", "port": 80}]}]})):
        made = endpoint.request("POST", f"/api/v1/namespaces/default/{kind}", json=body)
        assert made.status_code == 201, made.text
        cleanup(lambda kind=kind: endpoint.request("DELETE", f"/api/v1/namespaces/default/{kind}/{name}"))
    config = tmp_path / "kube-proxy.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "hostnameOverride": name, "clusterCIDR": "10.244.0.0/16",
        "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
        "iptables": {"localhostNodePorts": False},
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}}))

    log_path = tmp_path / "proxy.log"
    process = daemon(["proxy", "--server", endpoint.url, "--config", str(config),
                      "--data-dir", str(tmp_path / "proxy")], notify_socket, log_path, cleanup,
                     env={"SLIMKUBE_TOKEN": node_token(server)})
    assert notify_socket.receive(process) == "READY=1", log_path.read_text(errors="replace")[-4000:]
    svc_chain = "KUBE-SVC-" + upstream_hash(f"default/{name}:http" + "tcp")
    assert {"KUBE-SERVICES", svc_chain} <= parse_chains(host_iptables.save("nat"))
    stop_with_sigterm(process, notify_socket, log_path)
