"""The pure container configuration (nodeagent/runtime/container_config.py) and pod files' content
(nodeagent/runtime/pod_files.py), table-driven; numbers from upstream helpers_linux_test.go."""

from __future__ import annotations

import os
import stat

import pytest

from control.util.resolvconf import ResolvConf
from nodeagent.runtime import labels as L
from nodeagent.runtime.container_config import (
    build_container_config,
    linux_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    security_options,
)
from nodeagent.runtime.cri import Mount
from nodeagent.runtime.docker import (
    DockerRuntime,
    container_docker_labels,
    docker_create_args,
    resource_kwargs,
    security_kwargs,
)
from nodeagent.runtime.pod_files import (
    DNSSettings,
    ensure_termination_log,
    hosts_content,
    pod_dns_config,
    pod_hostname,
    resolv_conf_content,
    write_pod_files,
)
from tests.support.fake_docker import FakeDockerAPI

POD = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}, "spec": {"containers": []}}


class DockerArgs:
    """The Docker arguments the runtime makes of one decided ContainerConfig."""

    def __init__(self, create_kwargs, host_config_kwargs):
        self.create_kwargs, self.host_config_kwargs = create_kwargs, host_config_kwargs


def build(container, pod=POD, **kw):
    kw.setdefault("env", [])
    kw.setdefault("mounts", [])
    kw.setdefault("image", "img:1")
    kw.setdefault("pod_dir", None)
    return DockerArgs(*docker_create_args(build_container_config(pod, container, **kw)))


def bind(text):
    host, container, mode = text.split(":")
    return Mount(host, container, read_only=mode == "ro")


@pytest.mark.parametrize(("command", "args", "entrypoint", "cmd"), [
    pytest.param(None, None, None, None, id="image-defaults"),
    pytest.param(["/bin/app"], None, ["/bin/app"], None, id="command-only-drops-image-cmd"),
    pytest.param(None, ["-v"], None, ["-v"], id="args-only-keeps-entrypoint"),
    pytest.param(["sh", "-c"], ["echo hi"], ["sh", "-c"], ["echo hi"], id="both"),
    pytest.param([], [], None, None, id="empty-lists-are-unset"),
    pytest.param(["echo", "$(NAME)", "$$(NAME)"], ["$(MISSING)"], ["echo", "web", "$(NAME)"], ["$(MISSING)"],
                 id="expanded"),
])
def test_command_and_args(command, args, entrypoint, cmd):
    container = {"name": "c"} | ({"command": command} if command is not None else {}) | (
        {"args": args} if args is not None else {})
    config = build(container, env=[("NAME", "web")])
    assert config.create_kwargs["entrypoint"] == entrypoint
    assert config.create_kwargs["command"] == cmd


def test_basic_fields():
    config = build({"name": "c", "workingDir": "/w", "tty": True, "stdin": True, "ports": [{"containerPort": 80}]},
                   env={"A": "1", "B": "x=y"})
    kwargs = config.create_kwargs
    assert kwargs["image"] == "img:1" and kwargs["working_dir"] == "/w"
    assert kwargs["environment"] == ["A=1", "B=x=y"]
    assert kwargs["tty"] is True and kwargs["stdin_open"] is True and kwargs["detach"] is True
    assert "ports" not in kwargs  # Docker refuses exposed ports with container: network mode
    assert kwargs["use_config_proxy"] is False
    assert build({"name": "c", "stdin": True, "stdinOnce": True}).create_kwargs["detach"] is False
    assert config.host_config_kwargs["binds"] == []


# upstream helpers_linux_test.go TestMilliCPUToQuota / shares
@pytest.mark.parametrize(("milli", "shares", "quota"), [
    (0, 2, 0), (1, 2, 1000), (5, 5, 1000), (10, 10, 1000), (20, 20, 2000), (200, 204, 20000),
    (500, 512, 50000), (1000, 1024, 100000), (1500, 1536, 150000), (2000, 2048, 200000),
])
def test_cpu_math(milli, shares, quota):
    assert milli_cpu_to_shares(milli) == shares
    assert milli_cpu_to_quota(milli, 100000) == quota


@pytest.mark.parametrize(("resources", "expected"), [
    pytest.param({}, {"cpu_shares": 2}, id="best-effort"),
    pytest.param({"requests": {"cpu": "250m"}}, {"cpu_shares": 256}, id="request-only"),
    pytest.param({"limits": {"cpu": "500m"}}, {"cpu_shares": 512, "cpu_period": 100000, "cpu_quota": 50000},
                 id="limit-only-request-defaults-to-limit"),
    pytest.param({"requests": {"cpu": "100m"}, "limits": {"cpu": "2"}},
                 {"cpu_shares": 102, "cpu_period": 100000, "cpu_quota": 200000}, id="burstable"),
    pytest.param({"limits": {"cpu": "1m"}}, {"cpu_shares": 2, "cpu_period": 100000, "cpu_quota": 1000},
                 id="tiny-limit-min-quota"),
    pytest.param({"limits": {"memory": "64Mi"}}, {"cpu_shares": 2, "mem_limit": 67108864,
                                                  "memswap_limit": 67108864}, id="memory"),
    pytest.param({"limits": {"memory": "1G"}}, {"cpu_shares": 2, "mem_limit": 10**9, "memswap_limit": 10**9},
                 id="memory-decimal"),
])
def test_resources(resources, expected):
    assert resource_kwargs(linux_resources({"resources": resources})) == expected


@pytest.mark.parametrize(("pod_sc", "sc", "create", "host"), [
    pytest.param({}, {}, {}, {}, id="none"),
    pytest.param({"runAsUser": 1000}, {}, {"user": "1000"}, {}, id="pod-user"),
    pytest.param({"runAsUser": 1000, "runAsGroup": 3000}, {"runAsUser": 0}, {"user": "0:3000"}, {},
                 id="container-overrides-user"),
    pytest.param({}, {"runAsGroup": 5}, {}, {}, id="group-alone-ignored"),
    pytest.param({"supplementalGroups": [5, 6], "fsGroup": 2000}, {}, {}, {"group_add": ["2000", "5", "6"]},
                 id="groups"),
    pytest.param({}, {"privileged": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}, {},
                 {"privileged": True, "read_only": True, "security_opt": ["no-new-privileges"]}, id="flags"),
    pytest.param({}, {"allowPrivilegeEscalation": True}, {}, {}, id="escalation-allowed"),
    pytest.param({}, {"capabilities": {"add": ["NET_ADMIN", "cap_sys_time"], "drop": ["all"]}}, {},
                 {"cap_add": ["CAP_NET_ADMIN", "CAP_SYS_TIME"], "cap_drop": ["ALL"]}, id="capabilities"),
])
def test_security_context(pod_sc, sc, create, host):
    pod = {"spec": {"securityContext": pod_sc}}
    assert security_kwargs(security_options(pod, {"securityContext": sc})) == (create, host)


def test_managed_binds_and_tmpfs(tmp_path):
    pod_dir = str(tmp_path)
    config = build({"name": "app"}, mounts=[bind("/v:/data:rw")], tmpfs={"/mem": "size=1"}, pod_dir=pod_dir,
                   attempt=3, pod_ips=["10.244.0.9"])
    assert config.host_config_kwargs["binds"] == [
        "/v:/data:rw", f"{pod_dir}/etc-hosts:/etc/hosts:rw", f"{pod_dir}/resolv.conf:/etc/resolv.conf:ro",
        f"{pod_dir}/containers/app/3:/dev/termination-log:rw",
    ]
    assert config.host_config_kwargs["tmpfs"] == {"/mem": "size=1"}
    # no pod IP yet → no hosts file; a volume at /etc/hosts wins; custom/empty termination path
    config = build({"name": "app", "terminationMessagePath": ""}, mounts=[bind("/x:/etc/resolv.conf:ro")],
                   pod_dir=pod_dir)
    assert config.host_config_kwargs["binds"] == ["/x:/etc/resolv.conf:ro"]
    config = build({"name": "app", "terminationMessagePath": "/tmp/msg"}, mounts=[bind("/h:/etc/hosts:rw")],
                   pod_dir=pod_dir, pod_ips=["10.0.0.1"])
    assert config.host_config_kwargs["binds"] == [
        "/h:/etc/hosts:rw", f"{pod_dir}/resolv.conf:/etc/resolv.conf:ro", f"{pod_dir}/containers/app/0:/tmp/msg:rw"]


def test_hosts_content():
    pod = {"metadata": {"name": "web", "namespace": "ns"},
           "spec": {"hostAliases": [{"ip": "1.2.3.4", "hostnames": ["a", "b"]}]}}
    assert hosts_content(pod, ["10.244.0.5"]) == (
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
        "10.244.0.5\tweb\n\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n")
    sub = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"hostname": "h", "subdomain": "s"}}
    assert hosts_content(sub, ["10.0.0.1"]).endswith("10.0.0.1\th.s.ns.svc.cluster.local\th\n")
    host_net = {"metadata": {"name": "w"}, "spec": {"hostNetwork": True}}
    assert hosts_content(host_net, ["192.168.0.1"], node_hosts="127.0.0.1 node\n") == (
        "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n")
    assert pod_hostname({"metadata": {"name": "a" * 62 + "-b-c"}}) == ("a" * 62, "")


NODE_RESOLV = "nameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch corp.example lab.\noptions edns0 ndots:1\n"
CLUSTER = DNSSettings(cluster_dns=("10.96.0.10",), cluster_domain="cluster.local")
CLUSTER_SEARCH = "search ns.svc.cluster.local svc.cluster.local cluster.local corp.example lab\n"


@pytest.mark.parametrize(("spec", "settings", "expected"), [
    pytest.param({}, CLUSTER, "nameserver 10.96.0.10\n" + CLUSTER_SEARCH + "options ndots:5\n",
                 id="cluster-first-default"),
    pytest.param({"dnsPolicy": "ClusterFirst"}, DNSSettings(cluster_dns=("10.96.0.10", "10.96.0.11"),
                                                            cluster_domain="corp.k8s"),
                 "nameserver 10.96.0.10\nnameserver 10.96.0.11\nsearch ns.svc.corp.k8s svc.corp.k8s corp.k8s "
                 "corp.example lab\noptions ndots:5\n", id="cluster-first-other-domain"),
    pytest.param({"dnsPolicy": "ClusterFirst", "hostNetwork": True}, CLUSTER,
                 "nameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch corp.example lab\noptions edns0 ndots:1\n",
                 id="cluster-first-host-network-falls-back-to-default"),
    pytest.param({"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True}, CLUSTER,
                 "nameserver 10.96.0.10\n" + CLUSTER_SEARCH + "options ndots:5\n", id="with-host-net"),
    pytest.param({"dnsPolicy": "ClusterFirstWithHostNet"}, CLUSTER,
                 "nameserver 10.96.0.10\n" + CLUSTER_SEARCH + "options ndots:5\n", id="with-host-net-pod-network"),
    pytest.param({"dnsPolicy": "Default"}, CLUSTER,
                 "nameserver 10.0.0.2\nsearch corp.example lab\noptions edns0 ndots:1\n",
                 id="default-loopback-dropped"),
    pytest.param({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["x"],
                                                     "options": [{"name": "ndots", "value": "2"}]}}, CLUSTER,
                 "nameserver 1.1.1.1\nsearch x\noptions ndots:2\n", id="none"),
    pytest.param({"dnsConfig": {"nameservers": ["1.1.1.1", "10.96.0.10"], "searches": ["ns.svc.cluster.local", "y"],
                                "options": [{"name": "ndots", "value": "2"}, {"name": "single-request"}]}}, CLUSTER,
                 "nameserver 10.96.0.10\nnameserver 1.1.1.1\n" + CLUSTER_SEARCH.rstrip("\n") + " y\n"
                 "options ndots:2 single-request\n", id="cluster-first-merged-dns-config"),
    pytest.param({"dnsConfig": {"nameservers": ["1.1.1.1"], "options": [{"name": "ndots", "value": "5"}]}},
                 DNSSettings(), "nameserver 10.0.0.2\nnameserver 1.1.1.1\nsearch corp.example lab\n"
                 "options edns0 ndots:5\n", id="no-cluster-dns-falls-back-to-default"),
])
def test_resolv_conf(spec, settings, expected):
    assert resolv_conf_content({"metadata": {"namespace": "ns"}, "spec": spec}, NODE_RESOLV, settings) == expected


def test_dns_warnings_and_limits():
    pod = {"metadata": {"namespace": "ns"}, "spec": {"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"], "searches": [f"d{i}.example" for i in range(40)]}}}
    config, warnings = pod_dns_config(pod, ResolvConf(), CLUSTER)
    assert config.nameservers == ("1.1.1.1", "1.1.1.2", "1.1.1.3") and len(config.searches) == 32
    assert [reason for reason, _ in warnings] == ["DNSConfigForming", "DNSConfigForming"]
    assert warnings[0][1].endswith("the applied nameserver line is: 1.1.1.1 1.1.1.2 1.1.1.3")
    long = {"metadata": {"namespace": "ns"}, "spec": {"dnsPolicy": "None", "dnsConfig": {
        "searches": ["a" * 60 + f".d{i}.example" for i in range(30)]}}}
    config, _ = pod_dns_config(long, ResolvConf(), CLUSTER)
    assert len(" ".join(config.searches)) <= 2048 and config.searches[-1].endswith(".example")
    _, missing = pod_dns_config({"metadata": {}, "spec": {}}, ResolvConf(), DNSSettings())
    assert missing == [("MissingClusterDNS", 'kubelet does not have ClusterDNS IP configured and cannot create Pod '
                                             'using "ClusterFirst" policy. Falling back to "Default" policy.')]


def test_pod_files_on_disk(tmp_path):
    node_resolv = tmp_path / "node-resolv"
    node_resolv.write_text("nameserver 10.9.9.9\n")
    pod_dir = tmp_path / "pod"
    warnings = write_pod_files(pod_dir, POD, ["10.244.1.2"], dns=DNSSettings(resolv_conf=str(node_resolv)))
    assert (pod_dir / "etc-hosts").read_text().endswith("10.244.1.2\tweb\n")
    assert (pod_dir / "resolv.conf").read_text() == "nameserver 10.9.9.9\n"
    assert [reason for reason, _ in warnings] == ["MissingClusterDNS"]
    write_pod_files(pod_dir, POD, ["10.244.1.2"], dns=DNSSettings(cluster_dns=("10.96.0.10",),
                                                                  resolv_conf=str(node_resolv)))
    assert (pod_dir / "resolv.conf").read_text().startswith("nameserver 10.96.0.10\nsearch ")
    assert stat.S_IMODE(os.stat(pod_dir / "etc-hosts").st_mode) == 0o644
    path = ensure_termination_log(pod_dir, "app", 2)
    assert path == str(pod_dir / "containers" / "app" / "2") and stat.S_IMODE(os.stat(path).st_mode) == 0o666
    assert read_termination_message(pod_dir, "app", 2) == ""
    with open(path, "w") as handle:
        handle.write("x" * 5000)
    assert read_termination_message(pod_dir, "app", 2) == "x" * 4096
    assert read_termination_message(pod_dir, "app", 9) == ""


def read_termination_message(pod_dir, name, attempt):
    """The production path: the pod file bind-mounted at the message path (build_container_config), copied
    out of the exited container by the runtime (a fake engine that serves bind-mounted files)."""
    config = build_container_config(POD, {"name": name}, env=[], mounts=[], image="img:1", pod_dir=str(pod_dir),
                                    attempt=attempt)
    api = FakeDockerAPI()
    labels = container_docker_labels(config, node="n", sandbox_id="sb")
    api.add("cid", labels, state="exited", binds=docker_create_args(config)[1]["binds"])
    identity = L.parse_labels(labels)
    return DockerRuntime(api, node_name="n").inspect_status("cid", identity).message
