"""The kubelet's config file: upstream KubeletConfiguration names, Go durations, flags on top, and clear
errors for what cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.util.componentconfig import parse_duration
from nodeagent.config import ConfigError, KubeletConfig, from_document, load


@pytest.mark.parametrize("text, seconds", [
    pytest.param("10s", 10.0, id="seconds"),
    pytest.param("1m30s", 90.0, id="minutes-and-seconds"),
    pytest.param("500ms", 0.5, id="milliseconds"),
    pytest.param("1h", 3600.0, id="hours"),
    pytest.param("1.5s", 1.5, id="fraction"),
    pytest.param("0", 0.0, id="zero"),
    pytest.param(7, 7.0, id="bare-number"),
])
def test_durations_as_go_writes_them(text: object, seconds: float) -> None:
    assert parse_duration(text, name="x") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten", "10x", "-1s", True, None, "1s junk"])
def test_bad_durations_name_the_field(text: object) -> None:
    with pytest.raises(ConfigError, match="syncFrequency"):
        parse_duration(text, name="syncFrequency")


def test_a_config_file_then_flags_on_top(tmp_path: Path) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                    "port: 10260\nsyncFrequency: 30s\nstaticPodPath: /etc/manifests\npodCIDR: 10.244.7.0/24\n"
                    "clusterDNS: [10.96.0.10]\nnodeLabels: {zone: a}\ncrashLoopBackOffInitial: 1s\n")
    config = load(str(path), overrides={"node_name": "worker-1", "port": None})
    assert (config.port, config.sync_frequency, config.static_pod_path) == (10260, 30.0, "/etc/manifests")
    assert (config.pod_cidr, config.cluster_dns, config.labels) == ("10.244.7.0/24", ("10.96.0.10",), {"zone": "a"})
    assert config.node_name == "worker-1"  # the flag wins; a None flag leaves the file's value
    assert config.crash_loop_backoff_initial == 1.0


def test_defaults_without_a_file() -> None:
    config = load(None)
    assert config == KubeletConfig(node_name=config.node_name)
    assert (config.port, config.pod_bridge, config.node_status_update_frequency) == (10250, "cbr0", 10.0)


@pytest.mark.parametrize("document, message", [
    pytest.param({"prot": 1}, "unknown field 'prot'", id="typo"),
    pytest.param({"kind": "Pod"}, "expected kind KubeletConfiguration", id="wrong-kind"),
    pytest.param({"port": "10250"}, "port: expected an integer", id="port-string"),
    pytest.param({"port": 70000}, "port: 70000 is out of range", id="port-range"),
    pytest.param({"podCIDR": "10.244.0.0/33"}, "podCIDR", id="bad-cidr"),
    pytest.param({"podCIDR": "10.244.0.0/31"}, "at least 4 addresses", id="tiny-cidr"),
    pytest.param({"nodeName": "Bad_Name"}, "nodeName", id="bad-node-name"),
    pytest.param({"podBridge": "a-very-long-bridge-name"}, "podBridge", id="long-bridge"),
    pytest.param({"clusterDNS": "10.96.0.10"}, "clusterDNS: expected a list", id="dns-not-list"),
    pytest.param({"crashLoopBackOffInitial": "10m", "crashLoopBackOffMax": "1m"}, "crashLoopBackOff", id="backoff"),
    pytest.param({"podNetwork": "flannel"}, "podNetwork: 'flannel' is not one of vxlan, host-gw, none",
                 id="pod-network"),
    pytest.param({"vxlanDevice": "a-very-long-device-name"}, "vxlanDevice", id="long-vxlan-device"),
])
def test_bad_documents_are_refused_with_the_field_named(document: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_document(document)


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("port: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(str(bad))


def test_garbage_collection_fields_and_upstream_defaults() -> None:
    defaults = KubeletConfig()
    assert (defaults.image_gc_high_threshold_percent, defaults.image_gc_low_threshold_percent,
            defaults.image_minimum_gc_age, defaults.image_gc_period) == (85, 80, 120.0, 300.0)
    assert (defaults.container_gc_period, defaults.minimum_container_ttl_duration,
            defaults.maximum_dead_containers_per_container, defaults.maximum_dead_containers) == (60.0, 0.0, 1, -1)
    config = from_document({"imageGCHighThresholdPercent": 90, "imageGCLowThresholdPercent": 70,
                            "imageMinimumGCAge": "5m", "imageGCPeriod": "30s", "containerGCPeriod": "10s",
                            "minimumContainerTTLDuration": "1m", "maximumDeadContainersPerContainer": 2,
                            "maximumDeadContainers": 100})
    assert (config.image_gc_high_threshold_percent, config.image_gc_low_threshold_percent,
            config.image_minimum_gc_age, config.image_gc_period, config.container_gc_period,
            config.minimum_container_ttl_duration, config.maximum_dead_containers_per_container,
            config.maximum_dead_containers) == (90, 70, 300.0, 30.0, 10.0, 60.0, 2, 100)


@pytest.mark.parametrize("document, message", [
    pytest.param({"imageGCHighThresholdPercent": 101}, "imageGCHighThresholdPercent: 101 must be between 0 and 100",
                 id="high-above-100"),
    pytest.param({"imageGCLowThresholdPercent": -1}, "imageGCLowThresholdPercent: -1 must be between 0 and 100",
                 id="low-negative"),
    pytest.param({"imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 70},
                 r"imageGCLowThresholdPercent \(70\) must be less than imageGCHighThresholdPercent \(70\)",
                 id="low-not-below-high"),
    pytest.param({"containerGCPeriod": "0s"}, "containerGCPeriod: must be > 0", id="container-gc-period-zero"),
])
def test_bad_garbage_collection_settings_name_the_field(document: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_document(document)


def test_container_log_rotation_fields() -> None:
    defaults = KubeletConfig()
    assert (defaults.container_log_max_size, defaults.container_log_max_files) == (10 * 1024 * 1024, 5)
    config = from_document({"containerLogMaxSize": "1Mi", "containerLogMaxFiles": 3})
    assert (config.container_log_max_size, config.container_log_max_files) == (1024 * 1024, 3)
    assert from_document({"containerLogMaxSize": "500k"}).container_log_max_size == 500_000


@pytest.mark.parametrize("document, message", [
    pytest.param({"containerLogMaxFiles": 1}, "containerLogMaxFiles: 1 must be greater than 1", id="one-file"),
    pytest.param({"containerLogMaxSize": "ten"}, "containerLogMaxSize: quantities must match", id="not-quantity"),
    pytest.param({"containerLogMaxSize": "0"}, "containerLogMaxSize: 0 must be greater than 0", id="zero-size"),
    pytest.param({"containerLogMaxSize": True}, "containerLogMaxSize: expected a quantity", id="bool"),
])
def test_bad_log_rotation_settings_name_the_field(document: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_document(document)
