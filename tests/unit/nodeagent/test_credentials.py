"""The pull-secret keyring (upstream pkg/credentialprovider keyring_test.go cases, cut down): key
normalisation, glob and path-prefix matching, most specific key first, Docker Hub's default, and the two
secret types."""

from __future__ import annotations

import base64
import json

import pytest

from nodeagent.credentials import (
    Credential,
    CredentialError,
    Keyring,
    decode_auth,
    is_default_registry_match,
    keyring_from_secrets,
    keyring_key,
    repository_name,
    urls_match,
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("location, key", [
    pytest.param("127.0.0.1:5000", "127.0.0.1:5000", id="host-port"),
    pytest.param("https://index.docker.io/v1/", "index.docker.io", id="hub-v1"),
    pytest.param("http://quay.io/v2/coreos", "quay.io/coreos", id="v2-dropped"),
    pytest.param("registry.example.com/team/", "registry.example.com/team/", id="path-kept"),
    pytest.param("https://registry.example.com/", "registry.example.com", id="root-path"),
])
def test_keyring_key(location, key):
    assert keyring_key(location) == key


@pytest.mark.parametrize("image, repository", [
    pytest.param("busybox", "docker.io/library/busybox", id="hub-official"),
    pytest.param("busybox:1", "docker.io/library/busybox", id="hub-tag"),
    pytest.param("team/app:v2", "docker.io/team/app", id="hub-user"),
    pytest.param("127.0.0.1:5000/sktest/busybox:abc", "127.0.0.1:5000/sktest/busybox", id="port-and-tag"),
    pytest.param("localhost/app", "localhost/app", id="localhost"),
    pytest.param("quay.io/coreos/etcd@sha256:0123", "quay.io/coreos/etcd", id="digest"),
])
def test_repository_name(image, repository):
    assert repository_name(image) == repository


@pytest.mark.parametrize("glob, target, matches", [
    pytest.param("127.0.0.1:5000", "127.0.0.1:5000/sktest/busybox", True, id="host-port"),
    pytest.param("127.0.0.1:5000", "127.0.0.1:5001/sktest/busybox", False, id="other-port"),
    pytest.param("127.0.0.1", "127.0.0.1:5000/x", False, id="port-missing-in-key"),
    pytest.param("*.example.com", "registry.example.com/app", True, id="glob-label"),
    pytest.param("*.example.com", "example.com/app", False, id="label-count"),
    pytest.param("*.example.com", "a.b.example.com/app", False, id="glob-one-label-only"),
    pytest.param("quay.io/coreos", "quay.io/coreos/etcd", True, id="path-prefix"),
    pytest.param("quay.io/coreos", "quay.io/other/etcd", False, id="path-other"),
    pytest.param("quay.io/coreos", "quay.io/coreosx/etcd", True, id="plain-string-prefix-as-upstream"),
])
def test_urls_match(glob, target, matches):
    assert urls_match(glob, target) is matches


@pytest.mark.parametrize("repository, hub", [
    ("docker.io/library/busybox", True), ("index.docker.io/team/app", True), ("team/app", True),
    ("busybox", True), ("localhost/app", False), ("127.0.0.1:5000/app", False), ("quay.io/app", False),
])
def test_is_default_registry_match(repository, hub):
    assert is_default_registry_match(repository) is hub


def test_auth_field_overrides_username_and_password():
    keyring = Keyring([{"reg.example.com": {"username": "ignored", "password": "x", "auth": b64("alice:s3cret\0")}}])
    assert keyring.lookup("reg.example.com/app:1") == [Credential("alice", "s3cret", "", "reg.example.com")]


@pytest.mark.parametrize("field", [b64("no-colon"), "!!!not base64"])
def test_bad_auth_field(field):
    with pytest.raises(CredentialError):
        decode_auth(field)


def test_lookup_orders_most_specific_key_first_and_keeps_every_match():
    keyring = Keyring([
        {"quay.io": {"username": "host"}},
        {"quay.io/coreos": {"username": "team"}, "gcr.io": {"username": "gcr"}},
        {"quay.io": {"username": "host2"}},
    ])
    assert [c.username for c in keyring.lookup("quay.io/coreos/etcd:3")] == ["team", "host", "host2"]
    assert [c.username for c in keyring.lookup("quay.io/other/app")] == ["host", "host2"]
    assert keyring.lookup("ghcr.io/app") == []


def test_docker_hub_images_fall_back_to_index_docker_io():
    keyring = Keyring([{"https://index.docker.io/v1/": {"username": "hub", "password": "p"}}])
    assert [c.username for c in keyring.lookup("busybox")] == ["hub"]
    assert [c.username for c in keyring.lookup("team/app:1")] == ["hub"]
    assert keyring.lookup("127.0.0.1:5000/busybox") == []


def secret(kind: str, key: str, payload: object, name: str = "s") -> dict:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return {"metadata": {"name": name}, "type": kind, "data": {key: b64(raw)}}


def test_keyring_from_both_secret_types_in_pod_order_and_others_ignored():
    secrets = [
        secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson",
               {"auths": {"127.0.0.1:5000": {"auth": b64("json:pw")}}}),
        secret("kubernetes.io/dockercfg", ".dockercfg", {"127.0.0.1:5000": {"username": "cfg", "password": "pw"}}),
        secret("Opaque", ".dockerconfigjson", {"auths": {"127.0.0.1:5000": {"username": "opaque"}}}),
        secret("kubernetes.io/dockerconfigjson", ".dockercfg", {"127.0.0.1:5000": {"username": "wrong-key"}}),
    ]
    assert [c.username for c in keyring_from_secrets(secrets).lookup("127.0.0.1:5000/a/b:1")] == ["json", "cfg"]
    assert not keyring_from_secrets([secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", {})])


@pytest.mark.parametrize("bad", [
    pytest.param(secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", "{not json"), id="json"),
    pytest.param(secret("kubernetes.io/dockercfg", ".dockercfg", "[1, 2]"), id="not-a-map"),
    pytest.param({"metadata": {"name": "s"}, "type": "kubernetes.io/dockercfg", "data": {".dockercfg": "%%"}},
                 id="base64"),
])
def test_unreadable_secrets_are_errors(bad):
    with pytest.raises(CredentialError):
        keyring_from_secrets([bad])
