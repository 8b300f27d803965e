"""CNI mode's pure parts (nodeagent/network/cni/): configuration selection and parsing, each plugin's
stdin config with prevResult chaining and runtimeConfig, results and errors, the cache records, and
ADD/CHECK/DEL over a fake exec that records what each plugin got."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

from nodeagent.config import ConfigError as KubeletConfigError
from nodeagent.config import KubeletConfig, validate
from nodeagent.network.cni import conf, version
from nodeagent.network.cni.api import CNIConfig, RuntimeConf
from nodeagent.network.cni.cache import CachedAttachment, ResultCache, cache_key, decode, encode
from nodeagent.network.cni.default import FILE_NAME, default_conflist, ensure_default
from nodeagent.network.cni.errors import CNIError, ConfigError, PluginError
from nodeagent.network.cni.invoke import Args, ExecOutput, environment
from nodeagent.network.cni.podnet import CNIPodNetwork, capability_args, pod_args
from nodeagent.network.cni.portmap import removal_plan
from nodeagent.network.cni.result import parse_error, parse_result
from nodeagent.network.podnet import PodNetworkError

BRIDGE_RESULT = {
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "cbr0", "mac": "aa:00:00:00:00:01"}, {"name": "veth1234", "mac": "aa:00:00:00:00:02"},
                   {"name": "eth0", "mac": "aa:00:00:00:00:03", "sandbox": "/proc/7/ns/net"}],
    "ips": [{"address": "10.244.3.5/24", "gateway": "10.244.3.1", "interface": 2}],
    "routes": [{"dst": "0.0.0.0/0"}],
}
POD = {"metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
       "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080},
                                                       {"containerPort": 53, "hostPort": 5353, "protocol": "UDP",
                                                        "hostIP": "127.0.0.1"},
                                                       {"containerPort": 9000}]}]}}


def conflist(*plugins: dict, version_: str = "1.0.0", **extra) -> bytes:
    return json.dumps({"cniVersion": version_, "name": "net", "plugins": list(plugins), **extra}).encode()


@pytest.mark.parametrize(("names", "expected"), [
    pytest.param(["99-b.conflist", "10-a.conf", "05-z.json"], ["05-z.json", "10-a.conf", "99-b.conflist"],
                 id="lexical-across-extensions"),
    pytest.param(["README", "10-a.conflist.bak", "x.yaml", "20.conflist"], ["20.conflist"], id="others-ignored"),
    pytest.param([], [], id="none"),
])
def test_candidates(names, expected):
    assert conf.candidates(names) == expected


@pytest.mark.parametrize(("data", "name", "message"), [
    pytest.param(b"{", "a.conflist", "not JSON", id="not-json"),
    pytest.param(b"[]", "a.conflist", "JSON object", id="not-object"),
    pytest.param(conflist(), "a.conflist", "no plugins", id="no-plugins"),
    pytest.param(json.dumps({"cniVersion": "1.0.0", "plugins": [{"type": "x"}]}).encode(), "a.conflist",
                 "missing network name", id="no-name"),
    pytest.param(conflist({"name": "x"}), "a.conflist", "plugin 0 has no type", id="plugin-without-type"),
    pytest.param(conflist({"type": "x"}, version_="one"), "a.conflist", "invalid CNI version", id="bad-version"),
    pytest.param(conflist({"type": "x"}, disableCheck="maybe"), "a.conflist", "disableCheck", id="bad-disable"),
    pytest.param(json.dumps({"name": "n"}).encode(), "a.conf", "plugin 0 has no type", id="conf-without-type"),
])
def test_parse_refuses(data, name, message):
    with pytest.raises(ConfigError, match=message):
        conf.parse(data, name)


def test_parse_list_and_single_plugin():
    listed = conf.parse(conflist({"type": "bridge"}, {"type": "portmap"}, disableCheck="true"), "10.conflist")
    assert (listed.name, listed.cni_version, listed.plugin_types(), listed.disable_check) == (
        "net", "1.0.0", ("bridge", "portmap"), True)
    single = conf.parse(json.dumps({"cniVersion": "0.3.1", "name": "one", "type": "ptp"}).encode(), "10.conf")
    assert (single.name, single.cni_version, single.plugin_types()) == ("one", "0.3.1", ("ptp",))
    assert isinstance(ConfigError("x"), PodNetworkError)  # a bad config fails the sandbox like any network error


@pytest.mark.parametrize(("plugin", "prev", "caps", "expected_extra"), [
    pytest.param({"type": "bridge"}, None, {"portMappings": [1]}, {}, id="first-plugin-no-caps"),
    pytest.param({"type": "portmap", "capabilities": {"portMappings": True}}, {"cniVersion": "1.0.0"},
                 {"portMappings": [1], "bandwidth": {}},
                 {"prevResult": {"cniVersion": "1.0.0"}, "runtimeConfig": {"portMappings": [1]}}, id="chained-cap"),
    pytest.param({"type": "portmap", "capabilities": {"portMappings": False}}, None, {"portMappings": [1]}, {},
                 id="capability-off"),
    pytest.param({"type": "portmap", "capabilities": {"portMappings": True}}, None, {}, {}, id="no-hostports"),
    pytest.param({"type": "x", "name": "other", "cniVersion": "0.1.0"}, None, {}, {}, id="name-version-overwritten"),
])
def test_plugin_config(plugin, prev, caps, expected_extra):
    network = conf.parse(conflist(plugin), "a.conflist")
    built = conf.plugin_config(network, plugin, prev_result=prev, capability_args=caps)
    assert built == {**plugin, "name": "net", "cniVersion": "1.0.0", **expected_extra}


def test_version_gates():
    assert version.at_least("0.4.0", "0.4.0") and version.at_least("1.0.0", "0.4.0")
    assert not version.at_least("0.3.1", "0.4.0") and not version.at_least("", "0.3.0")  # "" is 0.1.0
    with pytest.raises(ValueError):
        version.parse("1.0")


def test_parse_result_bridge_and_legacy():
    result = parse_result(json.dumps(BRIDGE_RESULT).encode())
    ip = result.pod_ip("eth0")
    assert ip is not None and (ip.address, ip.gateway) == ("10.244.3.5/24", "10.244.3.1")
    assert result.host_side("eth0") == ("veth1234", "cbr0")
    assert result.host_side("eth1") == ("", "")
    ptp = parse_result({**BRIDGE_RESULT, "interfaces": BRIDGE_RESULT["interfaces"][1:],
                        "ips": [{"address": "fd00::5/64", "interface": 1}, {"address": "10.1.0.5/24", "interface": 1}]})
    assert ptp.host_side("eth0") == ("veth1234", "") and ptp.pod_ip("eth0").address == "10.1.0.5/24"
    legacy = parse_result({"cniVersion": "0.2.0", "ip4": {"ip": "10.9.0.7/16", "gateway": "10.9.0.1"}})
    assert legacy.pod_ip("eth0").address == "10.9.0.7/16" and legacy.interfaces == ()
    for bad in (b"nope", b"[1]", json.dumps({"cniVersion": "1.0.0", "ips": [{"address": "x"}]}).encode()):
        with pytest.raises(CNIError):
            parse_result(bad, plugin="bridge")


@pytest.mark.parametrize(("stdout", "stderr", "expected"), [
    pytest.param(json.dumps({"cniVersion": "1.0.0", "code": 11, "msg": "no IP addresses available",
                             "details": "range 10.244.3.0/24 full"}).encode(), b"",
                 (11, "no IP addresses available", "range 10.244.3.0/24 full"), id="error-json"),
    pytest.param(b"", b"panic: boom\n", (0, "panic: boom", ""), id="stderr-text"),
    pytest.param(b"", b"", (0, "exit status 2", ""), id="nothing-printed"),
])
def test_parse_error(stdout, stderr, expected):
    error = parse_error("host-local", "ADD", stdout, stderr, 2)
    assert (error.code, error.msg, error.details) == expected
    assert "plugin type='host-local' failed (add)" in str(error) and expected[1] in str(error)


def test_environment():
    env = environment(Args(command="ADD", container_id="abc", netns="/proc/7/ns/net", ifname="eth0",
                           plugin_args=(("IgnoreUnknown", "1"), ("K8S_POD_NAME", "web")), path=("/a", "/b")))
    assert env == {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "abc", "CNI_NETNS": "/proc/7/ns/net",
                   "CNI_IFNAME": "eth0", "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web", "CNI_PATH": "/a:/b"}


def test_pod_args_and_port_mappings():
    assert pod_args(POD, "sb1") == (("IgnoreUnknown", "1"), ("K8S_POD_NAMESPACE", "shop"), ("K8S_POD_NAME", "web"),
                                    ("K8S_POD_INFRA_CONTAINER_ID", "sb1"), ("K8S_POD_UID", "u-1"))
    assert capability_args(POD) == {"portMappings": [
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 5353, "containerPort": 53, "protocol": "udp", "hostIP": "127.0.0.1"}]}
    assert capability_args({"metadata": {}, "spec": {"containers": [{"name": "c"}]}}) == {}


@pytest.mark.parametrize(("parts", "ok"), [
    pytest.param(("net", "abc", "eth0"), "net-abc-eth0", id="libcni-name"),
    pytest.param(("", "abc", "eth0"), None, id="no-network"),
    pytest.param(("net", "", "eth0"), None, id="no-container"),
    pytest.param(("net", "../x", "eth0"), None, id="slash"),
])
def test_cache_key(parts, ok):
    if ok is None:
        with pytest.raises(CNIError):
            cache_key(*parts)
    else:
        assert cache_key(*parts) == ok


def test_cache_records_round_trip_and_filter(tmp_path):
    record = CachedAttachment(container_id="sb1", network_name="net", ifname="eth0", config=b'{"x": 1}',
                              netns="/proc/7/ns/net", cni_args=(("K", "V"),),
                              capability_args={"portMappings": []}, result=BRIDGE_RESULT)
    assert decode(encode(record)) == record
    assert json.loads(encode(record))["config"] == "eyJ4IjogMX0="  # base64, as Go encodes []byte
    cache = ResultCache(tmp_path)
    cache.put(record)
    cache.put(CachedAttachment(container_id="sb2", network_name="net", ifname="eth0", config=b"{}"))
    (tmp_path / "results" / "junk").write_text("{")
    assert [a.container_id for a in cache.attachments()] == ["sb1", "sb2"]
    assert cache.attachments("sb2")[0].result is None
    cache.delete(record)
    assert [a.container_id for a in cache.attachments("sb1")] == []
    with pytest.raises(CNIError):
        decode(json.dumps({"kind": "other"}).encode())


class FakeExec:
    """Plugins as functions of (command, stdin config) → ExecOutput; records every call."""

    def __init__(self, fail: Mapping[tuple[str, str], bytes] | None = None) -> None:
        self.calls: list[tuple[str, str, dict]] = []
        self.fail = dict(fail or {})

    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str:
        if plugin == "missing":
            raise CNIError(f'failed to find plugin "{plugin}" in path {list(paths)}')
        return f"/bin/{plugin}"

    def run(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> ExecOutput:
        plugin, command, config = plugin_path.rsplit("/", 1)[1], env["CNI_COMMAND"], json.loads(stdin)
        self.calls.append((command, plugin, config))
        if (command, plugin) in self.fail:
            return ExecOutput(1, self.fail[(command, plugin)], b"")
        if command != "ADD":
            return ExecOutput(0, b"", b"")
        result = config.get("prevResult") or BRIDGE_RESULT
        return ExecOutput(0, json.dumps({**result, "seen": [*result.get("seen", []), plugin]}).encode(), b"")


RT = RuntimeConf(container_id="sb1", netns="/proc/7/ns/net", ifname="eth0", args=(("K", "V"),),
                 capability_args={"portMappings": [{"hostPort": 1, "containerPort": 2, "protocol": "tcp"}]})
CHAIN = conflist({"type": "bridge"}, {"type": "portmap", "capabilities": {"portMappings": True}}, {"type": "loopback"})


def test_add_chains_prev_results_and_caches_then_del_runs_in_reverse(tmp_path):
    fake = FakeExec()
    cni = CNIConfig(["/bin"], fake, ResultCache(tmp_path))
    network = conf.parse(CHAIN, "a.conflist")
    result = cni.add_network_list(network, RT)
    assert result.raw["seen"] == ["bridge", "portmap", "loopback"]
    assert [c[1] for c in fake.calls] == ["bridge", "portmap", "loopback"]
    assert "prevResult" not in fake.calls[0][2] and fake.calls[1][2]["prevResult"]["seen"] == ["bridge"]
    assert fake.calls[1][2]["runtimeConfig"] == dict(RT.capability_args) and "runtimeConfig" not in fake.calls[0][2]
    (cached,) = ResultCache(tmp_path).attachments("sb1")
    assert (cached.config, cached.result, cached.cni_args) == (CHAIN, result.raw, (("K", "V"),))

    fake.calls.clear()
    cni.check_network_list(network, RT)
    assert [(c[0], c[1], c[2]["prevResult"]["seen"][-1]) for c in fake.calls] == [
        ("CHECK", p, "loopback") for p in ("bridge", "portmap", "loopback")]
    fake.calls.clear()
    cni.del_network_list(network, RT)
    assert [(c[0], c[1]) for c in fake.calls] == [("DEL", "loopback"), ("DEL", "portmap"), ("DEL", "bridge")]
    assert all(c[2]["prevResult"] == result.raw for c in fake.calls)
    assert ResultCache(tmp_path).attachments() == []


def test_old_versions_get_no_check_and_no_cached_prev_result_on_del(tmp_path):
    fake = FakeExec()
    cni = CNIConfig(["/bin"], fake, ResultCache(tmp_path))
    network = conf.parse(conflist({"type": "bridge"}, version_="0.3.1"), "a.conflist")
    cni.add_network_list(network, RT)
    with pytest.raises(CNIError, match="does not support the CHECK command"):
        cni.check_network_list(network, RT)
    fake.calls.clear()
    cni.del_network_list(network, RT)
    assert "prevResult" not in fake.calls[0][2]
    disabled = conf.parse(conflist({"type": "bridge"}, disableCheck=True), "a.conflist")
    fake.calls.clear()
    cni.check_network_list(disabled, RT)
    assert fake.calls == []


def test_failures_carry_the_plugin_message(tmp_path):
    error = json.dumps({"code": 11, "msg": "no IP addresses available", "details": "full"}).encode()
    cni = CNIConfig(["/bin"], FakeExec({("ADD", "portmap"): error}), ResultCache(tmp_path))
    with pytest.raises(PluginError) as raised:
        cni.add_network_list(conf.parse(CHAIN, "a.conflist"), RT)
    assert (raised.value.plugin, raised.value.code, raised.value.msg, raised.value.details) == (
        "portmap", 11, "no IP addresses available", "full")
    assert ResultCache(tmp_path).attachments("sb1")[0].result is None  # recorded before the plugins ran
    with pytest.raises(PluginError, match='failed to find plugin "missing"'):
        cni.add_network_list(conf.parse(conflist({"type": "missing"}), "a.conflist"), RT)


def network_dir(tmp_path, data: bytes = CHAIN, name: str = "10-net.conflist"):
    directory = tmp_path / "net.d"
    directory.mkdir(exist_ok=True)
    (directory / name).write_bytes(data)
    return str(directory)


def test_pod_network_attach_failure_is_deleted_and_detach_uses_the_cached_config(tmp_path):
    fake = FakeExec({("ADD", "portmap"): json.dumps({"code": 7, "msg": "port taken"}).encode()})
    conf_dir = network_dir(tmp_path)
    pods = CNIPodNetwork(conf_dir=conf_dir, bin_dirs=["/bin"], cache_dir=str(tmp_path / "cni"),
                         netns_of=lambda sandbox_id: "", exec=fake)
    with pytest.raises(PluginError, match="port taken"):
        pods.attach("sb1", POD, 7)
    assert [(c[0], c[1]) for c in fake.calls[2:]] == [("DEL", "loopback"), ("DEL", "portmap"), ("DEL", "bridge")]
    assert pods.cache.attachments() == []

    fake.fail.clear()
    fake.calls.clear()
    interface = pods.attach("sb1", POD, 7)
    assert (interface.ip, interface.prefix_len, interface.gateway, interface.host_veth, interface.bridge) == (
        "10.244.3.5", 24, "10.244.3.1", "veth1234", "cbr0")
    assert fake.calls[0][2]["name"] == "net"
    network_dir(tmp_path, conflist({"type": "ptp"}), "10-net.conflist")  # the operator changed the network
    fake.calls.clear()
    assert pods.detach("sb1") == "10.244.3.5"
    assert [(c[0], c[1]) for c in fake.calls] == [("DEL", "loopback"), ("DEL", "portmap"), ("DEL", "bridge")]
    assert pods.detach("sb1") is None and pods.cache.attachments() == []


def test_pod_network_start_releases_gone_sandboxes_and_checks_live_ones(tmp_path):
    fake = FakeExec()
    pods = CNIPodNetwork(conf_dir=network_dir(tmp_path), bin_dirs=["/bin"], cache_dir=str(tmp_path / "cni"),
                         netns_of=lambda sandbox_id: f"/proc/{sandbox_id}/ns/net", exec=fake)
    pods.attach("live", POD, 7)
    pods.attach("gone", POD, 8)
    fake.calls.clear()
    restarted = CNIPodNetwork(conf_dir=network_dir(tmp_path), bin_dirs=["/bin"], cache_dir=str(tmp_path / "cni"),
                              netns_of=lambda sandbox_id: "", exec=fake)
    assert restarted.start(["live"]) == {"live": "10.244.3.5"}
    assert {c[1] for c in fake.calls if c[0] == "DEL"} == {"loopback", "portmap", "bridge"}
    assert [c[0] for c in fake.calls].count("CHECK") == 3
    assert [a.container_id for a in restarted.cache.attachments()] == ["live"]


def test_no_configuration_is_an_error(tmp_path):
    pods = CNIPodNetwork(conf_dir=str(tmp_path / "absent"), bin_dirs=["/bin"], cache_dir=str(tmp_path),
                         netns_of=lambda sandbox_id: "", exec=FakeExec())
    with pytest.raises(ConfigError, match="no networks found"):
        pods.attach("sb1", POD, 7)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "00-bad.conflist").write_text("{")
    (tmp_path / "bad" / "10-good.conf").write_text(json.dumps({"name": "good", "type": "bridge"}))
    assert CNIPodNetwork(conf_dir=str(tmp_path / "bad"), bin_dirs=["/bin"], cache_dir=str(tmp_path),
                         netns_of=lambda sandbox_id: "", exec=FakeExec()).attach("sb1", POD, 7).ip == "10.244.3.5"


def test_default_conflist_written_kept_and_refreshed(tmp_path):
    directory = tmp_path / "net.d"
    args = {"pod_cidr": "10.244.7.0/24", "bridge": "cbr0", "mtu": 1450, "ipam_dir": "/state/cni/networks"}
    assert ensure_default(str(directory), **args) == directory / FILE_NAME
    written = conf.parse((directory / FILE_NAME).read_bytes(), FILE_NAME)
    assert written.plugin_types() == ("bridge", "portmap", "loopback")
    bridge = written.plugins[0]
    assert (bridge["isGateway"], bridge["ipMasq"], bridge["mtu"], bridge["ipam"]["ranges"]) == (
        True, False, 1450, [[{"subnet": "10.244.7.0/24", "gateway": "10.244.7.1"}]])
    assert written.plugins[1]["capabilities"] == {"portMappings": True}
    assert ensure_default(str(directory), **args) is None  # unchanged
    assert ensure_default(str(directory), **{**args, "pod_cidr": "10.244.8.0/24"}) is not None  # ours, refreshed
    (directory / "05-operator.conflist").write_bytes(CHAIN)
    assert ensure_default(str(directory), **{**args, "mtu": 1500}) is None  # an operator's list comes first
    assert default_conflist(**args)["cniVersion"] == "1.0.0"


SAVED = """*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:CNI-HOSTPORT-DNAT - [0:0]
:CNI-HOSTPORT-MASQ - [0:0]
:CNI-HOSTPORT-SETMARK - [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
-A PREROUTING -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ
-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE
COMMIT
"""


def test_portmap_removal_plan():
    plan = removal_plan(SAVED)
    assert plan is not None
    assert plan.jumps == (("PREROUTING", ("-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT")),
                          ("POSTROUTING", ("-m", "comment", "--comment", "CNI portfwd requiring masquerade",
                                           "-j", "CNI-HOSTPORT-MASQ")))
    assert plan.chains == ("CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ")
    assert removal_plan(SAVED.replace(":KUBE-SERVICES", ":CNI-DN-0123 - [0:0]\n:KUBE-SERVICES")) is None
    assert removal_plan("*nat\nCOMMIT\n") == type(plan)(jumps=(), chains=())


@pytest.mark.parametrize(("changes", "message"), [
    pytest.param({"network_plugin": "flannel"}, "networkPlugin", id="unknown-plugin"),
    pytest.param({"cni_conf_dir": ""}, "cniConfDir", id="empty-conf-dir"),
])
def test_kubelet_config_refuses(changes, message):
    with pytest.raises(KubeletConfigError, match=message):
        validate(KubeletConfig(node_name="n1", **changes))
