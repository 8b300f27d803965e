"""vagrant/Vagrantfile: `vagrant validate` accepts it for several worker counts (Debian's vagrant, installed by
install.sh under CI=true; provider settings are skipped, as no hypervisor plugin is installed), and each
VM's provisioning calls install.sh with flags install.sh knows and daemon flags `slimkube` accepts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from slimkube.cli import main
from tests.conftest import unavailable
from tests.support.vagrantfile import VAGRANTFILE, provisioning_calls

ROOT = Path(__file__).resolve().parents[2]


def vagrant() -> str:
    path = shutil.which("vagrant")
    if path is None:
        unavailable("vagrant", "not installed (install.sh installs it under CI=true)")
    return path


@pytest.mark.parametrize("workers", ["0", "2", "5"])
def test_vagrant_validate(workers: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [vagrant(), "validate", "--ignore-provider"], cwd=VAGRANTFILE.parent, capture_output=True, text=True,
        timeout=120, env={**os.environ, "SLIMKUBE_WORKERS": workers, "VAGRANT_HOME": str(tmp_path / "home"),
                          "VAGRANT_DOTFILE_PATH": str(tmp_path / "dotfile"), "VAGRANT_CHECKPOINT_DISABLE": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Vagrantfile validated successfully" in result.stdout
    assert result.stdout.count("Ignoring provider config") == 1 + int(workers)  # one line per machine


def test_provisioning_uses_install_sh_flags_and_daemon_flags_that_exist() -> None:
    install_flags = set(re.findall(r"^\s+(--[a-z-]+)\)", (ROOT / "install.sh").read_text(), re.MULTILINE))
    calls = provisioning_calls()
    roles = []
    for call in calls:
        env, script, *args = call
        assert env == "SLIMKUBE_VENV=/opt/slimkube/venv" and script == "/slimkube/install.sh"
        ours, daemon_args = args[:args.index("--")], args[args.index("--") + 1:]
        assert {word for word in ours if word.startswith("--")} <= install_flags
        assert "--token" not in ours and not any("$(" in word for word in call)  # the token stays in files
        role = ours[ours.index("--role") + 1]
        roles.append(role)
        command = main.commands[role]
        flags = ours[ours.index("--role") + 2:] if role == "agent" else []  # --server URL --token-file FILE
        with command.make_context(role, [*flags, *daemon_args]) as context:  # a bad flag raises UsageError
            assert context.params
    assert sorted(roles) == ["agent", "server"]
