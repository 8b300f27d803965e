"""What CNI calls raise. Every one is a PodNetworkError, so the pod-sync code, which catches the pod
network's errors per step, records a failed ADD as a failed sandbox (an event) and retries it."""

from __future__ import annotations

from nodeagent.network.podnet import PodNetworkError


class CNIError(PodNetworkError):
    """A CNI operation failed."""


class ConfigError(CNIError):
    """No usable network configuration (none in the directory, bad JSON, a required field missing)."""


class PluginError(CNIError):
    """A plugin failed: its error JSON (spec "Error" result: code, msg, details) or what it printed."""

    def __init__(self, plugin: str, command: str, *, code: int, msg: str, details: str = "") -> None:
        self.plugin, self.command, self.code, self.msg, self.details = plugin, command, code, msg, details
        text = f"plugin type={plugin!r} failed ({command.lower()}): {msg}" + (f"; {details}" if details else "")
        super().__init__(text if code <= 0 else f"{text} (code {code})")
