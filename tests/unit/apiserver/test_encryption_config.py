"""Encryption at rest, below the API server: the providers' stored format (as upstream's transformers write
it), key rotation and staleness, which resources a configuration covers, its validation, and the encrypting
`Storage` over a real SQLite store (values, history and watch events)."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.secret import SecretBox

from control.apiserver.storage import encryption
from control.apiserver.storage.encrypted import DecryptionError, EncryptedStorage
from control.storage.interface import EventType
from control.storage.sqlite import SQLiteStorage

RAW1, RAW2 = b"1" * 32, b"2" * 32
KEY1, KEY2 = base64.b64encode(RAW1).decode(), base64.b64encode(RAW2).decode()
GROUPS = {"secrets": "", "configmaps": "", "deployments": "apps", "leases": "coordination.k8s.io"}
SECRET = "/registry/secrets/default/s1"


def config(*entries: tuple[list[str], list[dict]]) -> encryption.EncryptionConfig:
    return encryption.parse({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
                             "resources": [{"resources": names, "providers": providers}
                                           for names, providers in entries]}, GROUPS)


def provider(kind: str, *keys: tuple[str, str]) -> dict:
    return {kind: {"keys": [{"name": name, "secret": secret} for name, secret in keys]}}


def test_aesgcm_writes_upstreams_format_with_the_key_as_authenticated_data() -> None:
    transformer = config((["secrets"], [provider("aesgcm", ("k1", KEY1))])).for_key(SECRET)
    assert transformer is not None
    stored = transformer.to_storage(b'{"data":1}', SECRET)
    prefix = b"k8s:enc:aesgcm:v1:k1:"
    assert stored.startswith(prefix)
    body = stored[len(prefix):]
    assert AESGCM(RAW1).decrypt(body[:12], body[12:], SECRET.encode()) == b'{"data":1}'
    assert transformer.from_storage(stored, SECRET) == (b'{"data":1}', False)
    with pytest.raises(encryption.TransformError):  # moved under another key: refused
        transformer.from_storage(stored, "/registry/secrets/default/other")


def test_aescbc_and_secretbox_formats() -> None:
    cbc = config((["secrets"], [provider("aescbc", ("c1", KEY1))])).for_key(SECRET)
    assert cbc is not None
    stored = cbc.to_storage(b"plain", SECRET)
    body = stored[len(b"k8s:enc:aescbc:v1:c1:"):]
    decryptor = Cipher(algorithms.AES(RAW1), modes.CBC(body[:16])).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    assert unpadder.update(decryptor.update(body[16:]) + decryptor.finalize()) + unpadder.finalize() == b"plain"
    box = config((["secrets"], [provider("secretbox", ("b1", KEY1))])).for_key(SECRET)
    assert box is not None
    stored = box.to_storage(b"plain", SECRET)
    body = stored[len(b"k8s:enc:secretbox:v1:b1:"):]
    assert SecretBox(RAW1).decrypt(body[24:], body[:24]) == b"plain"
    assert box.from_storage(stored, SECRET) == (b"plain", False)


def test_rotation_reads_every_key_and_marks_old_ones_stale() -> None:
    old = config((["secrets"], [provider("aesgcm", ("k1", KEY1))])).for_key(SECRET)
    rotated = config((["secrets"], [provider("aesgcm", ("k2", KEY2), ("k1", KEY1)), {"identity": {}}])).for_key(SECRET)
    assert old is not None and rotated is not None
    assert rotated.from_storage(old.to_storage(b"v", SECRET), SECRET) == (b"v", True)
    assert rotated.from_storage(rotated.to_storage(b"v", SECRET), SECRET) == (b"v", False)
    assert rotated.from_storage(b"{plain}", SECRET) == (b"{plain}", True)  # written before encryption was on
    with pytest.raises(encryption.TransformError, match="no matching prefix"):
        old.from_storage(b"{plain}", SECRET)  # no identity provider: plaintext is refused
    identity_first = config((["secrets"], [{"identity": {}}, provider("aesgcm", ("k1", KEY1))])).for_key(SECRET)
    assert identity_first is not None
    assert identity_first.to_storage(b"v", SECRET) == b"v"  # decrypting away from encryption
    assert identity_first.from_storage(old.to_storage(b"v", SECRET), SECRET) == (b"v", True)
    unknown = config((["secrets"], [provider("aesgcm", ("k9", KEY2)), {"identity": {}}])).for_key(SECRET)
    assert unknown is not None
    with pytest.raises(encryption.TransformError):  # encrypted with a key no longer listed
        unknown.from_storage(old.to_storage(b"v", SECRET), SECRET)


@pytest.mark.parametrize(("names", "key", "covered"), [
    (["secrets"], "/registry/secrets/ns/a", True),
    (["secrets"], "/registry/configmaps/ns/a", False),
    (["deployments.apps"], "/registry/deployments/ns/a", True),
    (["*.apps"], "/registry/deployments/ns/a", True),
    (["*.apps"], "/registry/secrets/ns/a", False),
    (["*."], "/registry/configmaps/ns/a", True),
    (["*."], "/registry/leases/ns/a", False),
    (["*.*"], "/registry/leases/ns/a", True),
    (["widgets.example.com"], "/registry/example.com/widgets/ns/a", True),
    (["*.example.com"], "/registry/example.com/widgets/a", True),
    (["widgets.example.com"], "/registry/example.com/gadgets/ns/a", False),
])
def test_which_resources_a_configuration_covers(names: list[str], key: str, covered: bool) -> None:
    assert (config((names, [provider("aesgcm", ("k1", KEY1))])).for_key(key) is not None) is covered


def test_the_first_entry_naming_a_resource_is_its() -> None:
    parsed = config((["secrets"], [{"identity": {}}]), (["*.*"], [provider("aesgcm", ("k1", KEY1))]))
    secrets, other = parsed.for_key(SECRET), parsed.for_key("/registry/configmaps/ns/a")
    assert secrets is not None and secrets.to_storage(b"v", SECRET) == b"v"
    assert other is not None and other.to_storage(b"v", "/registry/configmaps/ns/a").startswith(b"k8s:enc:aesgcm:")


@pytest.mark.parametrize(("providers", "message"), [
    ([provider("aesgcm", ("k1", base64.b64encode(b"short").decode()))], "expected length"),
    ([provider("secretbox", ("k1", base64.b64encode(b"1" * 16).decode()))], "expected length"),
    ([provider("aesgcm", ("k1", "not base64!"))], "base64"),
    ([provider("aesgcm", ("k1", KEY1), ("k1", KEY2))], "Duplicate"),
    ([provider("aesgcm")], "at least one key"),
    ([{"kms": {"name": "x"}}], "kms provider is not supported"),
    ([{"aesgcm": {"keys": [{"name": "k1", "secret": KEY1}]}, "identity": {}}], "exactly one provider"),
    ([], "at least one provider"),
])
def test_bad_configurations_are_refused(providers: list[dict], message: str) -> None:
    with pytest.raises(encryption.ConfigError, match=message):
        config((["secrets"], providers))


def test_the_storage_wrapper_encrypts_values_history_and_events(tmp_path) -> None:
    inner = SQLiteStorage(str(tmp_path / "state.db"))
    store = EncryptedStorage(inner, config((["secrets"], [provider("aesgcm", ("k1", KEY1))])))
    try:
        created = store.create(SECRET, b"one")
        assert created.value == b"one"
        assert inner.get(SECRET).value.startswith(b"k8s:enc:aesgcm:v1:k1:")  # type: ignore[union-attr]
        store.update(SECRET, b"two", expected_revision=created.mod_revision)
        store.create("/registry/configmaps/default/c", b"plain")
        assert inner.get("/registry/configmaps/default/c").value == b"plain"  # type: ignore[union-attr]
        assert store.get(SECRET).value == b"two"  # type: ignore[union-attr]
        assert [r.value for r in store.list("/registry/secrets/").records] == [b"two"]
        watch = store.watch("/registry/secrets/", after=0)
        events = watch.next(timeout=2)
        watch.close()
        assert [(e.type, e.value, e.prev_value) for e in events] == [(EventType.ADDED, b"one", None),
                                                                     (EventType.MODIFIED, b"two", b"one")]
        inner_events = inner.watch("/registry/secrets/", after=0)
        raw = inner_events.next(timeout=2)
        inner_events.close()
        assert all(e.value.startswith(b"k8s:enc:") for e in raw) and raw[1].prev_value is not None \
            and raw[1].prev_value.startswith(b"k8s:enc:")
        assert store.delete(SECRET).value == b"two"
        inner.create(SECRET, b"k8s:enc:aesgcm:v1:gone:garbage")
        with pytest.raises(DecryptionError):
            store.get(SECRET)
    finally:
        store.close()
