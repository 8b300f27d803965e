"""Running one plugin (upstream pkg/invoke: args.go AsEnv, find.go FindInPath, raw_exec.go ExecPlugin):
the narrow exec interface the rest of the package is written against, and the real one.

A plugin is an executable named by the config's `type`, found in the first of the `CNI_PATH` directories
that has it; it gets the network config on stdin and its arguments in the environment — `CNI_COMMAND`
(ADD, CHECK, DEL, VERSION), `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_ARGS` (`K=V;K=V`) and
`CNI_PATH` (the directories, ':'-separated) — on top of the runtime's own environment, and prints its
result (or error JSON) on stdout.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nodeagent.network.cni.errors import CNIError

DEFAULT_TIMEOUT = 60.0  # seconds for one plugin call; a plugin that hangs fails the call, which is retried


@dataclass(frozen=True)
class Args:
    command: str
    container_id: str
    netns: str
    ifname: str
    plugin_args: tuple[tuple[str, str], ...] = ()
    path: tuple[str, ...] = ()


def environment(args: Args) -> dict[str, str]:
    """The CNI_* variables of one call."""
    return {"CNI_COMMAND": args.command, "CNI_CONTAINERID": args.container_id, "CNI_NETNS": args.netns,
            "CNI_IFNAME": args.ifname, "CNI_ARGS": ";".join(f"{k}={v}" for k, v in args.plugin_args),
            "CNI_PATH": os.pathsep.join(args.path)}


@dataclass(frozen=True)
class ExecOutput:
    returncode: int
    stdout: bytes
    stderr: bytes


class Exec(Protocol):
    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str: ...

    def run(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> ExecOutput: ...


class RawExec:
    """Plugins as subprocesses of the kubelet."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout

    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str:
        if not plugin or "/" in plugin or plugin in (".", ".."):
            raise CNIError(f"invalid plugin type {plugin!r}")
        for directory in paths:
            candidate = os.path.join(directory, plugin)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        raise CNIError(f'failed to find plugin "{plugin}" in path {list(paths)}')

    def run(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> ExecOutput:
        try:
            done = subprocess.run([plugin_path], input=stdin, env={**os.environ, **env}, capture_output=True,
                                  timeout=self._timeout, check=False)
        except subprocess.TimeoutExpired:
            command = env.get("CNI_COMMAND")
            raise CNIError(f"plugin {plugin_path} ({command}) timed out after {self._timeout:g}s") from None
        except OSError as exc:
            raise CNIError(f"running plugin {plugin_path}: {exc}") from exc
        return ExecOutput(done.returncode, done.stdout, done.stderr)
