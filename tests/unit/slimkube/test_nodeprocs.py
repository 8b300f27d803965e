"""The supervisor of nodes 2..N's processes (slimkube/nodeprocs.py NodeGroup) with fake processes and a
fake clock: start order, readiness, `node stop`/`node start` through the marker, restarts, stop."""

from __future__ import annotations

import os
import threading

import pytest

from slimkube import nodes
from slimkube.nodeprocs import RESTART_SECONDS, NodeGroup, start_kubelet, stop_kubelet, stopped_marker


class FakeProcess:
    def __init__(self, role: str) -> None:
        self.role = role
        self.lines: list[str] = []
        self.code: int | None = None
        self.stops = 0

    def seen(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def exited(self) -> int | None:
        return self.code

    def signal_stop(self) -> None:
        self.stops += 1

    def terminate(self, timeout: float = 0) -> None:
        self.code = self.code if self.code is not None else -15


class Harness:
    def __init__(self, tmp_path) -> None:
        self.plan = nodes.plan(3, first_name="h", cluster_cidr="10.244.0.0/16",
                               data_dir=str(tmp_path))
        for node in self.plan.nodes:
            os.makedirs(node.data_dir)
        self.now = 0.0
        self.started: list[tuple[str, FakeProcess]] = []
        self.said: list[str] = []
        self.group = NodeGroup(self.plan.nodes, launch=self.launch, say=self.said.append, clock=lambda: self.now)

    def launch(self, node: nodes.NodeSpec, role: str) -> FakeProcess:
        process = FakeProcess(role)
        self.started.append((f"{node.name}/{role}", process))
        return process

    def latest(self, key: str) -> FakeProcess:
        return [p for k, p in self.started if k == key][-1]

    def bring_up(self) -> None:
        self.group.start()
        for node in self.plan.nodes:
            self.latest(f"{node.name}/agent").lines += [f"[agent] node {node.name} registered",
                                                         f"[agent] node {node.name} Ready"]
        self.group.step()
        for node in self.plan.nodes:
            self.latest(f"{node.name}/proxy").lines.append("[proxy] first sync done")
        self.group.step()


def test_agents_start_first_and_each_proxy_once_its_node_is_registered(tmp_path):
    h = Harness(tmp_path)
    h.group.start()
    assert [k for k, _ in h.started] == ["h-2/agent", "h-3/agent"]
    h.group.step()
    assert len(h.started) == 2
    h.latest("h-3/agent").lines.append("[agent] node h-3 registered")
    h.group.step()
    assert [k for k, _ in h.started][2:] == ["h-3/proxy"]
    assert not h.group.all_ready()


def test_ready_once_every_agent_is_ready_and_every_proxy_synced(tmp_path):
    h = Harness(tmp_path)
    h.bring_up()
    assert h.group.all_ready()
    assert h.group.wait_ready(threading.Event())


def test_node_stop_keeps_the_agent_down_until_node_start(tmp_path):
    h = Harness(tmp_path)
    h.bring_up()
    node = h.plan.nodes[0]
    open(stopped_marker(node), "w").close()  # what `slimkube node stop` writes before its SIGTERM
    h.latest("h-2/agent").code = 0
    for _ in range(3):
        h.now += RESTART_SECONDS * 2
        h.group.step()
    assert [k for k, _ in h.started].count("h-2/agent") == 1
    assert "[node h-2] kubelet stopped by `slimkube node stop` (pods keep running)" in h.said
    assert not h.group.all_ready()
    assert h.latest("h-2/proxy").code is None  # the proxy keeps running

    os.unlink(stopped_marker(node))  # `slimkube node start`
    h.group.step()
    assert [k for k, _ in h.started].count("h-2/agent") == 2


def test_a_process_that_dies_is_started_again_after_a_pause(tmp_path):
    h = Harness(tmp_path)
    h.bring_up()
    h.latest("h-3/agent").code = 1
    h.latest("h-3/proxy").code = 2
    h.group.step()
    assert "[node h-3] agent exited with code 1; starting it again in 2 s" in h.said
    assert [k for k, _ in h.started].count("h-3/agent") == 1
    h.now += RESTART_SECONDS
    h.group.step()
    assert [k for k, _ in h.started].count("h-3/agent") == 2
    assert [k for k, _ in h.started].count("h-3/proxy") == 2  # a restarted proxy needs no new registration


def test_stop_signals_every_process_and_starts_nothing_after(tmp_path):
    h = Harness(tmp_path)
    h.bring_up()
    h.group.stop()
    assert all(p.stops == 1 and p.code is not None for _, p in h.started)
    h.now += 100
    h.group.step()
    assert len(h.started) == 4


def test_node_stop_and_start_without_a_running_agent(tmp_path):
    node = nodes.plan(2, first_name="h", cluster_cidr="10.244.0.0/16",
                      data_dir=str(tmp_path)).nodes[0]
    os.makedirs(node.data_dir)
    with open(os.path.join(node.data_dir, "agent.pid"), "w") as handle:
        handle.write(f"{os.getpid()}\n")  # this pytest process: not `slimkube agent`, so never signalled
    assert stop_kubelet(node) is None
    assert os.path.exists(stopped_marker(node))
    with pytest.raises(TimeoutError, match="no agent of h-2 started"):
        start_kubelet(node, timeout=0.2)
    assert not os.path.exists(stopped_marker(node))
