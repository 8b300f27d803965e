"""Materialise a pod's volumes on the node, and remove them: the part of upstream's volume manager
(pkg/kubelet/volumemanager, pkg/volume/{emptydir,hostpath,configmap,secret,downwardapi,projected}) a
single-node kubelet without attach/detach needs.

Where things live, as upstream (kubelet_getters.go getPodVolumeDir):

    <pods_dir>/<pod uid>/volumes/<plugin>/<volume name>

with plugin `kubernetes.io~empty-dir`, `kubernetes.io~configmap`, `kubernetes.io~secret`,
`kubernetes.io~downward-api`, `kubernetes.io~projected`. hostPath volumes are not copied: the host path
itself is bind-mounted after upstream's `type` check (host_path.go checkTypeInternal, same messages);
`DirectoryOrCreate` makes a 0755 directory, `FileOrCreate` an empty 0644 file. A `persistentVolumeClaim`
volume is the path of the claim's bound PersistentVolume (hostPath or local; other sources are refused),
bind-mounted the same way, read-only when the volume says `readOnly`; an unbound claim fails the setup.

Departures from upstream, on purpose:

* An emptyDir with `medium: Memory` gets no directory: each container that mounts it gets a Docker tmpfs
  (`size=` from `sizeLimit`). Upstream mounts one tmpfs on the host dir, shared by the pod's containers;
  here two containers mounting the same Memory emptyDir do NOT see each other's files.
* Secret volumes are written to disk, not to a tmpfs as upstream does (the node's disk holds them until the
  pod's teardown).
* fsGroup ownership management of volumes is not done (files stay root-owned; modes as the spec says).
* A projected `serviceAccountToken` source's file is the token the kubelet's token manager (tokens.py) has
  for the pod (a TokenRequest bound to it); without a token manager such a volume fails to mount.

`setup` is idempotent: re-running it rewrites configMap/secret/downwardAPI contents through the atomic
writer (containers see updates, except through subPath mounts, as upstream), leaves emptyDir contents alone.
`teardown` removes the pod's directory without following symlinks (shutil.rmtree never descends through
a link), so hostPath contents and anything a container linked to are never touched.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from control.api.typed.core import PersistentVolume, PersistentVolumeClaim, Pod
from control.api.volumes import volume_path
from control.apimachinery.quantity import QuantityError, to_bytes
from control.client.errors import NotFound
from nodeagent.runtime.downward import UNKNOWN_NODE, NodeFacts
from nodeagent.runtime.env import ObjectGetter
from nodeagent.volumes.atomic_writer import FileProjection, PayloadError, write_atomically
from nodeagent.volumes.payloads import (
    DEFAULT_MODE,
    PayloadSourceError,
    configmap_files,
    downward_payload,
    keyed_payload,
    secret_files,
)


class TokenSource(Protocol):
    """The token for one `serviceAccountToken` projection of a pod (tokens.TokenManager)."""

    def get(self, pod: Mapping[str, Any], source: Mapping[str, Any]) -> str: ...


class VolumeKind(str, Enum):
    EMPTY_DIR = "kubernetes.io~empty-dir"
    EMPTY_DIR_MEMORY = "memory"  # no directory: a Docker tmpfs per container
    HOST_PATH = "kubernetes.io~host-path"  # no directory: the host path itself
    CONFIG_MAP = "kubernetes.io~configmap"
    SECRET = "kubernetes.io~secret"
    DOWNWARD_API = "kubernetes.io~downward-api"
    PROJECTED = "kubernetes.io~projected"


@dataclass(frozen=True)
class VolumeInfo:
    """A set-up volume as container mounts need it: where it is on the host (or the tmpfs options of a
    Memory emptyDir) and whether every mount of it must be read-only (configMap, secret, downwardAPI and
    projected volumes are, as upstream's mounter attributes say)."""

    name: str
    kind: VolumeKind
    host_path: str = ""
    read_only: bool = False
    tmpfs_options: str = ""


class VolumeError(Exception):
    """A volume that cannot be set up; the message is upstream's FailedMount event text."""

    reason = "FailedMount"


_KINDS = {"emptyDir", "hostPath", "configMap", "secret", "downwardAPI", "projected", "persistentVolumeClaim"}


def pod_dir(pods_dir: str | Path, pod_uid: str) -> Path:
    return Path(pods_dir) / pod_uid


def volume_dir(pods_dir: str | Path, pod_uid: str, kind: VolumeKind, name: str) -> Path:
    return pod_dir(pods_dir, pod_uid) / "volumes" / kind.value / name


def check_host_path(path: str, path_type: str) -> None:
    """Upstream hostPath checkTypeInternal; creates what the *OrCreate types ask for. Raises ValueError."""
    exists = os.path.lexists(path)
    if path_type == "DirectoryOrCreate" and not exists:
        os.makedirs(path, mode=0o755, exist_ok=True)
        return
    if path_type == "FileOrCreate" and not exists:
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        with open(path, "a"):
            pass
        os.chmod(path, 0o644)
        return
    checks = {
        "DirectoryOrCreate": (os.path.isdir, "a directory"),
        "Directory": (os.path.isdir, "a directory"),
        "FileOrCreate": (os.path.isfile, "a file"),
        "File": (os.path.isfile, "a file"),
        "Socket": (lambda p: os.path.exists(p) and stat.S_ISSOCK(os.stat(p).st_mode), "a socket file"),
        "CharDevice": (lambda p: os.path.exists(p) and stat.S_ISCHR(os.stat(p).st_mode), "a character device"),
        "BlockDevice": (lambda p: os.path.exists(p) and stat.S_ISBLK(os.stat(p).st_mode), "a block device"),
    }
    if not path_type:
        return
    if path_type not in checks:
        raise ValueError(f"{path_type} is an invalid volume type")
    test, what = checks[path_type]
    if not test(path):
        raise ValueError(f"hostPath type check failed: {path} is not {what}")


def _memory_tmpfs_options(source: Mapping[str, Any]) -> str:
    options = ["mode=1777"]
    if source.get("sizeLimit") is not None:
        try:
            options.append(f"size={to_bytes(str(source['sizeLimit']))}")
        except QuantityError as exc:
            raise ValueError(f"invalid sizeLimit {source['sizeLimit']!r}: {exc}") from exc
    return ",".join(options)


def _get(getter: ObjectGetter, kind: str, namespace: str, name: str, optional: bool) -> dict[str, Any] | None:
    try:
        if kind == "configMap":
            return getter.get_configmap(namespace, name)
        return getter.get_secret(namespace, name)
    except NotFound as exc:
        if optional:
            return None
        raise ValueError(exc.message or f'{kind.lower()} "{name}" not found') from exc


def _keyed(getter: ObjectGetter, kind: str, namespace: str, source: Mapping[str, Any],
           default_mode: int | None) -> dict[str, FileProjection]:
    optional = bool(source.get("optional"))
    name = source.get("name", "") if kind == "configMap" else source.get("secretName", source.get("name", ""))
    obj = _get(getter, kind, namespace, name, optional)
    if obj is None:
        return {}
    files = configmap_files(obj) if kind == "configMap" else secret_files(obj)
    missing = "configmap references non-existent config key" if kind == "configMap" \
        else "references non-existent secret key"
    return keyed_payload(files, source.get("items"), default_mode=default_mode, optional=optional, missing=missing)


def _token(tokens: TokenSource | None, pod: Mapping[str, Any], source: Mapping[str, Any],
           default_mode: int | None) -> dict[str, FileProjection]:
    if tokens is None:
        raise ValueError("serviceAccountToken projections need the kubelet's token manager")
    try:
        token = tokens.get(pod, source)
    except Exception as exc:  # whatever the TokenRequest raised is the mount's failure
        raise ValueError(f"failed to fetch token: {exc}") from exc
    mode = DEFAULT_MODE if default_mode is None else int(default_mode)
    return {source.get("path", ""): FileProjection(token.encode(), mode)}


def _projected(getter: ObjectGetter, pod: Mapping[str, Any], namespace: str, source: Mapping[str, Any],
               pod_ips: Sequence[str], node: NodeFacts, tokens: TokenSource | None) -> dict[str, FileProjection]:
    payload: dict[str, FileProjection] = {}
    default_mode = source.get("defaultMode")
    for projection in source.get("sources") or []:
        if projection.get("serviceAccountToken"):
            payload.update(_token(tokens, pod, projection["serviceAccountToken"], default_mode))
        elif projection.get("configMap"):
            payload.update(_keyed(getter, "configMap", namespace, projection["configMap"], default_mode))
        elif projection.get("secret"):
            payload.update(_keyed(getter, "secret", namespace, projection["secret"], default_mode))
        elif projection.get("downwardAPI"):
            items = projection["downwardAPI"].get("items") or []
            payload.update(downward_payload(items, pod, default_mode=default_mode, pod_ips=pod_ips, node=node))
    return payload


def _claim_volume(name: str, namespace: str, source: Mapping[str, Any], getter: ObjectGetter) -> VolumeInfo:
    """A `persistentVolumeClaim` volume: the bound volume's hostPath or local path, bind-mounted (read-only
    when the pod's volume says so). A claim not bound yet fails the setup, so the pod waits with a
    FailedMount event and is synced again shortly (upstream's desired-state populator refuses it the same
    way: "PVC ... has non-bound phase")."""
    claim_name = source.get("claimName", "")
    try:
        claim = getter.get_persistent_volume_claim(namespace, claim_name)
    except NotFound as exc:
        raise ValueError(f'persistentvolumeclaim "{claim_name}" not found') from exc
    phase = PersistentVolumeClaim(claim).status.phase
    bound_to = PersistentVolumeClaim(claim).spec.volume_name
    if phase != "Bound" or not bound_to:
        raise ValueError(f'PVC {namespace}/{claim_name} has non-bound phase ("{phase}") or empty '
                         f'pvc.Spec.VolumeName ("{bound_to}")')
    try:
        volume = getter.get_persistent_volume(bound_to)
    except NotFound as exc:
        raise ValueError(f'persistentvolume "{bound_to}" not found') from exc
    pv = PersistentVolume(volume)
    ref = pv.spec.claim_ref
    if ref is None or ref.uid != PersistentVolumeClaim(claim).metadata.uid:
        raise ValueError(f"volume {bound_to} is not bound to claim {namespace}/{claim_name}")
    path = volume_path(volume)
    if not path:
        raise ValueError(f"the volume source of PersistentVolume {bound_to} is not supported by this kubelet")
    host_path = pv.spec.host_path or {}
    check_host_path(path, (host_path.get("type") or "") if host_path else "Directory")  # a local path must exist
    return VolumeInfo(name, VolumeKind.HOST_PATH, host_path=path, read_only=bool(source.get("readOnly")))


def _setup_one(volume: Mapping[str, Any], pod: Mapping[str, Any], getter: ObjectGetter, pods_dir: str | Path,
               pod_ips: Sequence[str], node: NodeFacts, tokens: TokenSource | None) -> VolumeInfo:
    name = volume.get("name", "")
    meta = pod.get("metadata") or {}
    uid, namespace = meta.get("uid", ""), meta.get("namespace") or "default"
    kind = next((k for k in volume if k in _KINDS), None)
    if kind is None:
        others = sorted(k for k in volume if k != "name")
        raise ValueError(f"volume type {others[0] if others else '<none>'} is not supported by this kubelet")
    source = volume[kind] or {}
    if kind == "persistentVolumeClaim":
        return _claim_volume(name, namespace, source, getter)
    if kind == "hostPath":
        path = source.get("path", "")
        check_host_path(path, source.get("type") or "")
        return VolumeInfo(name, VolumeKind.HOST_PATH, host_path=path)
    if kind == "emptyDir":
        if source.get("medium") == "Memory":
            return VolumeInfo(name, VolumeKind.EMPTY_DIR_MEMORY, tmpfs_options=_memory_tmpfs_options(source))
        directory = volume_dir(pods_dir, uid, VolumeKind.EMPTY_DIR, name)
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            directory.chmod(0o777)  # upstream emptyDir: world-writable so any runAsUser can use it
        return VolumeInfo(name, VolumeKind.EMPTY_DIR, host_path=str(directory))
    default_mode = source.get("defaultMode")
    if kind == "configMap":
        vkind, payload = VolumeKind.CONFIG_MAP, _keyed(getter, "configMap", namespace, source, default_mode)
    elif kind == "secret":
        vkind, payload = VolumeKind.SECRET, _keyed(getter, "secret", namespace, source, default_mode)
    elif kind == "downwardAPI":
        vkind = VolumeKind.DOWNWARD_API
        payload = downward_payload(source.get("items") or [], pod, default_mode=default_mode, pod_ips=pod_ips,
                                   node=node)
    else:
        vkind, payload = VolumeKind.PROJECTED, _projected(getter, pod, namespace, source, pod_ips, node, tokens)
    directory = volume_dir(pods_dir, uid, vkind, name)
    write_atomically(directory, payload)
    return VolumeInfo(name, vkind, host_path=str(directory), read_only=True)


def setup(pod: Mapping[str, Any], getter: ObjectGetter, *, pods_dir: str | Path, pod_ips: Sequence[str] = (),
          node: NodeFacts = UNKNOWN_NODE, tokens: TokenSource | None = None) -> dict[str, VolumeInfo]:
    """Set up every volume of `pod` (idempotent; see the module notes). Raises VolumeError with upstream's
    `MountVolume.SetUp failed for volume "x" : ...` text for the first volume that fails."""
    infos: dict[str, VolumeInfo] = {}
    for volume in Pod(pod).spec.volumes:
        try:
            info = _setup_one(volume.raw, pod, getter, pods_dir, pod_ips, node, tokens)
        except (ValueError, OSError, PayloadError, PayloadSourceError) as exc:
            raise VolumeError(f'MountVolume.SetUp failed for volume "{volume.name}" : {exc}') from exc
        infos[info.name] = info
    return infos


def teardown(pods_dir: str | Path, pod_uid: str) -> None:
    """Remove the pod's directory (volumes, etc-hosts, termination logs); symlinks are removed, never
    followed. A no-op when it is already gone."""
    if not pod_uid or "/" in pod_uid or pod_uid in (".", ".."):
        raise ValueError(f"refusing to tear down pod uid {pod_uid!r}")
    directory = pod_dir(pods_dir, pod_uid)
    if directory.is_symlink():
        directory.unlink()
    elif directory.exists():
        shutil.rmtree(directory)
