"""Which iptables backend the host uses, and a small client for it.

iptables 1.8 has two backends, legacy and nft, each with its own `-save`/`-restore`; rules written with
one are invisible to the other's `-save`, and a DROP in one drops what the other accepts. So the backend
is decided once, from what the kernel holds, and every call afterwards uses that backend's binaries.

The decision follows upstream's iptables wrapper (kubernetes-sigs/iptables-wrappers): a kubelet's hint
chains (KUBE-IPTABLES-HINT / KUBE-KUBELET-CANARY) in nft's mangle table, then in legacy's tables
(pkg/xtables/detect.go; legacy is read without `-t mangle`, which would create the table); failing that,
the older shell wrapper's rule count (build/debian-iptables/iptables-wrapper: legacy when it holds 10 or
more rules, else whichever holds more). Where neither holds a rule, we take the backend the system's
`iptables` command is set to, instead of the wrapper's fixed default: on a fresh host that is what Docker
will write with. `decide_mode` is pure; `detect` runs the saves.

Rules are loaded with `<backend>-restore --noflush -w` and jump rules from built-in chains are ensured
with `-C` then `-I` (a jump inside a `--noflush` restore would be appended again on every load).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

_HINT_CHAINS = re.compile(r"^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b", re.MULTILINE)
LEGACY_RULES_THRESHOLD = 10  # the shell wrapper's "clearly in use" count of legacy rules


class Mode(str, Enum):
    LEGACY = "legacy"
    NFT = "nft"


class IptablesError(RuntimeError):
    """An iptables command failed; the message carries its stderr."""


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class JumpRule:
    """A rule in a built-in chain that sends traffic to one of ours (argv form, as `iptables -C/-I/-D`)."""

    table: str
    chain: str
    rule: tuple[str, ...]


class Runner(Protocol):
    """Runs one command; tests substitute a recorder."""

    def __call__(self, argv: Sequence[str], *, stdin: str | None = None) -> Result: ...


def run_command(argv: Sequence[str], *, stdin: str | None = None) -> Result:
    done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=60)
    return Result(done.returncode, done.stdout, done.stderr)


def count_rules(saved: str) -> int:
    return sum(1 for line in saved.splitlines() if line.startswith("-"))


def decide_mode(*, nft_mangle: str, legacy_all: str, nft_all: str, system_default: Mode) -> Mode:
    """The backend in use, from the `-save` outputs of both backends (see the module docstring)."""
    if _HINT_CHAINS.search(nft_mangle):
        return Mode.NFT
    if _HINT_CHAINS.search(legacy_all):
        return Mode.LEGACY
    legacy, nft = count_rules(legacy_all), count_rules(nft_all)
    if legacy >= LEGACY_RULES_THRESHOLD or (legacy > nft):
        return Mode.LEGACY
    if nft > legacy:
        return Mode.NFT
    return system_default


@dataclass(frozen=True)
class Iptables:
    """One backend's binaries and the commands the node agent needs from them."""

    mode: Mode
    run: Runner = run_command

    def _binary(self, tool: str) -> str:
        return tool.replace("iptables", f"iptables-{self.mode.value}", 1)

    def restore(self, text: str) -> None:
        """Load `text` (iptables-restore format) without flushing what it does not name."""
        self._checked([self._binary("iptables-restore"), "--noflush", "-w"], stdin=text)

    def save(self, table: str) -> str:
        return self._checked([self._binary("iptables-save"), "-t", table]).stdout

    def has_rule(self, table: str, chain: str, rule: Sequence[str]) -> bool:
        return self.run([self._binary("iptables"), "-w", "-t", table, "-C", chain, *rule]).returncode == 0

    def insert_rule(self, table: str, chain: str, rule: Sequence[str]) -> None:
        self._checked([self._binary("iptables"), "-w", "-t", table, "-I", chain, *rule])

    def delete_rule(self, table: str, chain: str, rule: Sequence[str]) -> None:
        self._checked([self._binary("iptables"), "-w", "-t", table, "-D", chain, *rule])

    def has_chain(self, table: str, chain: str) -> bool:
        return self.run([self._binary("iptables"), "-w", "-t", table, "-S", chain]).returncode == 0

    def _checked(self, argv: list[str], *, stdin: str | None = None) -> Result:
        result = self.run(argv, stdin=stdin)
        if result.returncode != 0:
            raise IptablesError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
        return result


def detect(run: Runner = run_command) -> Iptables:
    """Read both backends and decide which one is in use (a few tens of ms). A host with only one
    backend installed uses that one."""
    installed = [mode for mode in Mode if shutil.which(f"iptables-{mode.value}-save")]
    if not installed:
        raise IptablesError("neither iptables-legacy nor iptables-nft is installed")
    if len(installed) == 1:
        return Iptables(mode=installed[0], run=run)
    version = run(["iptables", "--version"]).stdout if shutil.which("iptables") else ""
    mode = decide_mode(nft_mangle=run(["iptables-nft-save", "-t", "mangle"]).stdout,
                       legacy_all=run(["iptables-legacy-save"]).stdout,
                       nft_all=run(["iptables-nft-save"]).stdout,
                       system_default=Mode.LEGACY if "legacy" in version else Mode.NFT)
    return Iptables(mode=mode, run=run)
