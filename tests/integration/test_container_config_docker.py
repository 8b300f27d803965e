"""Container configuration against the real dockerd: env, volumes and managed files built by
nodeagent/runtime/{env,container_config,pod_files}.py and nodeagent/volumes/, checked from inside real
busybox containers that join a pause sandbox as app containers do.

Every container carries the test label and is removed at teardown; volume dirs live under tmp_path.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from nodeagent.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from nodeagent.runtime import labels as L
from nodeagent.runtime.container_config import build_container_config
from nodeagent.runtime.docker import DockerRuntime, docker_create_args
from nodeagent.runtime.downward import NodeFacts
from nodeagent.runtime.env import make_environment
from nodeagent.runtime.pod_files import ensure_termination_log, write_pod_files
from nodeagent.volumes.mounts import container_mounts
from nodeagent.volumes.pod_volumes import setup, teardown
from tests.support.cri_configs import container_docker_labels
from tests.support.fake_objects import FakeObjects

POD_IP = "10.244.77.7"


GETTER = FakeObjects({"cfg": {"greeting": "hello", "file.txt": "from configmap"}}, {"creds": {"password": "s3cret"}})


@pytest.fixture
def run_pod(docker_api, images, container_labels, cleanup, tmp_path):
    """Start a sandbox, then run each container of `pod` to completion (in order) and return its output."""

    def run(pod, *, timeout=30):
        api = docker_api
        pods_dir = tmp_path / "pods"
        uid = pod["metadata"]["uid"]
        pod_dir = str(pods_dir / uid)
        cleanup(lambda: teardown(pods_dir, uid))
        volumes = setup(pod, GETTER, pods_dir=pods_dir, pod_ips=[POD_IP])
        write_pod_files(pod_dir, pod, [POD_IP])
        sandbox = api.create_container(PAUSE_IMAGE, labels=container_labels, host_config=api.create_host_config(
            network_mode="none", ipc_mode="shareable"))
        cleanup(lambda: api.remove_container(sandbox, force=True))
        api.start(sandbox)
        outputs, messages = {}, {}
        for container in pod["spec"]["containers"]:
            env = make_environment(pod, container, GETTER, pod_ips=[POD_IP], node=NodeFacts(host_ips=("192.0.2.1",)))
            mounts = container_mounts(container, volumes, env=env.as_dict())
            ensure_termination_log(pod_dir, container["name"], 0)
            config = build_container_config(pod, container, env=env.variables, mounts=mounts.binds,
                                            tmpfs=mounts.tmpfs, image=BUSYBOX_IMAGE, pod_dir=pod_dir,
                                            pod_ips=[POD_IP])
            create_kwargs, host_config_kwargs = docker_create_args(config, sandbox_id=sandbox["Id"])
            host_config = api.create_host_config(**host_config_kwargs)
            created = api.create_container(labels=container_labels, host_config=host_config, **create_kwargs)
            cleanup(lambda created=created: api.remove_container(created, force=True))
            api.start(created)
            result = api.wait(created, timeout=timeout)
            outputs[container["name"]] = (result["StatusCode"], api.logs(created).decode())
            messages[container["name"]] = termination_message(api, pod, container, created)
        return outputs, pod_dir, messages

    return run


def termination_message(api, pod, container, created) -> str:
    """What the runtime reads back as the exited container's termination message (get_archive)."""
    labels = container_docker_labels(pod, container, node="sktest", sandbox_id="", attempt=0, spec_hash="")
    identity = L.parse_labels(labels)
    assert identity is not None
    return DockerRuntime(api, node_name="sktest").inspect_status(created["Id"], identity).message


def new_pod(containers, volumes=(), **spec):
    return {"metadata": {"name": "cfgpod", "namespace": "ns1", "uid": f"sktest-{uuid.uuid4().hex[:12]}",
                         "labels": {"app": "demo"}},
            "spec": {"nodeName": "node-1", "containers": containers, "volumes": list(volumes), **spec}}


def lines(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_env_working_dir_user_and_config_files(run_pod):
    script = (
        "echo GREETING=$GREETING; echo MSG=$MSG; echo PASS=$PASS; echo NAME=$POD_NAME; echo IP=$POD_IP; "
        "echo LABEL=$APP; echo MEM=$MEM; echo CWD=$(pwd); echo ID=$(id -u):$(id -g); echo GROUPS=$(id -G); "
        "echo CFG=$(cat /etc/cfg/file.txt); echo CFGMODE=$(stat -L -c %a /etc/cfg/file.txt); "
        "echo SECRET=$(cat /etc/creds/password); echo SECMODE=$(stat -L -c %a /etc/creds/password); "
        "echo SUB=$(cat /etc/greeting); echo PODNAME_FILE=$(cat /etc/podinfo/name); "
        "echo ARG=$1"
    )
    pod = new_pod([{
        "name": "app", "command": ["sh", "-c", script, "sh"], "args": ["$(GREETING)-arg"], "workingDir": "/tmp",
        "securityContext": {"runAsUser": 1234, "runAsGroup": 2345},
        "resources": {"limits": {"memory": "48Mi"}},
        "env": [
            {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
            {"name": "MSG", "value": "$(GREETING) world $$(GREETING)"},
            {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
        ],
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/etc/cfg"}, {"name": "creds", "mountPath": "/etc/creds"},
            {"name": "cfg", "mountPath": "/etc/greeting", "subPath": "greeting"},
            {"name": "podinfo", "mountPath": "/etc/podinfo"},
        ],
    }], volumes=[
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o444}},
        {"name": "podinfo", "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
    ], securityContext={"supplementalGroups": [4000]})
    outputs, _, _ = run_pod(pod)
    code, out = outputs["app"]
    assert code == 0, out
    assert lines(out) == {
        "GREETING": "hello", "MSG": "hello world $(GREETING)", "PASS": "s3cret", "NAME": "cfgpod", "IP": POD_IP,
        "LABEL": "demo", "MEM": "48", "CWD": "/tmp", "ID": "1234:2345", "GROUPS": "2345 4000",
        "CFG": "from configmap", "CFGMODE": "644", "SECRET": "s3cret", "SECMODE": "444", "SUB": "hello",
        "PODNAME_FILE": "cfgpod", "ARG": "hello-arg",
    }


def test_read_only_rootfs_resources_caps_and_termination_message(run_pod):
    script = (
        "touch /rootfs-write 2>/dev/null && echo ROOTFS=writable || echo ROOTFS=readonly; "
        "echo MEM=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); "
        "echo SWAP=$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || echo n/a); "
        "echo QUOTA=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); "
        "echo PERIOD=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us); "
        "echo SHARES=$(cat /sys/fs/cgroup/cpu/cpu.shares); echo CAPS=$(grep CapEff /proc/self/status | cut -f2); "
        "echo NNP=$(grep NoNewPrivs /proc/self/status | cut -f2); "
        "echo bye > /dev/termination-log"
    )
    pod = new_pod([{
        "name": "locked", "command": ["sh", "-c", script],
        "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m", "memory": "64Mi"}},
        "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
    }])
    outputs, _, messages = run_pod(pod)
    code, out = outputs["locked"]
    assert code == 0, out
    values = lines(out)
    assert values["ROOTFS"] == "readonly"
    assert values["MEM"] == str(64 * 2**20)
    assert values["SWAP"] in (str(64 * 2**20), "n/a")  # memsw exists only with swap accounting
    assert (values["QUOTA"], values["PERIOD"], values["SHARES"]) == ("50000", "100000", "256")
    assert values["CAPS"] == f"{1 << 10:016x}"  # CAP_NET_BIND_SERVICE is bit 10, nothing else
    assert values["NNP"] == "1"
    assert messages["locked"] == "bye\n"


def test_empty_dir_shared_memory_tmpfs_host_path_and_etc_hosts(run_pod, tmp_path):
    host_dir = tmp_path / "host-data"
    pod = new_pod([
        {"name": "writer", "command": ["sh", "-c",
                                       "echo shared > /scratch/note; echo host > /host/from-pod; "
                                       "grep ' /mem ' /proc/mounts; echo x > /mem/f && echo MEMWRITE=ok"],
         "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}, {"name": "host", "mountPath": "/host"},
                          {"name": "mem", "mountPath": "/mem"}]},
        {"name": "reader", "command": ["sh", "-c", "cat /data/note; cat /etc/hosts; cat /etc/resolv.conf; "
                                                   "touch /data/ro 2>/dev/null || echo RO=refused"],
         "volumeMounts": [{"name": "scratch", "mountPath": "/data", "readOnly": True}]},
    ], volumes=[
        {"name": "scratch", "emptyDir": {}},
        {"name": "host", "hostPath": {"path": str(host_dir), "type": "DirectoryOrCreate"}},
        {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Mi"}},
    ], hostAliases=[{"ip": "192.0.2.10", "hostnames": ["alias.example"]}])
    outputs, pod_dir, _ = run_pod(pod)
    code, out = outputs["writer"]
    assert code == 0, out
    assert "tmpfs /mem tmpfs" in out and "size=2048k" in out and "MEMWRITE=ok" in out
    assert (host_dir / "from-pod").read_text() == "host\n"
    assert stat.S_IMODE(os.stat(host_dir).st_mode) == 0o755
    code, out = outputs["reader"]
    assert code == 0, out
    assert out.startswith("shared\n# Kubernetes-managed hosts file.\n")
    assert f"{POD_IP}\tcfgpod\n" in out and "192.0.2.10\talias.example\n" in out
    assert (Path(pod_dir) / "resolv.conf").read_text() in out
    assert "RO=refused" in out


def test_configmap_update_reaches_a_running_container(docker_api, images, container_labels, cleanup, tmp_path):
    api = docker_api
    getter = FakeObjects({"live": {"k": "v1"}}, {})
    pod = new_pod([{"name": "watcher", "command": ["sleep", "60"],
                    "volumeMounts": [{"name": "live", "mountPath": "/cfg"}]}],
                  volumes=[{"name": "live", "configMap": {"name": "live"}}])
    pods_dir = tmp_path / "pods"
    cleanup(lambda: teardown(pods_dir, pod["metadata"]["uid"]))
    volumes = setup(pod, getter, pods_dir=pods_dir)
    container = pod["spec"]["containers"][0]
    config = build_container_config(pod, container, env=[], mounts=container_mounts(container, volumes).binds,
                                    image=BUSYBOX_IMAGE, pod_dir=None)
    create_kwargs, host_config_kwargs = docker_create_args(config)
    created = api.create_container(labels=container_labels, host_config=api.create_host_config(
        network_mode="none", **host_config_kwargs), **create_kwargs)
    cleanup(lambda: api.remove_container(created, force=True))
    api.start(created)

    def read():
        run = api.exec_create(created, ["sh", "-c", "cat /cfg/k; echo; ls -A /cfg | grep -c '^\\.\\.2'"])
        return api.exec_start(run).decode().split()

    assert read() == ["v1", "1"]
    getter.configmaps["live"] = {"k": "v2"}
    setup(pod, getter, pods_dir=pods_dir)
    assert read() == ["v2", "1"]  # seen through the same bind mount; the old payload dir is gone
    touch = api.exec_create(created, ["sh", "-c", "echo x > /cfg/k"])
    api.exec_start(touch)
    assert api.exec_inspect(touch["Id"])["ExitCode"] != 0  # configMap mounts are read-only
