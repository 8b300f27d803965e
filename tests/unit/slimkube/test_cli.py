"""The command-line contract: every subcommand exists; bad flags are usage errors (exit 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from control.util.version import SLIMKUBE_VERSION
from slimkube.cli import main
from slimkube.controlplane import parse_disable


def test_version_names_slimkube_and_kubernetes_levels():
    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"slimkube {SLIMKUBE_VERSION} (Kubernetes v1.")


@pytest.mark.parametrize("args,message", [
    pytest.param(["--datastore", "mysql://x"], "bad datastore URL", id="datastore"),
    pytest.param(["--service-cidr", "10.96.0.1/12"], "host bits set", id="service-cidr"),
    pytest.param(["--port", "70000"], "70000", id="port"),
])
def test_server_refuses_bad_flags_with_usage_errors(tmp_path, args, message):
    result = CliRunner().invoke(main, ["server", "--data-dir", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_up_refuses_unknown_disable_names_before_starting_anything(tmp_path):
    result = CliRunner().invoke(main, ["up", "--data-dir", str(tmp_path), "--disable", "bogus"])
    assert result.exit_code == 2
    assert "bogus" in result.output and "endpoint" in result.output  # names the known ones too
    assert list(tmp_path.iterdir()) == []  # no lock, store or kubeconfig was made


@pytest.mark.parametrize("text,expected", [
    pytest.param("", frozenset(), id="empty"),
    pytest.param("endpoint", frozenset({"endpoint"}), id="one"),
    pytest.param(" endpoint , ,endpoint", frozenset({"endpoint"}), id="spaces-and-repeats"),
])
def test_parse_disable_takes_known_names(text, expected):
    assert parse_disable(text) == expected


def test_parse_disable_names_unknown_and_known():
    with pytest.raises(ValueError, match=r"unknown bogus \(known: endpoint"):
        parse_disable("endpoint,bogus")


def test_the_scheduler_can_be_disabled_by_name():
    assert parse_disable("scheduler,endpoint") == frozenset({"scheduler", "endpoint"})


@pytest.mark.parametrize("command", ["server", "up"])
@pytest.mark.parametrize("content,message", [
    pytest.param("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 "percentageOfNodesToScore: 120\n", "percentageOfNodesToScore: Invalid value: 120", id="range"),
    pytest.param("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: Bogus\n",
                 "profiles[0]: plugin 'Bogus' is not implemented", id="plugin"),
    pytest.param("kind: KubeSchedulerConfiguration\n", "apiVersion: Unsupported value", id="apiVersion"),
    pytest.param("profiles: [\n", "is not valid YAML", id="yaml"),
])
def test_a_bad_scheduler_config_is_a_usage_error_naming_the_field(tmp_path, command, content, message):
    path = tmp_path / "scheduler.yaml"
    path.write_text(content)
    data_dir = tmp_path / "data"
    result = CliRunner().invoke(main, [command, "--data-dir", str(data_dir), "--scheduler-config", str(path)])
    assert result.exit_code == 2, result.output
    assert "--scheduler-config" in result.output and message in result.output
    assert not data_dir.exists()  # refused before anything started


def test_a_bad_scheduler_bind_address_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["server", "--data-dir", str(tmp_path), "--scheduler-bind-address", "nowhere"])
    assert result.exit_code == 2 and "--scheduler-bind-address" in result.output
