"""The processes of nodes 2..N under `slimkube up --nodes N`: one `slimkube agent` and one `slimkube proxy`
per node, each started inside the node's network namespace with `ip netns exec`, supervised by `up`.

Why processes and not threads: a network namespace belongs to a thread, and a kubelet and a proxy are
many threads; a process entered into the namespace before it starts has every thread there, and is the
same `slimkube agent --server URL --token-file FILE` a worker host runs.

The supervisor (one thread, `NodeGroup.run`) keeps each node's processes as wanted:
- the agent starts at once; its proxy once the agent says the Node is registered (the proxy reads the
  Node's InternalIP), as `up` does for node 1;
- each node's directory (DIR/nodes/NAME) holds `agent.pid` / `proxy.pid` of the running processes and the
  full output in `agent.log` / `proxy.log`; progress lines (`[agent] …`, `[proxy] …`, `Error: …`) are
  printed as `[node NAME] …`;
- `slimkube node stop NAME` writes the marker `DIR/nodes/NAME/kubelet.stopped` and SIGTERMs the agent:
  the supervisor sees the exit, finds the marker and leaves the agent down; `slimkube node start NAME`
  removes the marker and the supervisor starts the agent again within a poll (`POLL_SECONDS`), which
  adopts the node's pods as any restarted kubelet does. The running `up` is thus the only starter of
  processes, whatever the `node` command does;
- a process that exits without the marker is started again after `RESTART_SECONDS` (systemd's
  Restart=on-failure);
- `stop()` (Ctrl-C of `up`) SIGTERMs every process and waits: pods keep running, proxy rules stay.

No process outlives its `up`, even one killed with -9. Each child gets PR_SET_PDEATHSIG=SIGTERM between
fork and exec (it survives the exec of `ip netns exec` and of the agent), so it is stopped in order when
its parent dies. On Linux that "parent" is the *thread* that forked the child, not the process: a child
forked by a thread that ends before `up` gets its SIGTERM then, and a child whose parent died before the
prctl took effect gets none. Hence:
- every child is forked by one spawner thread (`spawn`), started on first use and never ended, so the
  forking thread lives exactly as long as the `up` process, whichever thread (the caller of `start`, the
  supervisor, `wait_ready`'s caller) asked for the child;
- the child checks its parent pid right after arming the signal and exits if `up` already died.
Upstream has no equivalent (systemd or a container runtime supervises each component there).
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

from slimkube.nodes import NodeSpec

POLL_SECONDS = 0.3
RESTART_SECONDS = 2.0
STOP_SECONDS = 20.0
PROGRESS_SECONDS = 10.0
STOPPED_MARKER = "kubelet.stopped"
Say = Callable[[str], None]
_PR_SET_PDEATHSIG = 1


def stopped_marker(node: NodeSpec) -> str:
    return os.path.join(node.data_dir, STOPPED_MARKER)


def pid_file(node: NodeSpec, role: str) -> str:
    return os.path.join(node.data_dir, f"{role}.pid")


class _Spawner:
    """The one thread that forks every child of this process (see the module notes): started on first use,
    never ended; `popen` hands it the argv and waits for the started child."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # the parent every child expects (checked between fork and exec)
        self._requests: queue.SimpleQueue[tuple[list[str], Future[subprocess.Popen[str]]]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="node-spawner", daemon=True).start()

    def _die_with_parent(self) -> None:  # runs in the child between fork and exec: prctl, getppid, no locks
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != self.pid:  # `up` died before the signal was armed: none will come
            os._exit(1)

    def _run(self) -> None:
        while True:
            argv, result = self._requests.get()
            try:
                result.set_result(subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    start_new_session=True, preexec_fn=self._die_with_parent))
            except Exception as error:  # noqa: BLE001 - raised in the asking thread; the spawner lives on
                result.set_exception(error)

    def popen(self, argv: list[str]) -> subprocess.Popen[str]:
        result: Future[subprocess.Popen[str]] = Future()
        self._requests.put((argv, result))
        return result.result()


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def spawn(argv: list[str]) -> subprocess.Popen[str]:
    """Start `argv` (stdout and stderr to one pipe, its own session) from the spawner thread: the child gets
    SIGTERM when this process dies, whichever thread called."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner.pid != os.getpid():  # first use, or in a forked copy of this process
            _spawner = _Spawner()
        spawner = _spawner
    return spawner.popen(argv)


def is_progress(line: str) -> bool:
    """Lines of a node process worth printing in `up`'s output (the rest goes to its log file only)."""
    return line.startswith(("[agent]", "[proxy]", "Error"))


class Child:
    """One node process: output to its log file and progress lines to `say`; `seen(text)` tells whether a
    line containing `text` came."""

    def __init__(self, node: NodeSpec, role: str, argv: list[str], say: Say) -> None:
        self.node, self.role = node, role
        os.makedirs(node.data_dir, mode=0o700, exist_ok=True)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._log = open(os.path.join(node.data_dir, f"{role}.log"), "a", encoding="utf-8")  # closed by the reader
        self.proc = spawn(argv)
        with open(pid_file(node, role), "w", encoding="utf-8") as handle:
            handle.write(f"{self.proc.pid}\n")
        self._say = say
        self._reader = threading.Thread(target=self._read, name=f"{node.name}-{role}-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self._log:
            for line in self.proc.stdout:
                line = line.rstrip("\n")
                self._log.write(line + "\n")
                self._log.flush()
                with self._lock:
                    self._lines.append(line)
                if is_progress(line):
                    self._say(f"[node {self.node.name}] {line}")

    def seen(self, text: str) -> bool:
        with self._lock:
            return any(text in line for line in self._lines)

    def exited(self) -> int | None:
        return self.proc.poll()

    def signal_stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # by PID: our own child

    def terminate(self, timeout: float = STOP_SECONDS) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # by PID: our own child
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._reader.join(timeout=5)
        try:
            os.unlink(pid_file(self.node, self.role))
        except FileNotFoundError:
            pass


class NodeProcess(Protocol):
    """What the supervisor needs of a started process (Child; fakes in the unit tests)."""

    role: str

    def seen(self, text: str) -> bool: ...

    def exited(self) -> int | None: ...

    def signal_stop(self) -> None: ...

    def terminate(self, timeout: float = STOP_SECONDS) -> None: ...


Launch = Callable[[NodeSpec, str], NodeProcess]  # (node, "agent" | "proxy") → a started process


@dataclass
class _NodeState:
    node: NodeSpec
    agent: NodeProcess | None = None
    proxy: NodeProcess | None = None
    restart_at: dict[str, float] = field(default_factory=dict)  # role → when to start it again
    ready: bool = False      # the running agent said Ready
    synced: bool = False     # a proxy of this node said its first sync is done
    proxy_wanted: bool = False  # set once the Node was registered: the proxy reads its InternalIP


class NodeGroup:
    """Nodes 2..N's processes (see the module notes). `launch` starts one process (`up` passes one that
    runs `ip netns exec NAME slimkube agent|proxy …`)."""

    def __init__(self, nodes: tuple[NodeSpec, ...], *, launch: Launch, say: Say,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._states = [_NodeState(node) for node in nodes]
        self._launch = launch
        self._say = say
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        for state in self._states:
            try:  # `up` starts every node: a marker left by `node stop` before the last Ctrl-C is void
                os.unlink(stopped_marker(state.node))
            except FileNotFoundError:
                pass
            self._say(f"[node {state.node.name}] starting agent in namespace {state.node.netns} "
                      f"({state.node.node_ip})")
            state.agent = self._launch(state.node, "agent")
        self._thread = threading.Thread(target=self.run, name="node-supervisor", daemon=True)
        self._thread.start()

    def step(self) -> None:
        """One supervision pass over every node (the loop's body; tests call it directly)."""
        now = self._clock()
        with self._lock:
            if self._stop.is_set():
                return
            for state in self._states:
                self._step_agent(state, now)
                self._step_proxy(state, now)

    def _step_agent(self, state: _NodeState, now: float) -> None:
        name = state.node.name
        if state.agent is not None:
            if not state.ready and state.agent.seen(f"node {name} Ready"):
                state.ready = True
            code = state.agent.exited()
            if code is None:
                return
            state.agent.terminate()
            state.agent, state.ready = None, False
            if os.path.exists(stopped_marker(state.node)):
                self._say(f"[node {name}] kubelet stopped by `slimkube node stop` (pods keep running)")
                return
            self._say(f"[node {name}] agent exited with code {code}; starting it again in {RESTART_SECONDS:.0f} s")
            state.restart_at["agent"] = now + RESTART_SECONDS
            return
        if os.path.exists(stopped_marker(state.node)):
            return
        if now >= state.restart_at.get("agent", 0.0):
            self._say(f"[node {name}] starting agent")
            state.agent = self._launch(state.node, "agent")

    def _step_proxy(self, state: _NodeState, now: float) -> None:
        name = state.node.name
        if state.proxy is not None:
            if not state.synced and state.proxy.seen("first sync done"):
                state.synced = True
            code = state.proxy.exited()
            if code is None:
                return
            state.proxy.terminate()
            state.proxy = None
            self._say(f"[node {name}] proxy exited with code {code}; starting it again in {RESTART_SECONDS:.0f} s")
            state.restart_at["proxy"] = now + RESTART_SECONDS
            return
        if not state.proxy_wanted and state.agent is not None:
            state.proxy_wanted = state.agent.seen(f"node {name} registered")
        if state.proxy_wanted and now >= state.restart_at.get("proxy", 0.0):
            self._say(f"[node {name}] starting kube-proxy")
            state.proxy = self._launch(state.node, "proxy")

    def run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.step()

    def all_ready(self) -> bool:
        with self._lock:
            return all(state.ready and state.synced for state in self._states)

    def wait_ready(self, stop: threading.Event) -> bool:
        """Wait until every node's agent said Ready and its proxy synced once (progress every
        PROGRESS_SECONDS); False if `stop` came first."""
        started = last_word = self._clock()
        while not stop.is_set():
            self.step()
            if self.all_ready():
                return True
            if self._clock() - last_word >= PROGRESS_SECONDS:
                last_word = self._clock()
                waiting = ", ".join(s.node.name for s in self._states if not (s.ready and s.synced))
                self._say(f"[up] waiting for nodes {waiting} to be Ready ({last_word - started:.0f} s)")
            stop.wait(POLL_SECONDS)
        return False

    def stop(self) -> None:
        """SIGTERM every process and wait (pods keep running; the proxies' rules stay)."""
        with self._lock:
            self._stop.set()
            children = [(s.node.name, c) for s in self._states for c in (s.agent, s.proxy) if c is not None]
            for state in self._states:
                state.agent = state.proxy = None
        for _, child in children:  # all at once, then wait for each
            child.signal_stop()
        for name, child in children:
            self._say(f"[node {name}] stopping {child.role}")
            child.terminate()
        if self._thread is not None:
            self._thread.join(timeout=5)


def read_pid(node: NodeSpec, role: str) -> int | None:
    try:
        with open(pid_file(node, role), encoding="utf-8") as handle:
            return int(handle.read().strip() or 0) or None
    except (FileNotFoundError, ValueError):
        return None


def runs_as(pid: int, node: NodeSpec, role: str) -> bool:
    """Whether `pid` is (still) `slimkube <role>` for `node`: a pid file can outlive its process and the
    pid be reused, so the command line is checked before any signal is sent."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().decode(errors="replace").split("\0")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return role in argv and node.name in argv


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop_kubelet(node: NodeSpec, *, timeout: float = STOP_SECONDS) -> int | None:
    """`slimkube node stop`: mark the node stopped, SIGTERM its agent and wait until it is gone. Returns the
    stopped pid, or None if no agent ran. Raises TimeoutError if it did not stop in time."""
    with open(stopped_marker(node), "w", encoding="utf-8") as handle:
        handle.write("stopped by `slimkube node stop`\n")
    pid = read_pid(node, "agent")
    if pid is None or not runs_as(pid, node, "agent"):
        return None
    os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not runs_as(pid, node, "agent"), timeout):
        raise TimeoutError(f"the agent of {node.name} (pid {pid}) did not stop within {timeout:.0f} s")
    return pid


def start_kubelet(node: NodeSpec, *, timeout: float = STOP_SECONDS) -> int:
    """`slimkube node start`: remove the marker; the running `up` starts the agent. Returns its pid once
    it runs. Raises TimeoutError if no agent came up in time (is `up` running?)."""
    try:
        os.unlink(stopped_marker(node))
    except FileNotFoundError:
        pass
    found: list[int] = []

    def running() -> bool:
        pid = read_pid(node, "agent")
        if pid is not None and runs_as(pid, node, "agent"):
            found.append(pid)
            return True
        return False

    if not _wait(running, timeout):
        raise TimeoutError(f"no agent of {node.name} started within {timeout:.0f} s")
    return found[-1]
