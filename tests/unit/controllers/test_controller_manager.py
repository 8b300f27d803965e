"""control/controllers/manager.py: enabled controllers run on their own threads until stop, disabled ones
never start, unknown names are refused; `slimkube server --disable` checks names before starting."""

from __future__ import annotations

import threading

import pytest
from click.testing import CliRunner

from control.apiserver.authorization.bootstrappolicy import controller_role_bindings
from control.client.kubeconfig import ClientConfig
from control.controllers.manager import (
    CONTROLLER_ACCOUNTS,
    CONTROLLERS,
    ROOT_CREDENTIAL_CONTROLLERS,
    ControllerContext,
    ControllerManager,
    ControllerManagerConfiguration,
)
from slimkube.cli import main
from tests.support.polling import wait_until

CONFIG = ClientConfig(server="https://127.0.0.1:1", token="t")


def test_runs_enabled_controllers_until_stop_and_skips_disabled():
    ran: dict[str, threading.Event] = {"a": threading.Event(), "b": threading.Event()}
    stopped: list[str] = []

    def init(name: str):
        def start(ctx: ControllerContext):
            assert ctx.informers is not None and ctx.client is not None

            def run(stop: threading.Event) -> None:
                ran[name].set()
                stop.wait()
                stopped.append(name)
            return run
        return start

    manager = ControllerManager(CONFIG, disabled={"b"}, controllers={"a": init("a"), "b": init("b")})
    assert manager.enabled == ["a"]
    manager.start()
    assert ran["a"].wait(5)
    manager.stop()
    assert stopped == ["a"] and not ran["b"].is_set()


def test_each_controller_writes_as_its_service_account_and_informers_share_the_managers_credential():
    seen: dict[str, ControllerContext] = {}

    def init(name: str):
        def start(ctx: ControllerContext):
            seen[name] = ctx
            return lambda stop: stop.wait()
        return start

    asked: list[str] = []

    def credentials(account: str) -> ClientConfig:
        asked.append(account)
        return ClientConfig(server="https://127.0.0.1:1", token=f"token-of-{account}")

    manager = ControllerManager(CONFIG, controllers={"deployment": init("deployment"), "custom": init("custom")},
                                controller_credentials=credentials)
    manager.start()
    manager.stop()
    assert asked == ["deployment-controller"]
    assert seen["deployment"].client.config.token == "token-of-deployment-controller"
    assert seen["custom"].client.config == CONFIG  # no account of its own: the manager's credential
    assert seen["deployment"].informers is seen["custom"].informers


def test_every_controller_has_an_account_the_bootstrap_policy_binds():
    bound = {subject["name"] for binding in controller_role_bindings() for subject in binding["subjects"]}
    assert set(CONTROLLERS) - ROOT_CREDENTIAL_CONTROLLERS <= set(CONTROLLER_ACCOUNTS)
    assert not ROOT_CREDENTIAL_CONTROLLERS & set(CONTROLLER_ACCOUNTS)
    assert set(CONTROLLER_ACCOUNTS.values()) - bound == set()


def test_unknown_controller_names_are_refused():
    with pytest.raises(ValueError, match="nope"):
        ControllerManager(CONFIG, disabled={"nope"})
    assert "endpoint" in CONTROLLERS


def test_server_refuses_unknown_disable_names(tmp_path):
    result = CliRunner().invoke(main, ["server", "--data-dir", str(tmp_path), "--disable", "endpoint,bogus"])
    assert result.exit_code == 2
    assert "bogus" in result.output


def test_server_refuses_a_bad_advertise_address(tmp_path):
    result = CliRunner().invoke(main, ["server", "--data-dir", str(tmp_path), "--advertise-address", "not-an-ip"])
    assert result.exit_code == 2


def test_node_lifecycle_controllers_are_registered_and_get_the_manager_settings():
    assert {"nodelifecycle", "taint-eviction-controller"} <= set(CONTROLLERS)
    seen: list[ControllerManagerConfiguration] = []

    def start(ctx: ControllerContext):
        seen.append(ctx.config)
        return lambda stop: None

    settings = ControllerManagerConfiguration(node_monitor_grace_period=10.0)
    manager = ControllerManager(CONFIG, controllers={"a": start}, settings=settings)
    manager.start()
    manager.stop()
    assert seen == [settings]
    assert ControllerManagerConfiguration().node_monitor_grace_period == 40.0  # upstream's default


@pytest.mark.parametrize("value", ["soon", "-5s", "0s"])
def test_server_and_up_refuse_a_bad_node_monitor_grace_period(tmp_path, value: str):
    for command in ("server", "up"):
        result = CliRunner().invoke(main, [command, "--data-dir", str(tmp_path), "--node-monitor-grace-period",
                                           value])
        assert result.exit_code == 2, (command, result.output)
        assert "--node-monitor-grace-period" in result.output


def test_quota_and_disruption_controllers_are_registered_with_upstream_names_and_defaults():
    assert {"resourcequota", "disruption"} <= set(CONTROLLERS)


def test_replica_controllers_are_registered_with_upstream_names():
    assert {"replicaset", "replicationcontroller"} <= set(CONTROLLERS)
    assert ControllerManagerConfiguration().resource_quota_sync_period == 300.0  # upstream's 5m


@pytest.mark.parametrize("value", ["often", "-1m", "0s"])
def test_server_and_up_refuse_a_bad_resource_quota_sync_period(tmp_path, value: str):
    for command in ("server", "up"):
        result = CliRunner().invoke(main, [command, "--data-dir", str(tmp_path), "--resource-quota-sync-period",
                                           value])
        assert result.exit_code == 2, (command, result.output)
        assert "--resource-quota-sync-period" in result.output


def test_health_names_a_controller_that_stopped():
    """What `kubectl get cs` shows for the controller manager (slimkube/controlplane.py registers it)."""
    def forever(ctx: ControllerContext):
        return lambda stop: stop.wait()

    def crashes(ctx: ControllerContext):
        def run(stop):
            raise RuntimeError("boom")
        return run

    manager = ControllerManager(CONFIG, controllers={"steady": forever, "flaky": crashes})
    manager.start()
    try:
        assert wait_until(lambda: manager.health() == "controllers stopped: flaky", timeout=5)
    finally:
        manager.stop()
    assert manager.health() == "the controller manager is stopping"
