"""Network configuration lists (libcni/conf.go: ConfFiles, ConfListFromBytes, ConfFromBytes,
ConfListFromConf; libcni/api.go buildOneConfig, injectRuntimeConfig), pure.

A runtime uses the first configuration in lexical order of the file names among `*.conf`, `*.conflist` and
`*.json` in its configuration directory (the dockershim-era kubelet's getDefaultCNINetwork, which skips a
file that does not parse or has no plugins). A `.conflist` holds `name`, `cniVersion`, `disableCheck` and
`plugins`; a single-plugin `.conf`/`.json` becomes a list of that one plugin.

Each plugin is run with its own object from the list, into which the runtime writes the list's `name`
and `cniVersion`, the previous plugin's result as `prevResult` (none for the first plugin of an ADD; the
cached ADD result for every plugin of CHECK and DEL), and `runtimeConfig` holding the capability arguments
the plugin asks for in its `capabilities` (e.g. `portMappings` for hostPorts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.network.cni import version
from nodeagent.network.cni.errors import ConfigError

EXTENSIONS = (".conf", ".conflist", ".json")


@dataclass(frozen=True)
class NetworkConfigList:
    """One network: its plugins in order, and the bytes it was read from (kept with each ADD in the cache)."""

    name: str
    cni_version: str
    plugins: tuple[Mapping[str, Any], ...]
    disable_check: bool = False
    source: bytes = b""

    def plugin_types(self) -> tuple[str, ...]:
        return tuple(str(p["type"]) for p in self.plugins)


def candidates(file_names: Iterable[str]) -> list[str]:
    """The configuration files among `file_names`, in the order a runtime tries them (lexical)."""
    return sorted(name for name in file_names if name.endswith(EXTENSIONS))


def parse(data: bytes, file_name: str) -> NetworkConfigList:
    """A list from a file's bytes; `.conflist` as a list, anything else as one plugin. ConfigError if bad."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file_name}: not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{file_name}: expected a JSON object")
    if file_name.endswith(".conflist"):
        plugins = document.get("plugins")
        if not isinstance(plugins, list) or not plugins:
            raise ConfigError(f"{file_name}: no plugins in the list")
        name = document.get("name")
        disable_check = _boolean(document.get("disableCheck", False), file_name)
    else:
        plugins, name, disable_check = [document], document.get("name"), False
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{file_name}: missing network name")
    cni_version = document.get("cniVersion", "")
    try:
        version.parse(cni_version if isinstance(cni_version, str) else "?")
    except ValueError as exc:
        raise ConfigError(f"{file_name}: {exc}") from None
    for index, plugin in enumerate(plugins):
        if not isinstance(plugin, dict) or not isinstance(plugin.get("type"), str) or not plugin["type"]:
            raise ConfigError(f"{file_name}: plugin {index} has no type")
    return NetworkConfigList(name=name, cni_version=cni_version, plugins=tuple(plugins),
                             disable_check=disable_check, source=bytes(data))


def _boolean(value: Any, file_name: str) -> bool:
    """disableCheck: a JSON boolean, or the strings "true"/"false" as libcni also accepts."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{file_name}: disableCheck must be true or false, got {value!r}")


def plugin_config(network: NetworkConfigList, plugin: Mapping[str, Any], *,
                  prev_result: Mapping[str, Any] | None, capability_args: Mapping[str, Any]) -> dict[str, Any]:
    """The stdin object for one plugin: its own config, the list's name and version, `prevResult` when
    given, and `runtimeConfig` with the capability arguments the plugin declares it supports."""
    config = dict(plugin)
    config["name"] = network.name
    config["cniVersion"] = network.cni_version
    if prev_result is not None:
        config["prevResult"] = dict(prev_result)
    capabilities = plugin.get("capabilities") or {}
    runtime_config = {cap: capability_args[cap] for cap, enabled in capabilities.items()
                      if enabled is True and cap in capability_args}
    if runtime_config:
        config["runtimeConfig"] = runtime_config
    return config
