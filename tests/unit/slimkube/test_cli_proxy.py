"""`slimkube proxy`'s command line (`slimkube proxy (--kubeconfig FILE | --server URL --token-file
FILE) [--config FILE] [--cleanup]`): bad combinations and config values are usage errors (exit 2) before
anything starts; `--cleanup` needs no API server. And the hook `up` starts the proxy from: after the node
is registered, with the kubelet stopped if the proxy cannot start."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from control.util.iptables import Iptables, Mode, Result
from slimkube.allinone import NodeError, run_kubelet
from slimkube.cli import main


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return str(path)


@pytest.mark.parametrize("args, message", [
    pytest.param([], "--server and the join token (--token-file FILE or SLIMKUBE_TOKEN in the environment) are "
                 "required (or --kubeconfig)", id="no-credential"),
    pytest.param(["--server", "https://127.0.0.1:6443"], "--server and the join token", id="no-token"),
    pytest.param(["--kubeconfig", "KUBECONFIG", "--server", "https://x:6443"], "not both", id="both"),
    pytest.param(["--kubeconfig", "KUBECONFIG", "--healthz-bind-address", "10256"], "healthzBindAddress",
                 id="bad-healthz-address"),
    pytest.param(["--kubeconfig", "KUBECONFIG", "--cluster-cidr", "10.244.0.1/16"], "clusterCIDR",
                 id="bad-cluster-cidr"),
])
def test_bad_flags_are_usage_errors(kubeconfig: str, args: list[str], message: str) -> None:
    args = [kubeconfig if a == "KUBECONFIG" else a for a in args]
    result = CliRunner().invoke(main, ["proxy", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize("text, message", [
    pytest.param("mode: ipvs\n", "only in \"iptables\" mode", id="ipvs"),
    pytest.param("iptables: {syncPeriod: 30x}\n", "iptables.syncPeriod", id="duration"),
    pytest.param("masqueradeAll: true\n", "unknown field 'masqueradeAll'", id="misplaced-field"),
])
def test_config_file_errors_name_the_field(tmp_path: Path, kubeconfig: str, text: str, message: str) -> None:
    config = tmp_path / "kube-proxy.yaml"
    config.write_text("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" + text)
    result = CliRunner().invoke(main, ["proxy", "--kubeconfig", kubeconfig, "--config", str(config)])
    assert result.exit_code == 2
    assert message in result.output


def test_the_config_files_kubeconfig_is_used_when_no_flag_names_one(tmp_path: Path) -> None:
    config = tmp_path / "kube-proxy.yaml"
    config.write_text(f"clientConnection: {{kubeconfig: {tmp_path / 'missing'}}}\n")
    result = CliRunner().invoke(main, ["proxy", "--config", str(config)])
    assert result.exit_code == 1 and "missing" in result.output  # got past the usage check, then could not read it


def test_cleanup_needs_no_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    iptables = Iptables(Mode.NFT, lambda argv, stdin=None: Result(0, "", ""))
    seen: list[Iptables] = []
    monkeypatch.setattr("control.util.iptables.detect", lambda: iptables)
    monkeypatch.setattr("proxy.app.run_cleanup", lambda given: seen.append(given) or True)
    result = CliRunner().invoke(main, ["proxy", "--cleanup"])
    assert result.exit_code == 0, result.output
    assert seen == [iptables] and "proxy rules removed (nft backend)" in result.output


def test_help_lists_the_contract_flags() -> None:
    result = CliRunner().invoke(main, ["proxy", "--help"])
    assert result.exit_code == 0
    for flag in ("--kubeconfig", "--server", "--token-file", "--config", "--cleanup", "--hostname-override",
                 "--cluster-cidr", "--healthz-bind-address", "--metrics-bind-address"):
        assert flag in result.output


class FakeKubelet:
    node_name = "n1"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("kubelet start")

    def stop(self) -> None:
        self.log.append("kubelet stop")

    def is_ready(self) -> bool:
        return True


def test_up_starts_the_proxy_once_the_node_is_registered() -> None:
    log: list[str] = []
    stop = threading.Event()
    stop.set()
    run_kubelet(FakeKubelet(log), stop, say=lambda line: None, on_registered=lambda: log.append("proxy start"))
    assert log == ["kubelet start", "proxy start", "kubelet stop"]


def test_a_proxy_that_cannot_start_stops_the_kubelet() -> None:
    log: list[str] = []

    def fail() -> None:
        raise NodeError("the kube-proxy did not start: port in use")

    with pytest.raises(NodeError, match="kube-proxy"):
        run_kubelet(FakeKubelet(log), threading.Event(), say=lambda line: None, on_registered=fail)
    assert log == ["kubelet start", "kubelet stop"]
