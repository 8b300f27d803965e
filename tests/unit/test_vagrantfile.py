"""vagrant/Vagrantfile: `vagrant validate` accepts it for several worker counts (Debian's vagrant, installed by
install.sh under CI=true; provider settings are skipped, as no hypervisor plugin is installed), and each
VM's provisioning calls install.sh with flags install.sh knows and daemon flags `slimkube` accepts."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from slimkube.cli import main

ROOT = Path(__file__).resolve().parents[2]
VAGRANTFILE = ROOT / "vagrant" / "Vagrantfile"


def vagrant() -> str:
    path = shutil.which("vagrant")
    if path is None:
        message = "vagrant is not installed (install.sh installs it under CI=true)"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
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


def provisioning_calls() -> list[list[str]]:
    """Each `#{INSTALL} ...` line, with the Vagrantfile's constants filled in, a worker's address for
    `#{ip}` and a token for the `$(cat …)` that reads it."""
    text = VAGRANTFILE.read_text()
    constants = dict(re.findall(r'^([A-Z_]+) = "(.*)"$', text, re.MULTILINE))
    values = {"ip": "192.0.2.11"}

    def fill(line: str) -> str:
        while "#{" in line:
            line = re.sub(r"#\{(\w+)\}", lambda m: constants.get(m.group(1)) or values[m.group(1)], line)
        return line

    lines = [fill(line.strip()) for line in text.splitlines() if line.strip().startswith("#{INSTALL}")]
    return [shlex.split(re.sub(r'"\$\(cat [^)]*\)"', "K10abc::node:secret", line)) for line in lines]


def test_provisioning_uses_install_sh_flags_and_daemon_flags_that_exist() -> None:
    install_flags = set(re.findall(r"^\s+(--[a-z-]+)\)", (ROOT / "install.sh").read_text(), re.MULTILINE))
    calls = provisioning_calls()
    roles = []
    for call in calls:
        env, script, *args = call
        assert env == "SLIMKUBE_VENV=/opt/slimkube/venv" and script == "/slimkube/install.sh"
        ours, daemon_args = args[:args.index("--")], args[args.index("--") + 1:]
        assert {word for word in ours if word.startswith("--")} <= install_flags
        role = ours[ours.index("--role") + 1]
        roles.append(role)
        command = main.commands[role]
        flags = ours[ours.index("--role") + 2:] if role == "agent" else []  # --server URL --token TOKEN
        with command.make_context(role, [*flags, *daemon_args]) as context:  # a bad flag raises UsageError
            assert context.params
    assert sorted(roles) == ["agent", "server"]
