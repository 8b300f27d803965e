"""systemd/*.service as text, without systemd (tests/integration/test_systemd_units.py runs
`systemd-analyze verify` and the daemons): each unit is Type=notify, restarts on failure, starts after the
network (and dockerd, for the node's daemons), logs to the journal, reads its .env file, and its ExecStart —
with the variables the .env file sets — is a command line `slimkube` accepts, with no secret on it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from slimkube.cli import main

SYSTEMD = Path(__file__).resolve().parents[2] / "systemd"
UNITS = {"slimkube-server.service": "server", "slimkube-agent.service": "agent", "slimkube-proxy.service": "proxy"}
ENV = {"SLIMKUBE_SERVER_URL": "https://192.0.2.10:6443", "SLIMKUBE_TOKEN": "K10abc::node:secret",
       "SLIMKUBE_SERVER_ARGS": "--advertise-address 192.0.2.10", "SLIMKUBE_AGENT_ARGS": "--node-ip 192.0.2.11",
       "SLIMKUBE_PROXY_ARGS": ""}


def settings(unit: str) -> dict[str, list[str]]:
    """KEY → every value it is given, over all sections (keys here do not repeat across sections)."""
    found: dict[str, list[str]] = {}
    for line in (SYSTEMD / unit).read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def expand(command: str) -> list[str]:
    """systemd's ExecStart expansion: ${VAR} is one word, $VAR splits on white space."""
    words: list[str] = []
    for word in command.split():
        if whole := re.fullmatch(r"\$\{(\w+)\}", word):
            words.append(ENV[whole.group(1)])
        elif split := re.fullmatch(r"\$(\w+)", word):
            words.extend(shlex.split(ENV[split.group(1)]))
        else:
            words.append(word)
    return words


def parse_slimkube(args: list[str]) -> dict:
    """The subcommand's parameters as click parses `slimkube ARGS` (a bad flag raises a UsageError)."""
    name, *rest = args
    command = main.commands[name]
    with command.make_context(name, rest) as context:
        return context.params


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_unit_is_notify_restarts_on_failure_and_logs_to_the_journal(unit: str) -> None:
    found = settings(unit)
    assert found["Type"] == ["notify"] and found["NotifyAccess"] == ["main"]
    assert found["Restart"] == ["on-failure"]
    assert found["StandardOutput"] == found["StandardError"] == ["journal"]
    assert found["WantedBy"] == ["multi-user.target"]
    after, wants = found["After"][0].split(), found["Wants"][0].split()
    assert "network-online.target" in after and "network-online.target" in wants
    if UNITS[unit] != "server":  # the server does not use dockerd
        assert "docker.service" in after and "docker.service" in wants
    daemon = UNITS[unit]
    assert found["EnvironmentFile"][0].lstrip("-") == f"/etc/slimkube/{daemon}.env"


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_exec_start_is_a_command_line_slimkube_accepts(unit: str) -> None:
    (command,) = settings(unit)["ExecStart"]
    binary, *args = expand(command)
    assert binary == "/usr/local/bin/slimkube"  # install.sh links it to its virtualenv's
    assert args[0] == UNITS[unit]
    params = parse_slimkube(args)
    if UNITS[unit] != "server":  # the node's daemons: the upstream config file, joined with the token
        assert params["config_file"] == f"/etc/slimkube/{UNITS[unit]}.yaml"
        assert params["server"] == ENV["SLIMKUBE_SERVER_URL"]
        # the token comes from the environment the EnvironmentFile sets (SLIMKUBE_TOKEN), not the command line
        assert params["token"] is None and params["token_file"] is None
        assert "TOKEN" not in command
