"""ADD, CHECK and DEL of a configuration list (upstream libcni/api.go CNIConfig: AddNetworkList,
CheckNetworkList, DelNetworkList), over the exec interface of `invoke` and the cache of `cache`.

- ADD runs the plugins in order, each given the previous one's result as `prevResult`; the last result is
  the attachment's, cached with the list's bytes and the call's arguments. A plugin's failure stops the
  chain (the caller DELs, as the kubelet tears a failed sandbox down).
- CHECK (spec 0.4.0 and later, unless the list says `disableCheck`) runs every plugin with the cached
  result as `prevResult`; a plugin's error means the attachment is not as it should be.
- DEL runs the plugins in reverse order, with the cached result as `prevResult` from 0.4.0 on, then drops
  the cache record. Plugins must treat a DEL of something already gone as success (spec), so a DEL can be
  repeated until it succeeds.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.network.cni import version
from nodeagent.network.cni.cache import CachedAttachment, ResultCache
from nodeagent.network.cni.conf import NetworkConfigList, plugin_config
from nodeagent.network.cni.errors import CNIError, PluginError
from nodeagent.network.cni.invoke import Args, Exec, environment
from nodeagent.network.cni.result import Result, parse_error, parse_result


@dataclass(frozen=True)
class RuntimeConf:
    """One attachment's arguments (libcni RuntimeConf)."""

    container_id: str
    netns: str
    ifname: str
    args: tuple[tuple[str, str], ...] = ()  # CNI_ARGS
    capability_args: Mapping[str, Any] = field(default_factory=dict)  # runtimeConfig, by capability


class CNIConfig:
    def __init__(self, paths: Sequence[str], exec: Exec, cache: ResultCache) -> None:
        self.paths = tuple(paths)
        self._exec = exec
        self.cache = cache

    def add_network_list(self, network: NetworkConfigList, rt: RuntimeConf) -> Result:
        record = CachedAttachment(container_id=rt.container_id, network_name=network.name, ifname=rt.ifname,
                                  config=network.source, netns=rt.netns, cni_args=rt.args,
                                  capability_args=rt.capability_args)
        self.cache.put(record)  # before any plugin runs: a crash mid-ADD still leaves what to DEL
        result: Result | None = None
        for plugin in network.plugins:
            stdout = self._run("ADD", network, plugin, None if result is None else result.raw, rt)
            result = parse_result(stdout, plugin=str(plugin["type"]))
        assert result is not None  # a list has at least one plugin (conf.parse)
        self.cache.put(dataclasses.replace(record, result=result.raw))
        return result

    def check_network_list(self, network: NetworkConfigList, rt: RuntimeConf) -> None:
        if not version.at_least(network.cni_version, version.CHECK_SINCE):
            raise CNIError(f"configuration version {network.cni_version!r} does not support the CHECK command")
        if network.disable_check:
            return
        cached = self.cached_result(network, rt)
        for plugin in network.plugins:
            self._run("CHECK", network, plugin, cached, rt)

    def del_network_list(self, network: NetworkConfigList, rt: RuntimeConf) -> None:
        cached = self.cached_result(network, rt) if version.at_least(network.cni_version, version.CHECK_SINCE) else None
        for plugin in reversed(network.plugins):
            self._run("DEL", network, plugin, cached, rt)
        self.cache.delete(CachedAttachment(container_id=rt.container_id, network_name=network.name,
                                           ifname=rt.ifname, config=b""))

    def cached_result(self, network: NetworkConfigList, rt: RuntimeConf) -> Mapping[str, Any] | None:
        for attachment in self.cache.attachments(rt.container_id):
            if attachment.network_name == network.name and attachment.ifname == rt.ifname:
                return attachment.result
        return None

    def _run(self, command: str, network: NetworkConfigList, plugin: Mapping[str, Any],
             prev_result: Mapping[str, Any] | None, rt: RuntimeConf) -> bytes:
        kind = str(plugin["type"])
        try:
            path = self._exec.find_in_path(kind, self.paths)
            stdin = json.dumps(plugin_config(network, plugin, prev_result=prev_result,
                                             capability_args=rt.capability_args)).encode()
            args = Args(command=command, container_id=rt.container_id, netns=rt.netns, ifname=rt.ifname,
                        plugin_args=rt.args, path=self.paths)
            output = self._exec.run(path, stdin, environment(args))
        except PluginError:
            raise
        except CNIError as exc:
            raise PluginError(kind, command, code=0, msg=str(exc)) from exc
        if output.returncode != 0:
            raise parse_error(kind, command, output.stdout, output.stderr, output.returncode)
        return output.stdout
