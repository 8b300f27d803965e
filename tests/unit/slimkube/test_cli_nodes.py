"""`slimkube agent`, `up` and `down`: usage errors exit 2, refusals exit 1, before anything is started."""

from __future__ import annotations

import hashlib
import os

import pytest
from click.testing import CliRunner

from slimkube.cli import main
from slimkube.nodelock import NodeLock


@pytest.mark.parametrize("args,message", [
    pytest.param([], "--server and the join token", id="nothing"),
    pytest.param(["--server", "https://s:6443"], "--server and the join token", id="no-token"),
    pytest.param(["--kubeconfig", __file__, "--server", "https://s"], "not both", id="kubeconfig-and-server"),
    pytest.param(["--server", "https://s", "--pod-cidr", "10.0.0.1/24"], "podCIDR", id="pod-cidr"),
    pytest.param(["--server", "https://s", "--node-ip", "nope"], "nodeIP", id="node-ip"),
    pytest.param(["--server", "https://s", "--node-name", "Bad_Name"], "nodeName", id="node-name"),
    pytest.param(["--server", "https://s", "--port", "70000"], "70000", id="port"),
    pytest.param(["--server", "https://s", "--token-file", "/nonexistent/t"], "cannot read /nonexistent/t",
                 id="token-file-missing"),
    pytest.param(["--server", "https://s", "--token-file", "TOKEN_FILE", "--token", "t"], "not both",
                 id="token-file-and-token"),
    pytest.param(["--kubeconfig", __file__, "--token-file", "TOKEN_FILE"], "not both", id="kubeconfig-and-token"),
])
def test_agent_usage_errors_exit_2(tmp_path, args, message):
    token_file = tmp_path / "token"
    token_file.write_text("t\n")
    args = [str(token_file) if arg == "TOKEN_FILE" else arg for arg in args]
    # past the credential checks (a server and more flags), the token comes from the environment
    result = CliRunner().invoke(main, ["agent", "--data-dir", str(tmp_path), *args],
                                env={"SLIMKUBE_TOKEN": "t"} if len(args) > 2 else {})
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_agent_config_file_with_an_unknown_field_is_a_usage_error(tmp_path):
    path = tmp_path / "kubelet.yaml"
    path.write_text("podBrige: x\n")
    result = CliRunner().invoke(main, ["agent", "--server", "https://s", "--config", str(path)],
                                env={"SLIMKUBE_TOKEN": "t"})
    assert result.exit_code == 2 and "unknown field 'podBrige'" in result.output


@pytest.mark.parametrize("server,token,message", [
    pytest.param("https://127.0.0.1:1", "plaintoken", "--ca-file", id="short-token-without-ca"),
    pytest.param("https://127.0.0.1:1", "K10abc::node:pw", "malformed K10", id="malformed-token"),
    pytest.param("127.0.0.1:6443", "plaintoken", "http:// or https://", id="no-scheme"),
    pytest.param("https://127.0.0.1:1", f"K10{hashlib.sha256(b'x').hexdigest()}::node:pw", "cannot reach",
                 id="server-down"),
])
def test_agent_refuses_to_trust_a_server_it_cannot_verify_exit_1(tmp_path, server, token, message):
    result = CliRunner().invoke(main, ["agent", "--data-dir", str(tmp_path), "--server", server],
                                env={"SLIMKUBE_TOKEN": token})
    assert result.exit_code == 1, result.output
    assert message in result.output and "pw" not in result.output.replace("--", "")
    assert "warning" not in result.output


SERVER_DOWN = ["--server", "https://127.0.0.1:1"]
TOKEN = f"K10{hashlib.sha256(b'x').hexdigest()}::node:sekret"


@pytest.mark.parametrize("source, warning", [
    pytest.param("file-0600", None, id="token-file"),
    pytest.param("file-0644", "is readable by others (mode 0644); chmod 600 it", id="token-file-world-readable"),
    pytest.param("env", None, id="environment"),
    pytest.param("argv", "where any local user reads it (ps", id="deprecated-token-flag"),
])
@pytest.mark.parametrize("command", ["agent", "proxy"])
def test_the_join_token_comes_from_a_file_or_the_environment(tmp_path, command, source, warning):
    """Each source reaches the join (here: a server that is down); only --token and a file others can read
    draw a warning, and the token itself is never printed."""
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644 if source == "file-0644" else 0o600)
    args = {"argv": ["--token", TOKEN], "env": []}.get(source, ["--token-file", str(path)])
    result = CliRunner().invoke(main, [command, "--data-dir", str(tmp_path), *SERVER_DOWN, *args],
                                env={"SLIMKUBE_TOKEN": TOKEN} if source == "env" else {})
    assert result.exit_code == 1 and "cannot reach https://127.0.0.1:1" in result.output, result.output
    assert "sekret" not in result.output
    if warning is None:
        assert "warning" not in result.output
    else:
        assert f"[{command}] warning: " in result.output and warning in result.output
    assert "SLIMKUBE_TOKEN" not in os.environ  # read, then dropped: children do not inherit it


@pytest.mark.parametrize("args,message", [
    pytest.param(["--cluster-cidr", "10.244.0.1/16"], "host bits set", id="cluster-cidr"),
    pytest.param(["--service-cidr", "bad"], "--service-cidr", id="service-cidr"),
    pytest.param(["--port", "-1"], "-1", id="port"),
    pytest.param(["--pod-cidr", "10.99.0.0/24"], "not inside the cluster CIDR", id="pod-cidr-outside-cluster"),
    pytest.param(["--nodes", "0"], "--nodes", id="no-nodes"),
    pytest.param(["--nodes", "3", "--bind-address", "127.0.0.1"], "reachable from the node namespaces",
                 id="nodes-need-a-reachable-server"),
    pytest.param(["--nodes", "3", "--nodes-cidr", "10.244.0.0/24"], "overlaps the cluster CIDR", id="nodes-cidr"),
    pytest.param(["--pod-network", "flannel"], "'flannel' is not one of", id="pod-network"),
])
def test_up_usage_errors_exit_2(tmp_path, args, message):
    result = CliRunner().invoke(main, ["up", "--data-dir", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not os.path.exists(tmp_path / "node.lock")  # refused before taking anything


def test_up_and_down_read_the_kubelet_config_in_the_data_dir(tmp_path):
    (tmp_path / "kubelet.yaml").write_text("podBridge: this-name-is-far-too-long\n")
    for command in ("up", "down"):
        result = CliRunner().invoke(main, [command, "--data-dir", str(tmp_path)])
        assert result.exit_code == 2 and "podBridge" in result.output, (command, result.output)


@pytest.mark.parametrize("command", [["down"], ["up"], ["agent", "--kubeconfig", __file__]])
def test_a_running_node_process_makes_down_up_and_agent_refuse(tmp_path, command):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: "
                          "{cluster: c}}]\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n")
    args = [str(kubeconfig) if a == __file__ else a for a in command]
    with NodeLock(str(tmp_path)) as lock:
        lock.acquire(what="the test")
        result = CliRunner().invoke(main, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert f"(pid {os.getpid()}) is running with data dir {tmp_path}" in result.output


def test_node_lock_is_released_for_the_next_holder(tmp_path):
    with NodeLock(str(tmp_path)) as first:
        first.acquire(what="x")
    with NodeLock(str(tmp_path)) as second:
        second.acquire(what="x")


def test_stop_on_signal_turns_sigterm_into_an_event_and_restores_the_handler():
    import signal

    from slimkube.stopsignal import StopOnSignal

    before = signal.getsignal(signal.SIGTERM)
    with StopOnSignal() as signals:
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.event.wait(5) and signals.received == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("command", ["stop", "start"])
def test_node_stop_and_start_refuse_without_a_node_of_a_running_up(tmp_path, command):
    result = CliRunner().invoke(main, ["node", command, "nope", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "no node 'nope' started by `up --nodes`" in result.output
