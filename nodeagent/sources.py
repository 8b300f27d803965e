"""Static pod sources: manifests in a directory (file source) and at a URL (http source).

Upstream: pkg/kubelet/config/file.go, http.go and common.go (applyDefaults, generatePodName,
getSelfLink). What each static pod gets, as upstream's applyDefaults does:

- the API server's defaults (control/api/defaults.py), because upstream decodes manifests through
  the v1 defaulting too — so a container's spec hash here equals the one of the mirror pod the API
  server stores, and neither side sees a phantom change;
- uid (when the manifest has none) = hex md5 over "host:<node>" + "file:<path>" (file source) or
  "url:<url>" (http source) + the defaulted pod. Upstream hashes the Go object with DeepHashObject; we
  hash its canonical JSON (sorted keys), which is stable across restarts of ours, the property that
  matters: an unchanged file keeps its uid, so a restarted kubelet adopts its containers;
- name "<name>-<node name>", namespace "default" when absent, spec.nodeName, phase Pending;
- annotations kubernetes.io/config.hash (= the uid), kubernetes.io/config.source (file|http) and
  kubernetes.io/config.seen (when this uid was first seen; kept while the uid stays, so rereading an
  unchanged file is not a change);
- file pods tolerate every NoExecute taint (operator Exists), so node problems do not evict them;
- then the API server's validation (control/api/validation/), as upstream's ValidatePod: a pod the
  API server would refuse as a mirror is refused here too.

Both sources reread every `period` and call `on_update` with the full list whenever it differs from
the last one (and once at start, so the kubelet knows the source is ready, as upstream's first SET).
A manifest that cannot be read or is not a Pod is logged and left out (file source: that file only);
the http source keeps its last good list when the URL fails, as upstream does.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import requests
import yaml

from control.api.defaults import apply_defaults
from control.api.typed.core import Pod
from control.api.validation import validate
from control.apimachinery.meta import format_timestamp

log = logging.getLogger(__name__)

CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_SEEN = "kubernetes.io/config.seen"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
HTTP_TIMEOUT = 10.0
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """A manifest that is not a usable Pod (or PodList, for the http source)."""


def is_static(pod: Mapping[str, Any]) -> bool:
    """Whether `pod` came from a file or URL (upstream kubetypes.IsStaticPod)."""
    return Pod(pod).metadata.annotations.get(CONFIG_SOURCE) in ("file", "http")


def config_hash(pod: Mapping[str, Any]) -> str:
    return Pod(pod).metadata.annotations.get(CONFIG_HASH, "")


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def static_pod(raw: Mapping[str, Any], *, source: str, kind: str, node_name: str, seen: str) -> dict[str, Any]:
    """A manifest's Pod with upstream's static pod identity and defaults; `kind` is "file" or "http",
    `source` the path or URL, `seen` the config.seen value for a new uid."""
    if not isinstance(raw, Mapping) or raw.get("kind") != "Pod" or raw.get("apiVersion") not in ("v1", None):
        raise ManifestError("not a v1 Pod")
    pod = copy.deepcopy(dict(raw))
    pod["apiVersion"] = "v1"
    metadata = pod.setdefault("metadata", {})
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise ManifestError("metadata.name is required")
    if not isinstance(pod.get("spec"), dict) or not pod["spec"].get("containers"):
        raise ManifestError("spec.containers is required")
    apply_defaults("pods", pod)
    if not metadata.get("uid"):
        hasher = hashlib.md5(usedforsecurity=False)
        hasher.update(f"host:{node_name}file:{source}".encode() if kind == "file" else f"url:{source}".encode())
        hasher.update(_canonical(pod))
        metadata["uid"] = hasher.hexdigest()
    metadata["name"] = f"{metadata['name']}-{node_name.lower()}"
    metadata["namespace"] = metadata.get("namespace") or "default"
    metadata["selfLink"] = f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}"
    annotations = metadata.setdefault("annotations", {})
    annotations.update({CONFIG_HASH: metadata["uid"], CONFIG_SOURCE: kind, CONFIG_SEEN: seen})
    pod["spec"]["nodeName"] = node_name
    if kind == "file":
        tolerations = pod["spec"].setdefault("tolerations", [])
        wanted = {"operator": "Exists", "effect": "NoExecute"}
        if wanted not in tolerations:
            tolerations.append(wanted)
    pod["status"] = {"phase": "Pending"}
    errors = validate("pods", pod)
    if errors:
        raise ManifestError("invalid pod: " + "; ".join(str(e) for e in errors))
    return pod


def parse_manifest(data: bytes) -> Any:
    """YAML or JSON (JSON is YAML) into a document; ManifestError when it is neither."""
    try:
        return yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ManifestError(f"not YAML or JSON: {exc}") from None


class _PollingSource:
    """Reads every `period` on a thread; calls `on_update` with the full list when it changed."""

    kind = ""

    def __init__(self, source: str, period: float, on_update: Callable[[list[dict[str, Any]]], None],
                 node_name: str) -> None:
        self.source = source
        self.period = period
        self.on_update = on_update
        self.node_name = node_name
        self._seen: dict[str, str] = {}  # uid → config.seen of its first sighting
        self._last: list[dict[str, Any]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def read(self) -> list[dict[str, Any]] | None:
        """The source's pods now; None when the source could not be read (keep the last list)."""
        raise NotImplementedError

    def poll(self) -> bool:
        """Read once; call `on_update` if the list changed (or on the first read). Returns whether it did."""
        pods = self.read()
        if pods is None:
            return False
        self._seen = {uid: seen for uid, seen in self._seen.items()
                      if any(p["metadata"]["uid"] == uid for p in pods)}
        if self._last is not None and _canonical(pods) == _canonical(self._last):
            return False
        self._last = pods
        self.on_update(copy.deepcopy(pods))
        return True

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"{self.kind}-source", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=HTTP_TIMEOUT + 5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:  # a bug in one read must not end the source
                log.exception("%s source %s: read failed", self.kind, self.source)
            self._stop.wait(self.period)

    def _pod(self, raw: Any, origin: str) -> dict[str, Any]:
        pod = static_pod(raw, source=origin, kind=self.kind, node_name=self.node_name,
                         seen=format_timestamp(datetime.now(UTC), micro=True))
        annotations = pod["metadata"]["annotations"]
        annotations[CONFIG_SEEN] = self._seen.setdefault(pod["metadata"]["uid"], annotations[CONFIG_SEEN])
        return pod


class FileSource(_PollingSource):
    """Every regular file in directory `path` (or the file `path` itself), dotfiles ignored, one Pod each."""

    kind = "file"

    def read(self) -> list[dict[str, Any]] | None:
        if os.path.isdir(self.source):
            names = sorted(n for n in os.listdir(self.source) if not n.startswith("."))
            paths = [os.path.join(self.source, n) for n in names]
            paths = [p for p in paths if os.path.isfile(p)]
        elif os.path.isfile(self.source):
            paths = [self.source]
        else:
            log.warning("static pod path %s does not exist", self.source)
            return []
        pods = []
        for path in paths:
            try:
                with open(path, "rb") as handle:
                    pods.append(self._pod(parse_manifest(handle.read()), path))
            except (OSError, ManifestError) as exc:
                log.warning("static pod manifest %s skipped: %s", path, exc)
        return pods


class URLSource(_PollingSource):
    """A Pod or a PodList served at `url`."""

    kind = "http"

    def read(self) -> list[dict[str, Any]] | None:
        try:
            response = requests.get(self.source, timeout=HTTP_TIMEOUT)
            if response.status_code != 200:
                raise ManifestError(f"{response.status_code} {response.reason}")
            if not response.content.strip():
                return []
            document = parse_manifest(response.content)
            if isinstance(document, Mapping) and document.get("kind") == "PodList":
                items = document.get("items") or []
                return [self._pod({"apiVersion": "v1", "kind": "Pod", **item}, self.source) for item in items]
            return [self._pod(document, self.source)]
        except (requests.RequestException, ManifestError) as exc:
            log.warning("static pod URL %s: %s; keeping the last good list", self.source, exc)
            return None
