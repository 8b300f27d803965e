"""The provisioning commands of vagrant/Vagrantfile, read from the file itself, so the tests that check them
(tests/unit/test_vagrantfile.py) and the one that runs a worker's (tests/e2e/test_provision_worker.py) use
the one source of truth the VMs use."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

VAGRANTFILE = Path(__file__).resolve().parents[2] / "vagrant" / "Vagrantfile"


def provisioning_calls(*, ip: str = "192.0.2.11") -> list[list[str]]:
    """Each `#{INSTALL} ...` line as words, with the Vagrantfile's constants filled in and the given per-VM
    value of a worker's `#{ip}`."""
    text = VAGRANTFILE.read_text()
    constants = dict(re.findall(r'^([A-Z_]+) = "(.*)"$', text, re.MULTILINE))
    values = {"ip": ip}

    def fill(line: str) -> str:
        while "#{" in line:
            line = re.sub(r"#\{(\w+)\}", lambda m: constants.get(m.group(1)) or values[m.group(1)], line)
        return line

    lines = [fill(line.strip()) for line in text.splitlines() if line.strip().startswith("#{INSTALL}")]
    return [shlex.split(line) for line in lines]


def worker_call(**values: str) -> list[str]:
    """The worker's call: `SLIMKUBE_VENV=… …/install.sh --role agent --server URL --token-file FILE -- FLAGS`."""
    (call,) = [call for call in provisioning_calls(**values) if "agent" in call]
    return call
