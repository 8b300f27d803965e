"""Encryption at rest: an EncryptionConfiguration read into per-resource transformers (upstream
k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go, the aes, secretbox and identity transformers of
k8s.io/apiserver/pkg/storage/value/encrypt/, and value/transformer.go's prefix transformers).

A configuration (apiserver.config.k8s.io/v1 `EncryptionConfiguration`) lists resource entries, each naming
resources (`secrets`, `deployments.apps`, `widgets.example.com`, `*.apps`, `*.` for the core group, `*.*`)
and an ordered provider list. The first entry naming a resource is its; of its providers the first writes
(with its first key) and every provider and key reads. A stored value starts with
`k8s:enc:<provider>:v1:<key name>:` and then:
- aesgcm: a 12-byte random nonce, then AES-GCM's ciphertext and tag, the storage key as authenticated data;
- aescbc: a 16-byte random IV, then AES-CBC over the PKCS#7-padded value;
- secretbox: a 24-byte random nonce, then NaCl secretbox (XSalsa20-Poly1305: tag, then ciphertext);
- identity: the value as it is (reads anything that carries no `k8s:enc:` prefix).
A value read with anything but the writing provider's first key is stale: the next write of the object (even
one that changes nothing, such as `kubectl replace` of what `kubectl get` returned) rewrites it with the
first key, as upstream's storage does.

Departure: the kms provider is refused (no KMS plugin API here).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1")
_ENCRYPTED = b"k8s:enc:"
_AES_SIZES = (16, 24, 32)


class ConfigError(ValueError):
    """A configuration the server refuses to start with."""


class TransformError(Exception):
    """A stored value no configured provider can read (the key is gone, or the value was tampered with)."""


class Sealer(Protocol):
    def seal(self, plaintext: bytes, key: bytes) -> bytes: ...

    def open(self, data: bytes, key: bytes) -> bytes: ...


class _AESGCM:
    def __init__(self, secret: bytes) -> None:
        self._aead = AESGCM(secret)

    def seal(self, plaintext: bytes, key: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, plaintext, key)

    def open(self, data: bytes, key: bytes) -> bytes:
        return self._aead.decrypt(data[:12], data[12:], key)


class _AESCBC:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def seal(self, plaintext: bytes, key: bytes) -> bytes:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        padded = padder.update(plaintext) + padder.finalize()
        encryptor = Cipher(algorithms.AES(self._secret), modes.CBC(iv)).encryptor()
        return iv + encryptor.update(padded) + encryptor.finalize()

    def open(self, data: bytes, key: bytes) -> bytes:
        if len(data) < 32 or len(data) % 16:
            raise ValueError("the data is not a whole number of AES blocks")
        decryptor = Cipher(algorithms.AES(self._secret), modes.CBC(data[:16])).decryptor()
        padded = decryptor.update(data[16:]) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(padded) + unpadder.finalize()


class _SecretBox:
    def __init__(self, secret: bytes) -> None:
        self._box = SecretBox(secret)

    def seal(self, plaintext: bytes, key: bytes) -> bytes:
        return bytes(self._box.encrypt(plaintext))  # nonce (24) + tag + ciphertext, as Go's secretbox.Seal

    def open(self, data: bytes, key: bytes) -> bytes:
        return bytes(self._box.decrypt(data))


_CIPHERS: Mapping[str, tuple[Callable[[bytes], Sealer], tuple[int, ...]]] = {
    "aesgcm": (_AESGCM, _AES_SIZES), "aescbc": (_AESCBC, _AES_SIZES), "secretbox": (_SecretBox, (32,)),
}


@dataclass(frozen=True, slots=True)
class _Key:
    prefix: bytes  # k8s:enc:<provider>:v1:<name>:
    cipher: Sealer


@dataclass(frozen=True, slots=True)
class Transformer:
    """One resource entry's providers: `keys` in configuration order (None stands for identity)."""

    keys: tuple[_Key | None, ...]

    def to_storage(self, value: bytes, key: str) -> bytes:
        writer = self.keys[0]
        return value if writer is None else writer.prefix + writer.cipher.seal(value, key.encode())

    def from_storage(self, data: bytes, key: str) -> tuple[bytes, bool]:
        """The plaintext and whether it is stale (not in the writing provider's first key)."""
        identity = False
        for index, candidate in enumerate(self.keys):
            if candidate is None:
                identity = True
                continue
            if data.startswith(candidate.prefix):
                try:
                    plain = candidate.cipher.open(data[len(candidate.prefix):], key.encode())
                except (InvalidTag, ValueError, CryptoError) as exc:
                    raise TransformError(f"{key}: cannot decrypt with key {candidate.prefix.decode()!r}: "
                                         f"{type(exc).__name__}") from None
                return plain, index != 0
        if identity and not data.startswith(_ENCRYPTED):
            return data, self.keys[0] is not None
        raise TransformError(f"{key}: no matching prefix found")


@dataclass(frozen=True, slots=True)
class _Entry:
    names: tuple[str, ...]
    transformer: Transformer


class EncryptionConfig:
    """Which transformer a storage key's resource has (None: stored as it is)."""

    def __init__(self, entries: Sequence[_Entry], builtin_groups: Mapping[str, str]) -> None:
        self._entries = tuple(entries)
        self._builtin_groups = builtin_groups  # plural -> group of every built-in resource
        self._by_prefix: dict[str, Transformer | None] = {}

    def for_key(self, key: str) -> Transformer | None:
        parts = key.split("/", 4)  # "", "registry", plural-or-group, rest...
        if len(parts) < 4 or parts[1] != "registry":
            return None
        if parts[2] in self._builtin_groups:
            prefix, group, plural = parts[2], self._builtin_groups[parts[2]], parts[2]
        else:  # a custom resource: /registry/{group}/{plural}/...
            prefix, group, plural = f"{parts[2]}/{parts[3]}", parts[2], parts[3]
        try:
            return self._by_prefix[prefix]
        except KeyError:
            found = self._lookup(group, plural)
            self._by_prefix[prefix] = found
            return found

    def _lookup(self, group: str, plural: str) -> Transformer | None:
        for entry in self._entries:
            for name in entry.names:
                wanted_plural, _, wanted_group = name.partition(".")
                if (wanted_plural in ("*", plural)) and (wanted_group == "*" or wanted_group == group):
                    return entry.transformer
        return None


def load(path: str, builtin_groups: Mapping[str, str]) -> EncryptionConfig:
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"error while parsing file {path}: {exc}") from None
    return parse(document, builtin_groups, source=path)


def parse(document: Any, builtin_groups: Mapping[str, str], *, source: str = "config") -> EncryptionConfig:
    if not isinstance(document, Mapping) or document.get("kind") != "EncryptionConfiguration" \
            or document.get("apiVersion") not in API_VERSIONS:
        raise ConfigError(f"{source}: expected kind EncryptionConfiguration of apiVersion {API_VERSIONS[0]}")
    resources = document.get("resources")
    if not isinstance(resources, list) or not resources:
        raise ConfigError(f"{source}: resources: Required value: at least one resource entry")
    entries = []
    for index, entry in enumerate(resources):
        where = f"{source}: resources[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: must be a mapping")
        names = entry.get("resources")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ConfigError(f"{where}.resources: Required value: a list of resource names")
        providers = entry.get("providers")
        if not isinstance(providers, list) or not providers:
            raise ConfigError(f"{where}.providers: Required value: at least one provider")
        keys: list[_Key | None] = []
        for number, provider in enumerate(providers):
            keys.extend(_provider(provider, f"{where}.providers[{number}]"))
        entries.append(_Entry(tuple(_normalised(n) for n in names), Transformer(tuple(keys))))
    return EncryptionConfig(entries, builtin_groups)


def _normalised(name: str) -> str:
    """`secrets` is `secrets.` (the core group); `*.` stays the core group's wildcard."""
    return name if "." in name else f"{name}."


def _provider(provider: Any, where: str) -> list[_Key | None]:
    if not isinstance(provider, Mapping) or len(provider) != 1:
        raise ConfigError(f"{where}: exactly one provider must be set")
    [(kind, settings)] = provider.items()
    if kind == "identity":
        return [None]
    if kind == "kms":
        raise ConfigError(f"{where}.kms: the kms provider is not supported")
    if kind not in _CIPHERS:
        raise ConfigError(f"{where}: unknown provider {kind!r} (aesgcm, aescbc, secretbox, identity)")
    make, sizes = _CIPHERS[kind]
    keys = (settings or {}).get("keys") if isinstance(settings, Mapping) else None
    if not isinstance(keys, list) or not keys:
        raise ConfigError(f"{where}.{kind}.keys: Required value: at least one key")
    made: list[_Key | None] = []
    seen: set[str] = set()
    for number, key in enumerate(keys):
        at = f"{where}.{kind}.keys[{number}]"
        name, secret = (key.get("name"), key.get("secret")) if isinstance(key, Mapping) else (None, None)
        if not isinstance(name, str) or not name or ":" in name:
            raise ConfigError(f"{at}.name: Invalid value: a key needs a name without ':'")
        if name in seen:
            raise ConfigError(f'{at}.name: Duplicate value: "{name}"')
        seen.add(name)
        try:
            raw = base64.b64decode(str(secret), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"{at}.secret: Invalid value: secrets must be base64 encoded") from None
        if len(raw) not in sizes:
            raise ConfigError(f"{at}.secret: Invalid value: secret is not of the expected length, got "
                              f"{len(raw)}, expected one of {list(sizes)}")
        made.append(_Key(f"k8s:enc:{kind}:v1:{name}:".encode(), make(raw)))
    return made
