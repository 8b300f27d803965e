"""The KubeSchedulerConfiguration file (control/scheduler/config.py): upstream's field names are read, the
profiles it names are built, and every mistake is refused with the field it is in."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from control.scheduler.config import load, validate
from control.scheduler.profile import build_profiles
from control.util.componentconfig import ConfigError

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _doc(**fields: Any) -> dict[str, Any]:
    return {**HEAD, **fields}


def test_a_full_file_is_read_with_upstream_field_names(tmp_path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump(_doc(
        percentageOfNodesToScore=40, podInitialBackoffSeconds=2, podMaxBackoffSeconds=20, parallelism=16,
        leaderElection={"leaderElect": True, "resourceName": "kube-scheduler"}, clientConnection={"qps": 50},
        profiles=[
            {"schedulerName": "default-scheduler"},
            {"schedulerName": "bin-packing", "percentageOfNodesToScore": 100,
             "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 7}]},
                         "queueSort": {"enabled": [{"name": "PrioritySort"}]}},
             "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                 "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}}]},
        ])))
    config = load(str(path))
    assert config["podInitialBackoffSeconds"] == 2 and config["podMaxBackoffSeconds"] == 20
    profiles = build_profiles(config)
    assert set(profiles) == {"default-scheduler", "bin-packing"}
    assert profiles["default-scheduler"].percentage_of_nodes_to_score == 40
    packing = profiles["bin-packing"]
    assert packing.percentage_of_nodes_to_score == 100
    assert [(plugin.name, weight) for plugin, weight in packing.score] == [("NodeResourcesFit", 7)]
    assert packing.score[0][0].strategy == "MostAllocated"


def test_defaults_when_fields_are_left_out() -> None:
    config = validate(_doc())
    assert config["podInitialBackoffSeconds"] == 1 and config["podMaxBackoffSeconds"] == 10
    assert config["percentageOfNodesToScore"] is None
    assert list(build_profiles(config)) == ["default-scheduler"]


@pytest.mark.parametrize(("document", "message"), [
    pytest.param({"kind": "KubeSchedulerConfiguration"}, r"^apiVersion: Unsupported value: None", id="no-apiVersion"),
    pytest.param({**HEAD, "apiVersion": "kubescheduler.config.k8s.io/v1beta2"}, r"^apiVersion: Unsupported value",
                 id="old-apiVersion"),
    pytest.param({**HEAD, "kind": "KubeletConfiguration"}, r"^kind: Unsupported value", id="kind"),
    pytest.param(_doc(percentageOfNodeToScore=10), r"^percentageOfNodeToScore: unknown field", id="typo"),
    pytest.param(_doc(percentageOfNodesToScore=110),
                 r"^percentageOfNodesToScore: Invalid value: 110: not in valid range \[0-100\]", id="percentage"),
    pytest.param(_doc(percentageOfNodesToScore="ten"), r"^percentageOfNodesToScore: Invalid value: 'ten'",
                 id="percentage-type"),
    pytest.param(_doc(podInitialBackoffSeconds=0), r"^podInitialBackoffSeconds: Invalid value: 0: must be greater "
                 r"than 0", id="initial-backoff"),
    pytest.param(_doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
                 r"^podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
                 id="max-backoff"),
    pytest.param(_doc(extenders=[{"urlPrefix": "http://x"}]), r"^extenders: Forbidden", id="extenders"),
    pytest.param(_doc(profiles=[{"plugins": {}}]), r"^profiles\[0\].schedulerName: Required value", id="no-name"),
    pytest.param(_doc(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
                 r"^profiles\[1\].schedulerName: Duplicate value: 'a'", id="duplicate-name"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "percentageOfNodesToScore": -1}]),
                 r"^profiles\[0\].percentageOfNodesToScore: Invalid value: -1", id="profile-percentage"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugin": {}}]), r"^profiles\[0\].plugin: unknown field",
                 id="profile-typo"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"filters": {}}}]),
                 r"^profiles\[0\].plugins.filters: unknown field", id="point-typo"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"score": {"enabled": [{"weight": 2}]}}}]),
                 r"^profiles\[0\].plugins.score.enabled\[0\].name: Required value", id="plugin-no-name"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"score": {"enabled": [
                     {"name": "ImageLocality", "weight": "x"}]}}}]),
                 r"^profiles\[0\].plugins.score.enabled\[0\].weight: Invalid value: 'x'", id="weight-type"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"score": {"enabled": [{"name": "Nope"}]}}}]),
                 r"^profiles\[0\]: plugin 'Nope' is not implemented", id="unknown-plugin"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"score": {"enabled": [{"name": "NodeName"}]}}}]),
                 r"^profiles\[0\]: plugin 'NodeName' does not implement score", id="wrong-point"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "plugins": {"permit": {"enabled": [{"name": "X"}]}}}]),
                 r"^profiles\[0\].plugins.permit.enabled\[0\].name: Unsupported value: 'X'", id="built-in-point"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "pluginConfig": [
                     {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Random"}}}]}]),
                 r"^profiles\[0\].pluginConfig\[0\].args.scoringStrategy.type: Unsupported value: 'Random'",
                 id="plugin-args"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "pluginConfig": [
                     {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                         "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}}}]}]),
                 r"^profiles\[0\].pluginConfig\[0\].args.scoringStrategy.requestedToCapacityRatio.shape: Required",
                 id="shape"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "pluginConfig": [
                     {"name": "ImageLocality"}, {"name": "ImageLocality"}]}]),
                 r"^profiles\[0\].pluginConfig\[1\].name: Duplicate value: 'ImageLocality'", id="config-twice"),
    pytest.param(_doc(profiles=[{"schedulerName": "a", "pluginConfig": [{"name": "Nope", "args": {}}]}]),
                 r"^profiles\[0\].pluginConfig\[0\].name: Invalid value: 'Nope': no such plugin", id="config-unknown"),
])
def test_mistakes_are_refused_naming_the_field(document, message) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(document)


def test_a_file_that_cannot_be_read_names_the_file(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match=f"{path} is not valid YAML"):
        load(str(path))
    with pytest.raises(ConfigError, match="cannot read"):
        load(str(tmp_path / "missing.yaml"))
    path.write_text(yaml.safe_dump(_doc(podMaxBackoffSeconds=0)))
    with pytest.raises(ConfigError, match=f"^{path}: podMaxBackoffSeconds"):
        load(str(path))
