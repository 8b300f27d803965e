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
