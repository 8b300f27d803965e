"""The record of each attachment (libcni api.go cacheAdd / getCachedConfig / getCachedResult /
GetCachedAttachments), so a DEL can run exactly as the ADD did: after an agent restart, after the pod is
gone, and after the configuration directory changed.

One JSON file per attachment at `<dir>/results/<network>-<container id>-<ifname>` in libcni's `cniCacheV1`
shape: `containerId`, `config` (the list's bytes, base64 as Go encodes []byte), `ifName`, `networkName`,
`netns`, `cniArgs` ([[key, value]]), `capabilityArgs` and `result`. libcni keeps it under /var/lib/cni; the
kubelet keeps it under its own state directory (several agents of `up --nodes` share one filesystem).

Departure: the record is written before the first plugin runs (without a result) and again with the
result, so an agent killed in the middle of an ADD still finds what to DEL. Files are replaced atomically.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeagent.network.cni.errors import CNIError

KIND = "cniCacheV1"


@dataclass(frozen=True)
class CachedAttachment:
    container_id: str
    network_name: str
    ifname: str
    config: bytes  # the configuration list as it was read for the ADD
    netns: str = ""
    cni_args: tuple[tuple[str, str], ...] = ()
    capability_args: Mapping[str, Any] = field(default_factory=dict)
    result: Mapping[str, Any] | None = None  # None: the ADD did not finish

    @property
    def key(self) -> str:
        return cache_key(self.network_name, self.container_id, self.ifname)


def cache_key(network_name: str, container_id: str, ifname: str) -> str:
    """libcni's file name; every part must be set (a partial key could name another attachment's file)."""
    if not network_name or not container_id or not ifname:
        raise CNIError(f"cache key needs network name ({network_name!r}), container ID ({container_id!r}) and "
                       f"interface name ({ifname!r})")
    if "/" in network_name + container_id + ifname:
        raise CNIError(f"cache key parts may not contain '/': {network_name!r} {container_id!r} {ifname!r}")
    return f"{network_name}-{container_id}-{ifname}"


def encode(attachment: CachedAttachment) -> bytes:
    document: dict[str, Any] = {
        "kind": KIND, "containerId": attachment.container_id,
        "config": base64.b64encode(attachment.config).decode(), "ifName": attachment.ifname,
        "networkName": attachment.network_name}
    if attachment.netns:
        document["netns"] = attachment.netns
    if attachment.cni_args:
        document["cniArgs"] = [list(pair) for pair in attachment.cni_args]
    if attachment.capability_args:
        document["capabilityArgs"] = dict(attachment.capability_args)
    if attachment.result is not None:
        document["result"] = dict(attachment.result)
    return json.dumps(document).encode()


def decode(data: bytes) -> CachedAttachment:
    """A record from a cache file; CNIError if it is not a `cniCacheV1` record."""
    try:
        document = json.loads(data)
        if not isinstance(document, dict) or document.get("kind") != KIND:
            raise ValueError(f"kind is not {KIND}")
        return CachedAttachment(
            container_id=str(document["containerId"]), network_name=str(document["networkName"]),
            ifname=str(document["ifName"]), config=base64.b64decode(document.get("config") or "", validate=True),
            netns=str(document.get("netns") or ""),
            cni_args=tuple((str(k), str(v)) for k, v in document.get("cniArgs") or ()),
            capability_args=dict(document.get("capabilityArgs") or {}), result=document.get("result"))
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise CNIError(f"bad CNI cache record: {exc}") from None


class ResultCache:
    """The records under `<root>/results`."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.directory = Path(root) / "results"

    def put(self, attachment: CachedAttachment) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.directory / attachment.key
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(encode(attachment))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)

    def delete(self, attachment: CachedAttachment) -> None:
        (self.directory / attachment.key).unlink(missing_ok=True)

    def attachments(self, container_id: str | None = None) -> list[CachedAttachment]:
        """Every readable record (of one container if given), in file-name order; unreadable ones skipped
        as libcni's GetCachedAttachments does."""
        try:
            names = sorted(n for n in os.listdir(self.directory) if not n.startswith("."))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if container_id is not None and f"-{container_id}-" not in name:
                continue
            try:
                attachment = decode((self.directory / name).read_bytes())
            except (OSError, CNIError):
                continue
            if attachment.key == name and container_id in (None, attachment.container_id):
                found.append(attachment)
        return found
