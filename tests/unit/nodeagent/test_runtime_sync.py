"""RuntimeSyncer against fakes: step order, error collection, back-off reasons, and the kill path (preStop,
grace period, sandbox and network)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from nodeagent.hooks import HookRunner
from nodeagent.network.cni.errors import PluginError
from nodeagent.network.podnet import PodInterface, PodNetworkError
from nodeagent.runtime.backoff import Backoff
from nodeagent.runtime.cri import ContainerConfig, PodSandboxConfig
from nodeagent.runtime.interface import ExecResult, ImagePullError, PulledImage, StartContainerError
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.runtime_sync import RuntimeSyncer, go_duration
from tests.support.fake_objects import FakeObjects

NOW = 1_000_000.0


class FakeRuntime:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.bad_images: set[str] = set()
        self.fail_start: set[str] = set()
        self.exec_exit = 0
        self.stops: dict[str, float] = {}
        self._n = 0
        self._names: dict[str, str] = {}

    def run_sandbox(self, config: PodSandboxConfig) -> str:
        self.calls.append(("run_sandbox", str(config.metadata.attempt)))
        return "sandbox-new"

    def sandbox_pid(self, sandbox_id: str) -> int:
        return 4242

    def stop_sandbox(self, sandbox_id: str) -> None:
        self.calls.append(("stop_sandbox", sandbox_id))

    def remove_sandbox(self, sandbox_id: str) -> None:
        self.calls.append(("remove_sandbox", sandbox_id))

    def image_ref(self, image: str) -> str | None:
        return None  # never present: IfNotPresent pulls

    def pull_image(self, image: str, auth: Any) -> PulledImage:
        self.calls.append(("pull_image", image))
        if image in self.bad_images:
            raise ImagePullError("manifest unknown")
        return PulledImage("sha256:abc", 42)

    def create_container(self, sandbox_id: str, config: ContainerConfig, sandbox_config: PodSandboxConfig) -> str:
        self._n += 1
        cid = f"c{self._n}"
        name = config.metadata.name
        self._names[cid] = name
        self.calls.append(("create", name, str(config.metadata.attempt), sandbox_id))
        assert config.mounts, "managed files (resolv.conf, termination log) are mounted"
        return cid

    def start_container(self, container_id: str) -> None:
        name = self._names[container_id]
        self.calls.append(("start", name))
        if name in self.fail_start:
            raise StartContainerError('exec: "/nope": no such file or directory')

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        self.calls.append(("stop", container_id))
        self.stops[container_id] = grace_seconds

    def remove_container(self, container_id: str) -> None:
        self.calls.append(("remove", container_id))

    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult:
        self.calls.append(("exec", container_id, " ".join(argv)))
        return ExecResult(self.exec_exit, b"hook output")


class FakeNetwork:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, ...]] = []

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid: int | str) -> PodInterface:
        self.calls.append(("attach", sandbox_id, str(pid)))
        if self.fail:
            raise PodNetworkError("netlink says no")
        return PodInterface("sktestveth", "10.244.9.5", 24, "10.244.9.1", "cbr0", "02:00:00:00:00:01")

    def detach(self, sandbox_id: str) -> str | None:
        self.calls.append(("detach", sandbox_id))
        return "10.244.9.5"


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, *, field_path: str | None = None):
        self.reasons.append(reason)


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": f"img-{name}:1", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", **extra}


def make_pod(*containers: dict[str, Any], inits: tuple[dict[str, Any], ...] = (), **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers), "restartPolicy": "Always",
                            "terminationGracePeriodSeconds": 30}
    if inits:
        spec["initContainers"] = list(inits)
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "uid-1", **meta}, "spec": spec}


def ready_sandbox() -> SandboxStatus:
    return SandboxStatus("sb1", SandboxState.READY, attempt=0, ip="10.244.9.5")


def cstatus(cid: str, spec: dict[str, Any], state: ContainerState, *, restart: int = 0, exit_code: int = 0,
            finished: float | None = None) -> ContainerStatus:
    moment = datetime.fromtimestamp(finished, UTC) if finished is not None else None
    return ContainerStatus(cid, spec["name"], state, spec["image"], hash=container_hash(spec), restart_count=restart,
                           exit_code=exit_code, finished_at=moment,
                           created_at=datetime.fromtimestamp(NOW - 100 + restart, UTC))


def pod_status(*containers: ContainerStatus, sandboxes: tuple[SandboxStatus, ...] = ()) -> PodStatus:
    sandboxes = sandboxes or (ready_sandbox(),)
    return PodStatus("uid-1", "p", "ns", sandboxes, containers, ips=("10.244.9.5",))


@pytest.fixture
def parts(tmp_path):
    runtime, network, events = FakeRuntime(), FakeNetwork(), Events()
    clock = [NOW]
    syncer = RuntimeSyncer(runtime, network, FakeObjects(), pods_dir=str(tmp_path), recorder=events,
                       hooks=HookRunner(runtime), backoff=Backoff(initial=10, maximum=300), clock=lambda: clock[0])
    return syncer, runtime, network, events, clock


def test_new_pod_creates_sandbox_network_then_first_init_container_only(parts, tmp_path) -> None:
    syncer, runtime, network, _, _ = parts
    init, app = container("init"), container("app")
    result = syncer.sync_pod(make_pod(app, inits=(init,)), PodStatus("uid-1", "p", "ns"))
    assert network.calls == [("attach", "sandbox-new", "4242")]
    assert runtime.calls == [("run_sandbox", "0"), ("pull_image", "img-init:1"),
                             ("create", "init", "0", "sandbox-new"), ("start", "init")]
    assert [s.action for s in result.steps] == ["CreatePodSandbox", "InitContainer"] and not result.errors
    assert result.started == ("init",)
    hosts = (tmp_path / "uid-1" / "etc-hosts").read_text()
    assert "10.244.9.5\tp" in hosts


def test_after_init_all_app_containers_start_and_errors_do_not_stop_the_rest(parts) -> None:
    syncer, runtime, _, events, _ = parts
    init, bad, good = container("init"), container("bad"), container("good")
    runtime.bad_images.add("img-bad:1")
    status = pod_status(cstatus("i1", init, ContainerState.EXITED, finished=NOW - 5))
    result = syncer.sync_pod(make_pod(bad, good, inits=(init,)), status)
    assert ("create", "good", "0", "sb1") in runtime.calls and ("start", "good") in runtime.calls
    assert result.waiting["bad"][0] == "ErrImagePull" and result.started == ("good",)
    assert [(e.action, e.target, e.reason) for e in result.errors] == [("StartContainer", "bad", "ErrImagePull")]
    assert result.retry_after == 10
    # the pull back-off is running: the next sync does not even try
    again = syncer.sync_pod(make_pod(bad, good, inits=(init,)), status)
    assert again.waiting["bad"] == ("ImagePullBackOff", 'Back-off pulling image "img-bad:1"')
    assert runtime.calls.count(("pull_image", "img-bad:1")) == 1
    assert "Failed" in events.reasons and "Started" in events.reasons


def test_crash_loop_back_off_waits_and_grows(parts) -> None:
    syncer, runtime, _, _, clock = parts
    app = container("app")
    pod = make_pod(app)
    first = syncer.sync_pod(pod, pod_status(cstatus("a0", app, ContainerState.EXITED, exit_code=1, finished=NOW - 1)))
    assert first.started == ("app",)  # the first restart is immediate, as upstream
    assert ("create", "app", "1", "sb1") in runtime.calls
    dead = cstatus("a1", app, ContainerState.EXITED, restart=1, exit_code=1, finished=NOW)
    second = syncer.sync_pod(pod, pod_status(dead))
    assert second.waiting["app"] == ("CrashLoopBackOff",
                                     "back-off 10s restarting failed container=app pod=p_ns(uid-1)")
    assert second.retry_after == pytest.approx(10)
    clock[0] = NOW + 10.5
    assert syncer.sync_pod(pod, pod_status(dead)).started == ("app",)
    dead2 = cstatus("a2", app, ContainerState.EXITED, restart=2, exit_code=1, finished=NOW + 11)
    clock[0] = NOW + 12
    assert syncer.sync_pod(pod, pod_status(dead2)).waiting["app"][1].startswith("back-off 20s ")


def test_run_container_error_then_back_off(parts) -> None:
    syncer, runtime, _, _, _ = parts
    app = container("app", command=["/nope"])
    runtime.fail_start.add("app")
    pod = make_pod(app)
    first = syncer.sync_pod(pod, pod_status())
    assert first.waiting["app"][0] == "RunContainerError"
    created = cstatus("a0", app, ContainerState.UNKNOWN)  # Docker leaves it "created"
    second = syncer.sync_pod(pod, pod_status(created))
    assert second.waiting["app"][0] == "CrashLoopBackOff"
    assert [c for c in runtime.calls if c[0] == "create"] == [("create", "app", "0", "sb1")]


def test_missing_configmap_is_create_container_config_error(parts) -> None:
    syncer, runtime, _, _, _ = parts
    app = container("app", env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}])
    result = syncer.sync_pod(make_pod(app), pod_status())
    assert result.waiting["app"][0] == "CreateContainerConfigError"
    assert not [c for c in runtime.calls if c[0] == "create"]


def test_network_failure_removes_the_sandbox_and_starts_nothing(tmp_path) -> None:
    runtime, network = FakeRuntime(), FakeNetwork(fail=True)
    syncer = RuntimeSyncer(runtime, network, FakeObjects(), pods_dir=str(tmp_path))
    result = syncer.sync_pod(make_pod(container("app")), PodStatus("uid-1", "p", "ns"))
    assert [(e.action, e.reason) for e in result.errors] == [("CreatePodSandbox", "CreatePodSandboxError")]
    assert runtime.calls == [("run_sandbox", "0"), ("stop_sandbox", "sandbox-new"), ("remove_sandbox", "sandbox-new")]


class CNIFailingNetwork(FakeNetwork):
    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid: int | str) -> PodInterface:
        self.calls.append(("attach", sandbox_id, str(pid)))
        raise PluginError("host-local", "ADD", code=11, msg="no IP addresses available", details="range full")


def test_cni_plugin_error_is_a_pod_event_with_its_message_and_the_sandbox_is_retried(tmp_path) -> None:
    runtime, network, messages = FakeRuntime(), CNIFailingNetwork(), []

    class Recorder:
        def event(self, obj, type: str, reason: str, message: str, *, field_path: str | None = None) -> None:
            messages.append((type, reason, message))

    syncer = RuntimeSyncer(runtime, network, FakeObjects(), pods_dir=str(tmp_path), recorder=Recorder())
    for _ in range(2):  # the next sync creates a new sandbox and tries again
        result = syncer.sync_pod(make_pod(container("app")), PodStatus("uid-1", "p", "ns"))
        assert [(e.action, e.reason) for e in result.errors] == [("CreatePodSandbox", "CreatePodSandboxError")]
    assert [c[0] for c in network.calls] == ["attach", "attach"]
    ((kind, reason, message), _) = messages
    assert (kind, reason) == ("Warning", "FailedCreatePodSandBox")
    assert "plugin type='host-local' failed (add): no IP addresses available; range full" in message


def test_failed_post_start_hook_kills_the_container(parts) -> None:
    syncer, runtime, _, events, _ = parts
    runtime.exec_exit = 7
    app = container("app", lifecycle={"postStart": {"exec": {"command": ["false"]}}})
    result = syncer.sync_pod(make_pod(app), pod_status())
    assert result.waiting["app"][0] == "PostStartHookError"
    assert runtime.calls[-2:] == [("exec", "c1", "false"), ("stop", "c1")]
    assert "FailedPostStartHook" in events.reasons


def test_delete_runs_pre_stop_then_stops_within_grace_then_sandbox(parts) -> None:
    syncer, runtime, network, _, _ = parts
    app = container("app", lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "echo bye"]}}})
    other = container("other")
    pod = make_pod(app, other, deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=5)
    status = pod_status(cstatus("a1", app, ContainerState.RUNNING), cstatus("o1", other, ContainerState.RUNNING))
    result = syncer.sync_pod(pod, status)
    assert result.actions.kill_pod and not result.errors
    assert runtime.calls.index(("exec", "a1", "sh -c echo bye")) < runtime.calls.index(("stop", "a1"))
    assert 4 < runtime.stops["a1"] <= 5 and runtime.stops["o1"] == pytest.approx(5, abs=0.5)
    assert runtime.calls[-1] == ("stop_sandbox", "sb1") and network.calls == [("detach", "sb1")]
    assert not [c for c in runtime.calls if c[0].startswith("remove")]  # removal waits for the pod to go


def test_kill_pod_remove_tears_everything_down(parts, tmp_path) -> None:
    syncer, runtime, _, _, _ = parts
    app = container("app")
    (tmp_path / "uid-1" / "volumes").mkdir(parents=True)
    status = pod_status(cstatus("a1", app, ContainerState.EXITED, finished=NOW),
                        sandboxes=(SandboxStatus("sb1", SandboxState.NOTREADY),))
    assert not [s for s in syncer.kill_pod(make_pod(app), status, grace=1, remove=True) if not s.ok]
    assert runtime.calls == [("remove", "a1"), ("remove_sandbox", "sb1")]
    assert not (tmp_path / "uid-1").exists()


def test_short_grace_still_gets_the_minimum(parts) -> None:
    syncer, runtime, _, _, _ = parts
    app = container("app")
    syncer.kill_pod(make_pod(app), pod_status(cstatus("a1", app, ContainerState.RUNNING)), grace=1)
    assert runtime.stops["a1"] == 2  # upstream's minimum grace of 2 s
    pod = make_pod(app)
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    syncer.kill_pod(pod, pod_status(cstatus("a2", app, ContainerState.RUNNING)))
    assert runtime.stops["a2"] == 2


@pytest.mark.parametrize("seconds, text", [(1, "1s"), (10, "10s"), (80, "1m20s"), (300, "5m0s"), (3600, "1h0m0s")])
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_new_sandbox_purges_only_init_containers(parts) -> None:
    syncer, runtime, _, _, _ = parts
    init, app = container("init"), container("app")
    dead_sandbox = SandboxStatus("sb1", SandboxState.NOTREADY, attempt=0)
    status = pod_status(cstatus("i1", init, ContainerState.EXITED, finished=NOW - 9),
                        cstatus("a1", app, ContainerState.EXITED, restart=3, exit_code=1, finished=NOW - 8),
                        sandboxes=(dead_sandbox,))
    result = syncer.sync_pod(make_pod(app, inits=(init,)), status)
    assert result.actions.create_sandbox and result.started == ("init",)
    removed = [c[1] for c in runtime.calls if c[0] in ("remove", "remove_sandbox")]
    assert removed == ["i1", "sb1"]  # the app's dead instance keeps its restart count for the next attempt
    assert ("run_sandbox", "1") in runtime.calls


def test_liveness_failure_kills_with_the_probes_grace_and_restarts(parts) -> None:
    syncer, runtime, _, events, _ = parts
    app = container("app", livenessProbe={"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 3})
    other = container("other")
    status = pod_status(cstatus("a1", app, ContainerState.RUNNING), cstatus("o1", other, ContainerState.RUNNING))
    result = syncer.sync_pod(make_pod(app, other), status, liveness_failed=frozenset({"a1"}))
    assert runtime.stops == {"a1": pytest.approx(3.0, abs=0.5)}  # the probe's grace, not the pod's 30 s
    assert ("create", "app", "1", "sb1") in runtime.calls and result.started == ("app",)
    assert events.reasons[:1] == ["Killing"]
    status = pod_status(cstatus("a1", app, ContainerState.RUNNING))
    syncer.sync_pod(make_pod(app), status, startup_failed=frozenset({"a1"}))
    assert runtime.stops["a1"] == pytest.approx(30.0, abs=0.5)  # no startup probe grace here: the pod's


def test_hostports_open_with_the_sandbox_and_close_with_its_network(tmp_path) -> None:
    from nodeagent.network.hostport_manager import HostportManager
    from tests.support.fake_iptables import FakeIptables

    runtime, network, events, fake = FakeRuntime(), FakeNetwork(), Events(), FakeIptables()
    sandbox_ids = iter(["sb-first", "sb-second"])
    runtime.run_sandbox = lambda config: next(sandbox_ids)
    hostports = HostportManager(fake, None)
    syncer = RuntimeSyncer(runtime, network, FakeObjects(), pods_dir=str(tmp_path), recorder=events,
                           hostports=hostports)
    app = container("app", ports=[{"containerPort": 80, "hostPort": 18080}])
    result = syncer.sync_pod(make_pod(app), PodStatus("uid-1", "p", "ns"))
    assert not result.errors and set(hostports.entries()) == {"sb-first"}
    assert hostports.entries()["sb-first"].ip == "10.244.9.5"
    # a second pod wanting the same port: its sandbox fails and is removed, with upstream's event
    runtime.calls.clear()
    other = make_pod(container("app", ports=[{"containerPort": 81, "hostPort": 18080}]), uid="uid-2", name="q")
    clash = syncer.sync_pod(other, PodStatus("uid-2", "q", "ns"))
    assert [(e.action, e.reason) for e in clash.errors] == [("CreatePodSandbox", "CreatePodSandboxError")]
    assert "cannot open hostport 18080/TCP for pod q_ns: already used by pod p_ns" in clash.errors[0].message
    assert "FailedCreatePodSandBox" in events.reasons
    assert runtime.calls[-2:] == [("stop_sandbox", "sb-second"), ("remove_sandbox", "sb-second")]
    assert ("detach", "sb-second") in network.calls and set(hostports.entries()) == {"sb-first"}
    # killing the first pod (its sandbox is sb1 in pod_status) closes its ports
    hostports.remove("sb-first")
    hostports.add("sb1", make_pod(app), "10.244.9.5")
    syncer.kill_pod(make_pod(app), pod_status(cstatus("a1", app, ContainerState.RUNNING)), grace=1)
    assert hostports.entries() == {} and "KUBE-HOSTPORTS" not in fake.chains("nat")


def test_service_env_reaches_the_container_and_not_synced_waits(parts) -> None:
    from nodeagent.runtime.service_env import ServicesNotSynced

    syncer, runtime, _, _, _ = parts
    seen: list[dict[str, str]] = []
    original = runtime.create_container

    def create(sandbox_id, config, sandbox_config):
        seen.append(dict(config.env))
        return original(sandbox_id, config, sandbox_config)

    runtime.create_container = create
    syncer.service_env = lambda pod: {"WEB_SERVICE_HOST": "10.96.0.7"}
    syncer.sync_pod(make_pod(container("app", env=[{"name": "A", "value": "1"}])), pod_status())
    assert seen[-1]["WEB_SERVICE_HOST"] == "10.96.0.7" and seen[-1]["A"] == "1"

    def not_synced(pod):
        raise ServicesNotSynced()

    syncer.service_env = not_synced
    result = syncer.sync_pod(make_pod(container("app")), pod_status())
    assert result.waiting["app"] == ("CreateContainerConfigError",
                                      "services have not yet been read at least once, cannot construct envvars")


class CountingTokens:
    """The token manager's answer changes with each call, as a refreshed token does."""

    def __init__(self) -> None:
        self.calls = 0

    def get(self, pod: Mapping[str, Any], source: Mapping[str, Any]) -> str:
        self.calls += 1
        return f"token-{self.calls}"

    def forget(self, pod_uid: str) -> None:
        pass


def test_a_running_pods_projected_token_is_rewritten_on_sync_without_touching_its_pod_files(tmp_path) -> None:
    runtime, network, events, tokens = FakeRuntime(), FakeNetwork(), Events(), CountingTokens()
    syncer = RuntimeSyncer(runtime, network, FakeObjects(), pods_dir=str(tmp_path), recorder=events,
                           hooks=HookRunner(runtime), tokens=tokens)  # type: ignore[arg-type]
    app = container("app")
    pod = make_pod(app)
    pod["spec"]["volumes"] = [{"name": "kube-api-access-x", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]
    token_file = tmp_path / "uid-1" / "volumes" / "kubernetes.io~projected" / "kube-api-access-x" / "token"
    syncer.sync_pod(pod, PodStatus("uid-1", "p", "ns"))
    assert token_file.read_text() == "token-1"
    hosts = tmp_path / "uid-1" / "etc-hosts"
    hosts.write_text("as the container mounted it")
    calls = len(runtime.calls)
    result = syncer.sync_pod(pod, pod_status(cstatus("c1", app, ContainerState.RUNNING)))
    assert token_file.read_text() == "token-2" and not result.errors and runtime.calls[calls:] == []
    assert hosts.read_text() == "as the container mounted it"
