"""Where `slimkube agent` and `slimkube proxy` read the join token from: `--token-file FILE`, else the
environment's `SLIMKUBE_TOKEN`, else (deprecated) `--token TOKEN` (k3s's `--token-file` / `K3S_TOKEN`).

Why not argv: every local user reads every process's command line (`ps`, /proc/PID/cmdline is mode 0444),
so a token on it is the cluster's to anyone with a shell on a worker. A file (mode 0600) or the environment
(/proc/PID/environ is readable by the process's owner only) keeps it to root. `--token` still works for old
scripts, with a warning that says why it should not be used.

`resolve` is pure but for reading the file; the CLI turns `TokenSourceError` into a usage error naming the
flag, and drops SLIMKUBE_TOKEN from its own environment once read, so the processes it starts (iptables,
`ip`, conntrack) do not inherit it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

ENV_VAR = "SLIMKUBE_TOKEN"
ARGV_WARNING = ("--token puts the join token on the command line, where any local user reads it (ps, "
                "/proc/PID/cmdline); it is deprecated: use --token-file FILE (mode 0600) or SLIMKUBE_TOKEN "
                "in the environment")


class TokenSourceError(ValueError):
    """The token cannot be read as given; `flag` names the option to change."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class JoinSecret:
    """The token and where it came from; `warnings` are for the operator's log (never the token itself)."""

    token: str
    origin: str
    warnings: tuple[str, ...] = ()


def resolve(*, token: str | None, token_file: str | None, environ: Mapping[str, str]) -> JoinSecret | None:
    """The join token from exactly one of `--token-file`, `--token` or SLIMKUBE_TOKEN (in that order of
    preference; the two flags together are an error); None when none is given."""
    if token and token_file:
        raise TokenSourceError("--token-file", "give --token-file or --token, not both")
    if token_file:
        return _from_file(token_file)
    if token:
        return JoinSecret(token=token.strip(), origin="--token", warnings=(ARGV_WARNING,))
    if value := environ.get(ENV_VAR, "").strip():
        return JoinSecret(token=value, origin=ENV_VAR)
    return None


def _from_file(path: str) -> JoinSecret:
    try:
        with open(path, encoding="utf-8") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            text = handle.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not text"
        raise TokenSourceError("--token-file", f"cannot read {path}: {reason}") from None
    if not text:
        raise TokenSourceError("--token-file", f"{path} is empty")
    notes = () if not stat.S_IMODE(mode) & 0o077 else (
        f"--token-file {path} is readable by others (mode {stat.S_IMODE(mode):04o}); chmod 600 it",)
    return JoinSecret(token=text, origin=f"--token-file {path}", warnings=notes)
