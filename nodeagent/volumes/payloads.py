"""What files a configMap, secret, downwardAPI or projected volume holds: pure functions from the volume
source and the referenced objects to a payload (path → bytes and mode).

Upstream: pkg/volume/configmap/configmap.go MakePayload, pkg/volume/secret/secret.go MakePayload,
pkg/volume/downwardapi/downwardapi.go CollectData, pkg/volume/projected/projected.go collectData.

Facts kept from upstream:

* Without `items` every key becomes a file named after it; with `items` only the listed keys, each at its
  `path`. A listed key the object lacks fails the mount (`configmap references non-existent config key:
  K` / `references non-existent secret key: K`) unless the source is `optional`, which skips it.
* File mode: the item's `mode`, else the source's `defaultMode`, else 0644 (the API default for all four;
  a secret's files are 0644 too unless the manifest says otherwise).
* ConfigMap `binaryData` and Secret `data` are base64 in JSON and written decoded.
* A downwardAPI item's file holds the value with no trailing newline.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from control.api.typed.core import ConfigMap, Secret
from nodeagent.runtime.downward import UNKNOWN_NODE, DownwardAPIError, NodeFacts, field_value, resource_value
from nodeagent.volumes.atomic_writer import FileProjection

DEFAULT_MODE = 0o644


class PayloadSourceError(ValueError):
    """A volume source that cannot be turned into files (missing key, bad downward API path)."""


def configmap_files(configmap: Mapping[str, Any]) -> dict[str, bytes]:
    """A ConfigMap's `data` and decoded `binaryData` as bytes by key."""
    view = ConfigMap(configmap)
    files = {key: str(value).encode() for key, value in view.data.items()}
    for key, value in view.binary_data.items():
        files[key] = base64.b64decode(value or "")
    return files


def secret_files(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's decoded `data` by key."""
    return {key: base64.b64decode(value or "") for key, value in Secret(secret).data.items()}


def keyed_payload(files: Mapping[str, bytes], items: Sequence[Mapping[str, Any]] | None, *, default_mode: int | None,
                  optional: bool, missing: str) -> dict[str, FileProjection]:
    """Upstream MakePayload for configMap and secret: `missing` is the message prefix for an absent key."""
    mode = DEFAULT_MODE if default_mode is None else int(default_mode)
    if not items:
        return {key: FileProjection(data, mode) for key, data in files.items()}
    payload: dict[str, FileProjection] = {}
    for item in items:
        key = item.get("key", "")
        if key not in files:
            if optional:
                continue
            raise PayloadSourceError(f"{missing}: {key}")
        item_mode = item.get("mode")
        payload[item.get("path", key)] = FileProjection(files[key], mode if item_mode is None else int(item_mode))
    return payload


def downward_payload(items: Sequence[Mapping[str, Any]], pod: Mapping[str, Any], *, default_mode: int | None,
                     pod_ips: Sequence[str] = (), node: NodeFacts = UNKNOWN_NODE) -> dict[str, FileProjection]:
    """Upstream downwardapi CollectData: one file per item, fieldRef or resourceFieldRef."""
    mode = DEFAULT_MODE if default_mode is None else int(default_mode)
    payload: dict[str, FileProjection] = {}
    for item in items:
        try:
            if item.get("fieldRef"):
                value = field_value(pod, item["fieldRef"].get("fieldPath", ""), pod_ips=pod_ips, node=node)
            elif item.get("resourceFieldRef"):
                ref = item["resourceFieldRef"]
                container = _named_container(pod, ref.get("containerName", ""))
                value = resource_value(ref, container, pod=pod, node=node)
            else:
                continue
        except DownwardAPIError as exc:
            raise PayloadSourceError(str(exc)) from exc
        item_mode = item.get("mode")
        payload[item.get("path", "")] = FileProjection(value.encode(), mode if item_mode is None else int(item_mode))
    return payload


def _named_container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    container: Mapping[str, Any]
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        if container.get("name") == name:
            return container
    raise PayloadSourceError(f"container {name!r} not found in pod for resourceFieldRef")
