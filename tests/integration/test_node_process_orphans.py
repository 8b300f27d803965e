"""No node process outlives the `up` that started it (slimkube/nodeprocs.py `spawn`), whatever thread asked
for it: a stand-in for `up` (a Python subprocess of this test) starts a child through `Child`, the path
`up --nodes` uses, from a thread that then ends; the child must still run while its parent does (Linux
sends the parent-death signal when the *forking thread* ends), and be gone within seconds of a `kill -9`
of the parent. No privileges needed: the child is a plain `sleep`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.polling import wait_for

PARENT = """
import sys, threading, time
from slimkube.nodeprocs import Child
from slimkube.nodes import NodeSpec

node = NodeSpec(index=2, name="orphan-test", node_ip="10.0.0.2", host_veth="none", data_dir=sys.argv[1])
children = []
asker = threading.Thread(target=lambda: children.append(Child(node, "agent", ["sleep", "300"], say=print)))
asker.start()
asker.join()
print(children[0].proc.pid, flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    """Running and not a zombie waiting for its reaper."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_child_of_an_ended_thread_lives_with_its_parent_and_dies_with_it(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert (tmp_path / "agent.pid").read_text().strip() == str(child)
        time.sleep(1.0)  # well after the asking thread ended
        assert alive(child), "the child died with the thread that asked for it"
        assert parent.poll() is None
        parent.kill()  # by PID: the stand-in for `up` this test started
        parent.wait(timeout=5)
        wait_for(lambda: not alive(child), 5.0, "the child to stop after its parent's kill -9", interval=0.05)
    finally:
        if parent.poll() is None:
            parent.kill()  # by PID: this test's own subprocess
            parent.wait(timeout=5)
        if child and alive(child):
            os.kill(child, signal.SIGKILL)  # by PID: the child this test's parent started
