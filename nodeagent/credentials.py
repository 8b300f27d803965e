"""Registry credentials from a pod's imagePullSecrets: which username/password a pull of an image uses.

Upstream: pkg/credentialprovider/config.go (DockerConfig, DockerConfigJSON, DockerConfigEntry with its
`auth` field), keyring.go (BasicDockerKeyring.Add / Lookup, URLsMatch, isDefaultRegistryMatch) and
secrets/secrets.go (MakeDockerKeyring). The same rules:

- secrets of type `kubernetes.io/dockerconfigjson` (key `.dockerconfigjson`, `{"auths": {...}}`) and the
  legacy `kubernetes.io/dockercfg` (key `.dockercfg`, the `{...}` map itself) feed one keyring, in the
  order the pod lists them; other types and empty keys are ignored; JSON that does not parse is an error
  (upstream fails the pull with it);
- an entry's `auth` (base64 "user:password") overrides its username and password;
- an entry's key may carry a scheme and a path: `https://` is assumed, `/v1/` and `/v2/` are dropped, so
  `https://index.docker.io/v1/` means the host `index.docker.io`; the key is host[:port][/path];
- lookup of an image's repository (`127.0.0.1:5000/team/app`, `docker.io/library/busybox`) tries the keys
  most specific first (the index reverse-sorted): same port, same number of host labels each matching as
  a glob (`*.example.com`), and the key's path a prefix of the repository's path; every matching key's
  credentials are returned, in that order (the puller tries each). Nothing matched and the image is on
  Docker Hub → the credentials stored for `index.docker.io`.

Pure: secrets come in as the API's dicts, credentials go out as frozen records; no I/O. Departures: no
node-level keyring (upstream also reads ~/.docker/config.json and credential-provider plugins; the
kubelet here pulls only with what pods bring); globs use fnmatch, whose `[!x]` stands for Go's `[^x]`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from control.api.typed.core import Secret

SECRET_TYPE_DOCKERCONFIGJSON = "kubernetes.io/dockerconfigjson"
SECRET_TYPE_DOCKERCFG = "kubernetes.io/dockercfg"
DOCKERCONFIGJSON_KEY = ".dockerconfigjson"
DOCKERCFG_KEY = ".dockercfg"
DEFAULT_REGISTRY_HOST = "index.docker.io"


class CredentialError(ValueError):
    """A pull secret's content cannot be read (bad base64 or JSON, an `auth` that is not user:password)."""


@dataclass(frozen=True)
class Credential:
    """One registry login (upstream AuthConfig as the keyring returns it)."""

    username: str
    password: str
    email: str = ""
    server_address: str = ""  # the keyring key it came from, host[:port][/path]


def decode_auth(field: str) -> tuple[str, str]:
    """upstream decodeDockerConfigFieldAuth: base64("user:password"), NULs trimmed from the password."""
    try:
        decoded = base64.b64decode(field, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise CredentialError(f"unable to decode auth field: {exc}") from exc
    user, colon, password = decoded.partition(":")
    if not colon:
        raise CredentialError("unable to parse auth field, must be formatted as base64(username:password)")
    return user, password.strip("\x00")


def _entry(server: str, raw: Any) -> Credential:
    if not isinstance(raw, Mapping):
        raise CredentialError(f"entry {server!r} is not an object")
    username, password = str(raw.get("username") or ""), str(raw.get("password") or "")
    if raw.get("auth"):
        username, password = decode_auth(str(raw["auth"]))
    return Credential(username, password, str(raw.get("email") or ""), server)


def keyring_key(location: str) -> str:
    """A config key as upstream's Add turns it into an index key: scheme assumed https, /v1/ and /v2/
    dropped, host[:port] plus a path other than "/"."""
    value = location if location.startswith(("https://", "http://")) else "https://" + location
    parsed = urlsplit(value)
    path = parsed.path
    if path.startswith(("/v2/", "/v1/")):
        path = path[3:]
    return parsed.netloc + path if path and path != "/" else parsed.netloc


def _split(schemeless: str) -> tuple[list[str], str, str]:
    """(host labels, port, path) of "host[:port][/path]" (upstream ParseSchemelessURL + SplitURL)."""
    parsed = urlsplit("https://" + schemeless)
    host = parsed.hostname or ""
    try:
        port = str(parsed.port) if parsed.port is not None else ""
    except ValueError:
        port = ""
    return host.split("."), port, parsed.path


def urls_match(glob: str, target: str) -> bool:
    """upstream URLsMatchStr: same port, same number of host labels, each label a glob match, and the
    glob's path a (plain string) prefix of the target's."""
    glob_parts, glob_port, glob_path = _split(glob)
    target_parts, target_port, target_path = _split(target)
    if glob_port != target_port or len(glob_parts) != len(target_parts) or not target_path.startswith(glob_path):
        return False
    return all(fnmatchcase(t, g) for g, t in zip(glob_parts, target_parts, strict=True))


def is_default_registry_match(repository: str) -> bool:
    """upstream isDefaultRegistryMatch: Docker Hub when the first component is docker.io, index.docker.io,
    or not a host at all (no dot or colon, not localhost)."""
    first, slash, _ = repository.partition("/")
    if not first:
        return False
    if not slash:
        return True
    if first in ("docker.io", "index.docker.io"):
        return True
    return not any(c in first for c in ".:") and first != "localhost"


def repository_name(image: str) -> str:
    """The normalized repository of an image reference, without tag or digest (what upstream's
    parsers.ParseImageName gives the keyring): `busybox:1` → `docker.io/library/busybox`,
    `127.0.0.1:5000/team/app:v2` → `127.0.0.1:5000/team/app`."""
    name = image.split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name = name[:colon]
    first, slash_found, _ = name.partition("/")
    if not slash_found or (not any(c in first for c in ".:") and first != "localhost"):
        name = "docker.io/" + (name if slash_found else "library/" + name)
    return name


class Keyring:
    """upstream BasicDockerKeyring: index keys → credentials, looked up most specific key first."""

    def __init__(self, configs: Iterable[Mapping[str, Any]] = ()) -> None:
        self._creds: dict[str, list[Credential]] = {}
        for config in configs:
            for location, raw in config.items():
                key = keyring_key(location)
                self._creds.setdefault(key, []).append(_entry(key, raw))
        self._index = sorted(self._creds, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._creds)

    def lookup(self, image: str) -> list[Credential]:
        """Every credential whose key matches the image's repository, most specific key first; none
        matched and the image is on Docker Hub → those for index.docker.io; else []."""
        repository = repository_name(image)
        found = [cred for key in self._index if urls_match(key, repository) for cred in self._creds[key]]
        if not found and is_default_registry_match(repository):
            found = list(self._creds.get(DEFAULT_REGISTRY_HOST, ()))
        return found


def _secret_bytes(secret: Mapping[str, Any], key: str) -> bytes:
    value = Secret(secret).data.get(key) or ""
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise CredentialError(f"secret {secret_name(secret)}: {key} is not base64: {exc}") from exc


def secret_name(secret: Mapping[str, Any]) -> str:
    return Secret(secret).metadata.name


def keyring_from_secrets(secrets: Iterable[Mapping[str, Any]]) -> Keyring:
    """upstream MakeDockerKeyring over the pod's pull secrets (API dicts, `data` base64 as served)."""
    configs: list[Mapping[str, Any]] = []
    for secret in secrets:
        kind = secret.get("type")
        key = {SECRET_TYPE_DOCKERCONFIGJSON: DOCKERCONFIGJSON_KEY, SECRET_TYPE_DOCKERCFG: DOCKERCFG_KEY}.get(kind or "")
        if key is None:
            continue
        raw = _secret_bytes(secret, key)
        if not raw:
            continue
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise CredentialError(f"secret {secret_name(secret)}: {key} is not JSON: {exc}") from exc
        if key == DOCKERCONFIGJSON_KEY and isinstance(document, Mapping):
            document = document.get("auths") or {}
        config = document
        if not isinstance(config, Mapping):
            raise CredentialError(f"secret {secret_name(secret)}: {key} holds no registry map")
        configs.append(config)
    return Keyring(configs)
