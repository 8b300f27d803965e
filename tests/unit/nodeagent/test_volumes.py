"""Pod volumes on disk (nodeagent/volumes/): atomic writer, payloads, setup/teardown, mounts. Temp dirs only."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from nodeagent.runtime.docker import bind_string
from nodeagent.volumes.atomic_writer import FileProjection, PayloadError, write_atomically
from nodeagent.volumes.mounts import bind_mount, container_mounts
from nodeagent.volumes.pod_volumes import (
    VolumeError,
    VolumeInfo,
    VolumeKind,
    check_host_path,
    setup,
    teardown,
    volume_dir,
)
from tests.support.fake_objects import FakeObjects


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def pod_with(*volumes, uid="uid-1"):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": uid, "labels": {"a": "b"}},
            "spec": {"volumes": list(volumes), "containers": [
                {"name": "c", "resources": {"limits": {"memory": "32Mi"}}}]}}


# --- atomic writer ------------------------------------------------------------------------------------------

def test_atomic_writer_layout_and_update(tmp_path):
    target = tmp_path / "vol"
    assert write_atomically(target, {"a": FileProjection(b"1"), "dir/b": FileProjection(b"2", 0o600)})
    first = os.readlink(target / "..data")
    assert first.startswith("..") and (target / first).is_dir() and mode(target / first) == 0o755
    assert os.readlink(target / "a") == "..data/a" and os.readlink(target / "dir") == "..data/dir"
    assert (target / "a").read_bytes() == b"1" and (target / "dir" / "b").read_bytes() == b"2"
    assert mode(target / "dir" / "b") == 0o600 and mode(target / "a") == 0o644

    # the same payload again changes nothing
    assert not write_atomically(target, {"a": FileProjection(b"1"), "dir/b": FileProjection(b"2", 0o600)})
    assert os.readlink(target / "..data") == first

    # an update swaps ..data, drops links to keys that went away and the old payload directory
    assert write_atomically(target, {"a": FileProjection(b"new"), "c": FileProjection(b"3")})
    second = os.readlink(target / "..data")
    assert second != first and not (target / first).exists()
    assert (target / "a").read_bytes() == b"new" and (target / "c").read_bytes() == b"3"
    assert not os.path.lexists(target / "dir")
    assert sorted(p.name for p in target.iterdir()) == sorted(["..data", second, "a", "c"])


def test_atomic_writer_reader_holding_old_link_sees_consistent_old_set(tmp_path):
    target = tmp_path / "vol"
    write_atomically(target, {"a": FileProjection(b"1"), "b": FileProjection(b"1")})
    old_dir = target / os.readlink(target / "..data")
    fd = os.open(old_dir, os.O_RDONLY)  # a reader that resolved ..data before the update
    try:
        write_atomically(target, {"a": FileProjection(b"2"), "b": FileProjection(b"2")})
        assert (target / "a").read_bytes() == (target / "b").read_bytes() == b"2"
    finally:
        os.close(fd)


@pytest.mark.parametrize("bad", ["/abs", "../up", "a/../b", "..hidden", ""])
def test_atomic_writer_refuses_bad_paths(tmp_path, bad):
    with pytest.raises(PayloadError):
        write_atomically(tmp_path / "vol", {bad: FileProjection(b"x")})


# --- setup ---------------------------------------------------------------------------------------------------

def test_configmap_all_keys_items_and_modes(tmp_path):
    getter = FakeObjects(configmaps={"cfg": {"one": "1", "two": "2"}})
    pod = pod_with(
        {"name": "all", "configMap": {"name": "cfg"}},
        {"name": "some", "configMap": {"name": "cfg", "defaultMode": 0o600,
                                       "items": [{"key": "two", "path": "sub/2.txt"},
                                                 {"key": "one", "path": "one", "mode": 0o400}]}},
    )
    infos = setup(pod, getter, pods_dir=tmp_path)
    all_dir = tmp_path / "uid-1" / "volumes" / "kubernetes.io~configmap" / "all"
    assert infos["all"] == VolumeInfo("all", VolumeKind.CONFIG_MAP, str(all_dir), read_only=True)
    assert (all_dir / "one").read_text() == "1" and mode(all_dir / "two") == 0o644
    some = Path(infos["some"].host_path)
    assert (some / "sub" / "2.txt").read_text() == "2" and mode(some / "sub" / "2.txt") == 0o600
    assert mode(some / "one") == 0o400
    assert sorted(p.name for p in some.iterdir() if not p.name.startswith("..")) == ["one", "sub"]


def test_configmap_update_is_seen_on_rerun(tmp_path):
    getter = FakeObjects(configmaps={"cfg": {"k": "old"}})
    pod = pod_with({"name": "v", "configMap": {"name": "cfg"}}, {"name": "scratch", "emptyDir": {}})
    infos = setup(pod, getter, pods_dir=tmp_path)
    (Path(infos["scratch"].host_path) / "keep").write_text("data")
    getter.configmaps["cfg"] = {"k": "new", "k2": "added"}
    infos = setup(pod, getter, pods_dir=tmp_path)
    assert (Path(infos["v"].host_path) / "k").read_text() == "new"
    assert (Path(infos["v"].host_path) / "k2").read_text() == "added"
    assert (Path(infos["scratch"].host_path) / "keep").read_text() == "data"  # emptyDir left alone


def test_secret_is_decoded_0644_by_default(tmp_path):
    getter = FakeObjects(secrets={"s": {"pw": b"\x00binary\xff"}})
    infos = setup(pod_with({"name": "sec", "secret": {"secretName": "s"}}), getter, pods_dir=tmp_path)
    path = Path(infos["sec"].host_path)
    assert path == volume_dir(tmp_path, "uid-1", VolumeKind.SECRET, "sec")
    assert (path / "pw").read_bytes() == b"\x00binary\xff" and mode(path / "pw") == 0o644


@pytest.mark.parametrize(("volume", "message"), [
    pytest.param({"name": "v", "configMap": {"name": "nope"}}, 'configmaps "nope" not found', id="cm-missing"),
    pytest.param({"name": "v", "secret": {"secretName": "nope"}}, 'secrets "nope" not found', id="secret-missing"),
    pytest.param({"name": "v", "configMap": {"name": "cfg", "items": [{"key": "zz", "path": "z"}]}},
                 "configmap references non-existent config key: zz", id="cm-key"),
    pytest.param({"name": "v", "secret": {"secretName": "s", "items": [{"key": "zz", "path": "z"}]}},
                 "references non-existent secret key: zz", id="secret-key"),
    pytest.param({"name": "v", "configMap": {"name": "cfg", "items": [{"key": "k", "path": "../x"}]}},
                 "must not contain '..'", id="item-path-escape"),
    pytest.param({"name": "v", "nfs": {"server": "s", "path": "/"}}, "not supported", id="unsupported"),
    pytest.param({"name": "v", "persistentVolumeClaim": {"claimName": "c"}}, 'persistentvolumeclaim "c" not found',
                 id="claim-missing"),
])
def test_setup_failures_carry_upstream_messages(tmp_path, volume, message):
    getter = FakeObjects(configmaps={"cfg": {"k": "v"}}, secrets={"s": {"k": b"v"}})
    with pytest.raises(VolumeError, match='MountVolume.SetUp failed for volume "v" : .*' + message):
        setup(pod_with(volume), getter, pods_dir=tmp_path)


def test_optional_sources_give_what_exists(tmp_path):
    getter = FakeObjects(configmaps={"cfg": {"k": "v"}})
    infos = setup(pod_with(
        {"name": "gone", "configMap": {"name": "nope", "optional": True}},
        {"name": "part", "configMap": {"name": "cfg", "optional": True,
                                       "items": [{"key": "k", "path": "k"}, {"key": "zz", "path": "z"}]}},
    ), getter, pods_dir=tmp_path)
    assert [p.name for p in Path(infos["gone"].host_path).iterdir() if not p.name.startswith("..")] == []
    assert sorted(p.name for p in Path(infos["part"].host_path).iterdir() if not p.name.startswith("..")) == ["k"]


def test_downward_api_and_projected(tmp_path):
    getter = FakeObjects(configmaps={"cfg": {"k": "v"}}, secrets={"s": {"pw": b"x"}})
    pod = pod_with(
        {"name": "dw", "downwardAPI": {"items": [
            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}, "mode": 0o600},
            {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory",
                                                 "divisor": "1Mi"}},
        ]}},
        {"name": "proj", "projected": {"defaultMode": 0o640, "sources": [
            {"configMap": {"name": "cfg"}},
            {"secret": {"name": "s", "items": [{"key": "pw", "path": "secret/pw"}]}},
            {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            {"serviceAccountToken": {"path": "token"}},
        ]}},
    )
    infos = setup(pod, getter, pods_dir=tmp_path, tokens=FakeTokens())
    dw = Path(infos["dw"].host_path)
    assert "kubernetes.io~downward-api" in str(dw)
    assert (dw / "name").read_text() == "p" and (dw / "labels").read_text() == 'a="b"'
    assert (dw / "mem").read_text() == "32" and mode(dw / "labels") == 0o600
    proj = Path(infos["proj"].host_path)
    assert "kubernetes.io~projected" in str(proj)
    assert (proj / "k").read_text() == "v" and (proj / "secret" / "pw").read_text() == "x"
    assert (proj / "ns").read_text() == "ns" and mode(proj / "k") == 0o640
    assert (proj / "token").read_text() == "jwt-of-p-3600" and mode(proj / "token") == 0o640


class FakeTokens:
    """The token manager: a token named after the pod and the life asked for, or a refusal."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def get(self, pod, source):
        if self.error is not None:
            raise self.error
        return f"jwt-of-{pod['metadata']['name']}-{source.get('expirationSeconds', 3600)}"


def test_a_token_projection_without_a_token_fails_the_mount(tmp_path):
    pod = pod_with({"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}})
    with pytest.raises(VolumeError, match="need the kubelet's token manager"):
        setup(pod, FakeObjects(), pods_dir=tmp_path)
    with pytest.raises(VolumeError, match='MountVolume.SetUp failed for volume "proj" : failed to fetch token: '
                                          "forbidden"):
        setup(pod, FakeObjects(), pods_dir=tmp_path, tokens=FakeTokens(RuntimeError("forbidden")))


def test_empty_dir_disk_and_memory(tmp_path):
    infos = setup(pod_with({"name": "d", "emptyDir": {}}, {"name": "m", "emptyDir": {"medium": "Memory",
                                                                                     "sizeLimit": "1Mi"}}),
                  FakeObjects(), pods_dir=tmp_path)
    disk = Path(infos["d"].host_path)
    assert disk == tmp_path / "uid-1" / "volumes" / "kubernetes.io~empty-dir" / "d"
    assert disk.is_dir() and mode(disk) == 0o777 and not infos["d"].read_only
    assert infos["m"].kind is VolumeKind.EMPTY_DIR_MEMORY and infos["m"].host_path == ""
    assert infos["m"].tmpfs_options == "mode=1777,size=1048576"


def test_host_path_types(tmp_path):
    check_host_path(str(tmp_path / "made"), "DirectoryOrCreate")
    assert (tmp_path / "made").is_dir() and mode(tmp_path / "made") == 0o755
    check_host_path(str(tmp_path / "f"), "FileOrCreate")
    assert (tmp_path / "f").is_file() and mode(tmp_path / "f") == 0o644
    check_host_path(str(tmp_path / "made"), "Directory")
    check_host_path(str(tmp_path / "f"), "File")
    check_host_path(str(tmp_path / "whatever"), "")
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        check_host_path(str(sock_path), "Socket")
    failures = [
        ("f", "Directory", "is not a directory"), ("made", "File", "is not a file"),
        ("missing", "Directory", "is not a directory"), ("f", "DirectoryOrCreate", "is not a directory"),
        ("made", "FileOrCreate", "is not a file"), ("f", "Socket", "is not a socket file"),
        ("f", "Bogus", "Bogus is an invalid volume type"),
    ]
    for name, kind, message in failures:
        with pytest.raises(ValueError, match=message):
            check_host_path(str(tmp_path / name), kind)
    infos = setup(pod_with({"name": "h", "hostPath": {"path": str(tmp_path / "made"), "type": "Directory"}}),
                  FakeObjects(), pods_dir=tmp_path / "pods")
    assert infos["h"] == VolumeInfo("h", VolumeKind.HOST_PATH, str(tmp_path / "made"))


def test_teardown_never_follows_links_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    host = tmp_path / "host"
    host.mkdir()
    (host / "data").write_text("keep too")
    pods = tmp_path / "pods"
    infos = setup(pod_with({"name": "d", "emptyDir": {}}, {"name": "h", "hostPath": {"path": str(host)}}),
                  FakeObjects(), pods_dir=pods)
    empty = Path(infos["d"].host_path)
    (empty / "link").symlink_to(outside)
    (empty / "file-link").symlink_to(outside / "precious")
    teardown(pods, "uid-1")
    assert not (pods / "uid-1").exists()
    assert (outside / "precious").read_text() == "keep" and (host / "data").read_text() == "keep too"
    teardown(pods, "uid-1")  # again: nothing left, no error
    for bad in ("", "..", "a/b"):
        with pytest.raises(ValueError):
            teardown(pods, bad)


# --- mounts --------------------------------------------------------------------------------------------------

def test_bind_spec():
    assert bind_string(bind_mount("/h", "/c", read_only=False)) == "/h:/c:rw"
    assert bind_string(bind_mount("/h", "/c", read_only=True, propagation="HostToContainer")) == "/h:/c:ro,rslave"
    assert bind_string(bind_mount("/h", "/c", read_only=False, propagation="Bidirectional")) == "/h:/c:rw,rshared"
    with pytest.raises(VolumeError, match="invalid MountPropagation mode"):
        bind_mount("/h", "/c", read_only=False, propagation="Sideways")


def test_container_mounts(tmp_path):
    getter = FakeObjects(configmaps={"cfg": {"k": "v"}})
    infos = setup(pod_with({"name": "d", "emptyDir": {}}, {"name": "cm", "configMap": {"name": "cfg"}},
                           {"name": "m", "emptyDir": {"medium": "Memory"}}), getter, pods_dir=tmp_path)
    empty = infos["d"].host_path
    mounts = container_mounts({"name": "c", "volumeMounts": [
        {"name": "d", "mountPath": "/data"},
        {"name": "d", "mountPath": "/ro", "readOnly": True},
        {"name": "d", "mountPath": "/sub", "subPath": "a/b"},
        {"name": "d", "mountPath": "/expr", "subPathExpr": "$(POD)/x"},
        {"name": "cm", "mountPath": "/etc/cfg"},
        {"name": "cm", "mountPath": "/etc/k", "subPath": "k"},
        {"name": "m", "mountPath": "/mem", "readOnly": True},
    ]}, infos, env={"POD": "p1"})
    cm_dir = infos["cm"].host_path
    data_file = os.path.realpath(os.path.join(cm_dir, "k"))
    assert tuple(bind_string(b) for b in mounts.binds) == (
        f"{empty}:/data:rw", f"{empty}:/ro:ro", f"{os.path.realpath(empty)}/a/b:/sub:rw",
        f"{os.path.realpath(empty)}/p1/x:/expr:rw", f"{cm_dir}:/etc/cfg:ro", f"{data_file}:/etc/k:ro",
    )
    assert os.path.isdir(os.path.join(empty, "a", "b")) and os.path.isdir(os.path.join(empty, "p1", "x"))
    assert mounts.tmpfs == {"/mem": "mode=1777,ro"}
    assert mounts.mounts_path("/data") and mounts.mounts_path("/mem") and not mounts.mounts_path("/etc/hosts")


@pytest.mark.parametrize(("mount", "message"), [
    pytest.param({"name": "d", "mountPath": "/x", "subPath": "../../etc"}, "must not contain '..'", id="dotdot"),
    pytest.param({"name": "d", "mountPath": "/x", "subPath": "a/../../b"}, "must not contain '..'", id="inner"),
    pytest.param({"name": "d", "mountPath": "/x", "subPath": "/etc"}, "must not be an absolute path", id="abs"),
    pytest.param({"name": "d", "mountPath": "/x", "subPath": "escape"}, "failed to prepare subPath", id="symlink"),
    pytest.param({"name": "d", "mountPath": "/x", "subPath": "escape/inner"}, "failed to prepare subPath",
                 id="through-symlink"),
    pytest.param({"name": "d", "mountPath": "/x", "subPathExpr": "$(NOPE)"}, "unresolved", id="expr"),
    pytest.param({"name": "zz", "mountPath": "/x"}, "cannot find volume 'zz'", id="no-volume"),
    pytest.param({"name": "m", "mountPath": "/x", "subPath": "a"}, "not supported on Memory", id="memory-sub"),
])
def test_sub_path_escapes_are_refused(tmp_path, mount, message):
    infos = setup(pod_with({"name": "d", "emptyDir": {}}, {"name": "m", "emptyDir": {"medium": "Memory"}}),
                  FakeObjects(), pods_dir=tmp_path / "pods")
    (Path(infos["d"].host_path) / "escape").symlink_to("/etc")
    with pytest.raises(VolumeError, match=message):
        container_mounts({"name": "c", "volumeMounts": [mount]}, infos)
