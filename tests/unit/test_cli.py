"""The command-line contract: every subcommand exists; unbuilt ones fail loudly with exit 2."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from control.cli import NOT_BUILT_EXIT, main
from control.version import SLIMKUBE_VERSION


def test_version_names_slimkube_and_kubernetes_levels():
    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"slimkube {SLIMKUBE_VERSION} (Kubernetes v1.")


@pytest.mark.parametrize("command", ["server", "agent", "proxy", "up", "down"])
def test_unbuilt_subcommands_say_so_and_exit_2(command):
    result = CliRunner().invoke(main, [command, "--data-dir", "/tmp/x"])
    assert result.exit_code == NOT_BUILT_EXIT
    assert "not built yet" in result.output
