"""`slimkube up` / Ctrl-C / `up` again / `down` as a user runs them, against the real
dockerd, kernel and iptables: `python -m slimkube.cli up` as a child process with a kubelet config in its
data dir (DATA_DIR/kubelet.yaml) naming a test node, bridge, veth prefix, pod CIDR and chains, so nothing
collides with a real cluster on this host.

A pod bound to the node runs; SIGINT ends `up` with exit 0 and leaves the pod's containers running; the
next `up` adopts them (same container ids, restartCount unchanged); `down` removes containers, bridge and
chains. Teardown removes everything labelled with the test's node name, the bridge and the chains even
when the test fails (the containers carry no `slimkube.test` label: the CLI has no way to add one).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from control.client.rest import RESTClient
from control.util.iptables import detect
from nodeagent.config import default_pod_cidr
from nodeagent.network import rules
from nodeagent.runtime import labels
from proxy.app import run_cleanup
from tests.support.apiserver import free_port
from tests.support.hostnet import free_pod_cidr
from tests.support.substrate import delete_link

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0
STOP_TIMEOUT = 45.0


class UpProcess:
    """`slimkube up` as a child process; its output is collected line by line."""

    def __init__(self, data_dir: str, port: int, *extra: str, bind_address: str = "127.0.0.1") -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slimkube.cli", "up", "--data-dir", data_dir, "--bind-address", bind_address,
             "--port", str(port), *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, prefix: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [line for line in self.lines if line.startswith(prefix)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no {prefix!r} line (exit {self.proc.poll()}):\n" + "\n".join(self.lines))
                self._cond.wait(min(left, 0.5))

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            stacks = self.thread_stacks()
            raise AssertionError("`up` did not stop on SIGINT:\n" + "\n".join(self.lines) +
                                 "\n--- its threads' stacks ---\n" + stacks) from None

    def thread_stacks(self) -> str:
        """Where every thread of the running `up` is: py-spy's dump (native frames too) when installed, else
        the product's own SIGUSR1 dump (faulthandler; slimkube/cli.py) read back from the output."""
        py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
        if py_spy is not None:
            dump = subprocess.run([py_spy, "dump", "--pid", str(self.proc.pid)], capture_output=True, text=True,
                                  timeout=60, check=False)
            if dump.returncode == 0:
                return dump.stdout
        with self._cond:
            seen = len(self.lines)
        self.proc.send_signal(signal.SIGUSR1)
        time.sleep(3)  # faulthandler writes at once; the reader thread collects it
        with self._cond:
            return "\n".join(self.lines[seen:]) or "(no stack dump came)"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # by PID: the child this test started
            self.proc.wait(timeout=10)


def node_containers(docker_api, node: str) -> dict[str, dict]:
    return {c["Id"]: c for c in docker_api.containers(all=True, filters={"label": f"{labels.NODE}={node}"})}


def wait_running(client: RESTClient, path: str, timeout: float = START_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    pod: dict = {}
    while time.monotonic() < deadline:
        pod = client.get(path)
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if pod.get("status", {}).get("phase") == "Running" and statuses and all(s.get("ready") for s in statuses):
            return pod
        time.sleep(0.3)
    raise AssertionError(f"pod not Running within {timeout} s: {pod.get('status')}")


def run_sleeper(client: RESTClient, node: str, name: str) -> dict:
    """Create a one-container pod bound to `node` and return it once Running."""
    client.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [
            {"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
             "command": ["sleep", "3600"]}]}})
    return wait_running(client, f"/api/v1/namespaces/default/pods/{name}")


def assert_adopted(client: RESTClient, before: dict, docker_api, node: str, containers: dict) -> None:
    """After a restart, a sync or two later: the same containers, restartCount and IP (nothing restarted)."""
    time.sleep(3)
    adopted = wait_running(client, f"/api/v1/namespaces/default/pods/{before['metadata']['name']}")
    old, new = before["status"]["containerStatuses"][0], adopted["status"]["containerStatuses"][0]
    assert (new["containerID"], new["restartCount"]) == (old["containerID"], old["restartCount"])
    assert adopted["status"]["podIP"] == before["status"]["podIP"]
    assert set(node_containers(docker_api, node)) == set(containers)


def write_up_config(data_dir: Path, run_id: str, *, pod_cidr: str | None, cluster_cidr: str = "10.244.0.0/16",
                    pod_network: str = "none", network_plugin: str = "builtin",
                    ) -> tuple[dict[str, Any], rules.PodRulesConfig]:
    """DIR/kubelet.yaml naming this test's node, bridge, chains, VXLAN device (`pod_network` none by
    default: no backend device in the host's namespace unless the test wants one, on its own node bridge)
    and pod CIDR (None: the node IPAM controller's, out of `cluster_cidr`), the `network_plugin` (with cni,
    its configuration directory DIR/cni/net.d), and DIR/kube-proxy.yaml with its
    own free ports (the host's conntrack settings left as they are); the kubelet settings and the pod rules
    they make, for the test's cleanup."""
    settings = {
        "nodeName": f"sktest-{run_id}", "podBridge": f"sktest{run_id}", "vethPrefix": "skt",
        "clusterCIDR": cluster_cidr, "address": "127.0.0.1", "port": free_port(),
        "podForwardChain": f"KUBE-SKTEST-{run_id}-FWD", "podMasqueradeChain": f"KUBE-SKTEST-{run_id}-MASQ",
        "nodeStatusUpdateFrequency": "2s", "podNetwork": pod_network, "vxlanDevice": f"skvx{run_id[:8]}",
        **({"podCIDR": pod_cidr} if pod_cidr else {}),
        **({"networkPlugin": "cni", "cniConfDir": str(data_dir / "cni" / "net.d")} if network_plugin == "cni" else {}),
    }
    (data_dir / "kubelet.yaml").write_text(yaml.safe_dump(settings))
    (data_dir / "kube-proxy.yaml").write_text(yaml.safe_dump({
        "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}}))
    pod_rules = rules.PodRulesConfig(bridge=settings["podBridge"], pod_cidr=pod_cidr or default_pod_cidr(cluster_cidr),
                                     cluster_cidr=settings["clusterCIDR"], forward_chain=settings["podForwardChain"],
                                     masq_chain=settings["podMasqueradeChain"])
    return settings, pod_rules


@pytest.fixture
def node(root, docker_api, images, iptables, run_id: str, tmp_path: Path, cleanup: Callable) -> dict:
    """A data dir whose kubelet.yaml names this test's node, bridge, pod CIDR and chains; all removed at
    teardown."""
    data_dir = tmp_path / "up"
    data_dir.mkdir()
    settings, pod_rules = write_up_config(data_dir, run_id, pod_cidr=free_pod_cidr())

    def remove_containers() -> None:
        for cid in node_containers(docker_api, settings["nodeName"]):
            docker_api.remove_container(cid, force=True, v=True)

    cleanup(lambda: rules.remove(detect(), pod_rules))
    cleanup(lambda: run_cleanup(detect()))  # the proxy's chains, when a test ends without `down`
    cleanup(lambda: delete_link(settings["podBridge"]))
    cleanup(remove_containers)
    return {"data_dir": str(data_dir), **settings}


def test_up_ctrl_c_up_adopts_then_down_removes_everything(node: dict, docker_api, cleanup: Callable) -> None:
    data_dir, name = node["data_dir"], node["nodeName"]
    port = free_port()
    first = UpProcess(data_dir, port)
    cleanup(first.kill)
    kubeconfig = first.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    assert kubeconfig == os.path.join(data_dir, "admin.kubeconfig")
    assert first.wait_for("[up] API server ready at https://127.0.0.1:")
    assert first.wait_for(f"[up] node {name} registered")
    assert first.wait_for("[up] kube-proxy running")
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        assert client.get(f"/api/v1/nodes/{name}")["spec"].get("podCIDR") == node["podCIDR"]
        before = run_sleeper(client, name, "sleeper")
    containers = node_containers(docker_api, name)
    assert len(containers) == 2 and all(c["State"] == "running" for c in containers.values())

    assert first.interrupt() == 0, "\n".join(first.lines)
    assert any("pods keep running" in line for line in first.lines)
    after_stop = node_containers(docker_api, name)
    assert set(after_stop) == set(containers) and all(c["State"] == "running" for c in after_stop.values())

    second = UpProcess(data_dir, port)
    cleanup(second.kill)
    second.wait_for("[up] kubeconfig: ")
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        assert_adopted(client, before, docker_api, name, containers)

    refused = subprocess.run([sys.executable, "-m", "slimkube.cli", "down", "--data-dir", data_dir], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "stop it before `down`" in refused.stderr
    assert second.interrupt() == 0, "\n".join(second.lines)

    down = subprocess.run([sys.executable, "-m", "slimkube.cli", "down", "--data-dir", data_dir], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert "removed 2 containers" in down.stderr and "kept the data store" in down.stderr
    assert node_containers(docker_api, name) == {}
    assert subprocess.run(["ip", "link", "show", node["podBridge"]], capture_output=True).returncode != 0
    iptables = detect()
    for table, chain in (("filter", node["podForwardChain"]), ("nat", node["podMasqueradeChain"])):
        assert not iptables.has_chain(table, chain)
    assert "proxy rules removed" in down.stderr
    assert not iptables.has_chain("nat", "KUBE-SERVICES")
    assert os.path.exists(os.path.join(data_dir, "state.db"))


def test_kill_9_of_up_leaves_pods_running_and_the_next_up_adopts_them(node: dict, docker_api,
                                                                       cleanup: Callable) -> None:
    """A crash, not a clean stop: SIGKILL gives the kubelet (and the API server in the same process) no
    chance to tidy anything; the pod's containers keep running and the restarted kubelet adopts them from
    Docker's labels, its IPAM file and the store, restarting nothing."""
    data_dir, name = node["data_dir"], node["nodeName"]
    port = free_port()
    first = UpProcess(data_dir, port)
    cleanup(first.kill)
    kubeconfig = first.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        before = run_sleeper(client, name, "survivor")
    containers = node_containers(docker_api, name)

    first.kill()
    assert first.proc.returncode == -signal.SIGKILL
    after_kill = node_containers(docker_api, name)
    assert set(after_kill) == set(containers) and all(c["State"] == "running" for c in after_kill.values())

    second = UpProcess(data_dir, port)
    cleanup(second.kill)
    second.wait_for("[up] kubeconfig: ")
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        assert_adopted(client, before, docker_api, name, containers)
        client.delete("/api/v1/namespaces/default/pods/survivor")
        deadline = time.monotonic() + 30
        while node_containers(docker_api, name) and time.monotonic() < deadline:
            time.sleep(0.3)
    assert node_containers(docker_api, name) == {}, "the adopted pod's containers outlived its deletion"
    assert second.interrupt() == 0, "\n".join(second.lines)
