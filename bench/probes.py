"""The kubelet's probing CPU against a bare loop doing the same probes (the kubelet's CPU with
100 pods each probed every second (exec, http and tcp mixed) beside the same probes run by a bare loop;
goal ≤ 1.5×).

Run (root, a running dockerd): `.venv/bin/python bench/probes.py [--pods 100] [--seconds 30] [--timeout 1]`.

Targets, made by this run: a Docker bridge network `skbench-<id>` (bridge `skb<id>`, a 10.244.N.0/24
subnet that no route on this host overlaps, tests/support/hostnet.py) and `--pods` busybox containers on
it, each running `httpd -f -p 8080 -h /tmp` in its own network namespace with `/tmp/ok` written, reachable
from the host at their network IPs. Each pod has one readiness probe, period 1 s, timeout `--timeout`
(1 s, upstream's default; the bare loop waits as long as a probe takes); a third each (34/33/33 for
100): exec `cat /tmp/ok`, httpGet `:8080/ok`, tcpSocket `:8080`.

Two phases, one after the other, in this one process, each `--seconds` long after a few seconds of
warm-up, against the same containers; the figure is this process's CPU seconds (user + system, psutil)
over the phase, nothing else running in it:
1. the kubelet: the real prober manager (nodeagent/prober: `ProbeManager`, one worker thread per probe,
   the pure decide steps, the results managers) with the real `Prober` and its real executors (Docker
   exec through `DockerRuntime.exec`, `requests_fetch`, `tcp_probe`). The pods' statuses come from a dict
   (what the status manager would hold: Running, the pod IP, the container running and started); no API
   server, PLEG or pod workers run, so their CPU is not in the figure — this is the probing alone. A
   `slimkube agent` process would add the kubelet's other loops (node status, PLEG, syncs) to the number
   and hide what probing costs.
2. the bare loop: every second a thread pool (32 threads) runs the same 100 probes with the plainest
   calls — `APIClient.exec_create`/`exec_start`/`exec_inspect`, an `http.client` GET, a
   `socket.create_connection` — and checks the same success conditions.
Probes run and succeeded are counted in both, so the comparison is per the same work. dockerd's CPU
over each phase is shown too (the execs cost it the same in both; it is not in the ratio).

Everything carries this run's label `slimkube.bench=<id>` (not `slimkube.test`: test sessions sweep that
label); the containers and the network are removed at the end, even on failure.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import docker  # noqa: E402
import docker.types  # noqa: E402
import psutil  # noqa: E402

from nodeagent.images import BUSYBOX, ensure_image  # noqa: E402
from nodeagent.prober.manager import ProbeManager  # noqa: E402
from nodeagent.prober.prober import Prober  # noqa: E402
from nodeagent.prober.types import ExecAction, HTTPGetAction, ProbeSpec, ProbeType, Result, TCPSocketAction  # noqa: E402
from nodeagent.runtime.docker import DockerRuntime  # noqa: E402
from tests.support.hostnet import free_pod_cidr  # noqa: E402

BENCH_LABEL = "slimkube.bench"  # not `slimkube.test`: test sessions sweep that label
PORT = 8080
SERVE = f"echo ok > /tmp/ok && exec httpd -f -p {PORT} -h /tmp"
KINDS = ("exec", "httpGet", "tcpSocket")
BARE_THREADS = 32
WARMUP = 5.0
HANDLER_KIND = {ExecAction: "exec", HTTPGetAction: "httpGet", TCPSocketAction: "tcpSocket"}


@dataclass(frozen=True)
class Target:
    kind: str
    container_id: str
    ip: str


# -- targets ---------------------------------------------------------------------------------------------

def make_targets(api: docker.APIClient, run: str, pods: int) -> list[Target]:
    network = f"skbench-{run}"
    cidr = free_pod_cidr()
    gateway = cidr.rsplit(".", 1)[0] + ".1"
    api.create_network(network, driver="bridge", labels={BENCH_LABEL: run},
                       options={"com.docker.network.bridge.name": f"skb{run}"},
                       ipam=docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=cidr,
                                                                                        gateway=gateway)]))

    def one(i: int) -> Target:
        created = api.create_container(
            BUSYBOX.ref, command=["sh", "-c", SERVE], name=f"skbench-{run}-{i}", labels={BENCH_LABEL: run},
            host_config=api.create_host_config(network_mode=network),
            networking_config=api.create_networking_config({network: api.create_endpoint_config()}))
        api.start(created["Id"])
        ip = api.inspect_container(created["Id"])["NetworkSettings"]["Networks"][network]["IPAddress"]
        return Target(KINDS[i % len(KINDS)], str(created["Id"]), str(ip))

    with ThreadPoolExecutor(8) as pool:
        targets = list(pool.map(one, range(pods)))
    deadline = time.monotonic() + 60
    for target in targets:  # every httpd listens before either phase starts
        while True:
            try:
                socket.create_connection((target.ip, PORT), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    return targets


def remove_targets(api: docker.APIClient, run: str) -> None:
    """One container at a time: Docker 20.10 removing containers of one network concurrently once left the
    network's endpoint count stale ("has active endpoints" with none, until dockerd restarts)."""
    for container in api.containers(all=True, filters={"label": f"{BENCH_LABEL}={run}"}):
        try:
            api.remove_container(container["Id"], force=True, v=True)
        except docker.errors.NotFound:
            pass
    for network in api.networks(filters={"label": f"{BENCH_LABEL}={run}"}):
        deadline = time.monotonic() + 30
        while True:  # dockerd releases a removed container's endpoint a moment after the remove returns
            try:
                api.remove_network(network["Id"])
                break
            except docker.errors.APIError as exc:
                if "active endpoints" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


# -- measuring -------------------------------------------------------------------------------------------

@dataclass
class Phase:
    cpu: float = 0.0  # this process, seconds
    dockerd_cpu: float = 0.0
    probes: int = 0
    succeeded: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # probe kind → probes run that did not succeed


class Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.probes = 0
        self.succeeded = 0
        self.failed: dict[str, int] = {}

    def add(self, kind: str, ok: bool) -> None:
        with self._lock:
            self.probes += 1
            self.succeeded += ok
            if not ok:
                self.failed[kind] = self.failed.get(kind, 0) + 1

    def read(self) -> tuple[int, int, dict[str, int]]:
        with self._lock:
            return self.probes, self.succeeded, dict(self.failed)


def _cpu(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


def dockerd() -> psutil.Process | None:
    for process in psutil.process_iter(["name"]):
        if process.info["name"] == "dockerd":
            return process
    return None


def measure(counter: Counter, seconds: float) -> Phase:
    me, daemon = psutil.Process(), dockerd()
    cpu, daemon_cpu, (probes, succeeded, failed) = _cpu(me), _cpu(daemon), counter.read()
    time.sleep(seconds)
    probes_after, succeeded_after, failed_after = counter.read()
    return Phase(_cpu(me) - cpu, _cpu(daemon) - daemon_cpu, probes_after - probes, succeeded_after - succeeded,
                 {kind: n - failed.get(kind, 0) for kind, n in failed_after.items() if n > failed.get(kind, 0)})


# -- the kubelet's prober --------------------------------------------------------------------------------

def pod_of(run: str, i: int, target: Target, timeout: int) -> dict[str, Any]:
    handlers: dict[str, dict[str, Any]] = {"exec": {"command": ["cat", "/tmp/ok"]},
                                           "httpGet": {"path": "/ok", "port": PORT},
                                           "tcpSocket": {"port": PORT}}
    probe: dict[str, Any] = {target.kind: handlers[target.kind], "periodSeconds": 1, "timeoutSeconds": timeout,
                             "failureThreshold": 3}
    return {"metadata": {"name": f"probe-{i}", "namespace": "default", "uid": f"skbench-{run}-{i}"},
            "spec": {"containers": [{"name": "app", "image": BUSYBOX.ref, "readinessProbe": probe}]}}


def status_of(target: Target, started: datetime) -> dict[str, Any]:
    return {"phase": "Running", "podIP": target.ip, "containerStatuses": [{
        "name": "app", "containerID": f"docker://{target.container_id}", "ready": False, "started": True,
        "state": {"running": {"startedAt": started.strftime("%Y-%m-%dT%H:%M:%SZ")}}}]}


class CountingProber(Prober):
    """The real prober; each probe's verdict is counted (one lock and two adds per probe)."""

    def __init__(self, runtime: DockerRuntime, counter: Counter) -> None:
        super().__init__(runtime)
        self.counter = counter

    def probe(self, kind: ProbeType, spec: ProbeSpec, pod: Mapping[str, Any], status: Mapping[str, Any],
              container: Mapping[str, Any], container_id: str) -> Result | None:
        result = super().probe(kind, spec, pod, status, container, container_id)
        self.counter.add(HANDLER_KIND.get(type(spec.handler), "other"), result is Result.SUCCESS)
        return result


def bench_kubelet(api: docker.APIClient, run: str, targets: list[Target], seconds: float, timeout: int) -> Phase:
    counter = Counter()
    started = datetime.now(UTC) - timedelta(seconds=10)
    statuses = {f"skbench-{run}-{i}": status_of(t, started) for i, t in enumerate(targets)}
    manager = ProbeManager(CountingProber(DockerRuntime(api, node_name=f"skbench-{run}"), counter),
                           status_of=statuses.get)
    try:
        for i, target in enumerate(targets):
            manager.add_pod(pod_of(run, i, target, timeout))
        time.sleep(WARMUP)
        return measure(counter, seconds)
    finally:
        manager.stop()
        time.sleep(2.0)  # the workers end within one period


# -- the bare loop ---------------------------------------------------------------------------------------

def bare_probe(api: docker.APIClient, target: Target) -> bool:
    try:
        if target.kind == "exec":
            exec_id = api.exec_create(target.container_id, ["cat", "/tmp/ok"])["Id"]
            api.exec_start(exec_id)
            return api.exec_inspect(exec_id).get("ExitCode") == 0
        if target.kind == "httpGet":
            connection = http.client.HTTPConnection(target.ip, PORT, timeout=1)
            try:
                connection.request("GET", "/ok")
                response = connection.getresponse()
                response.read()
                return 200 <= response.status < 400
            finally:
                connection.close()
        socket.create_connection((target.ip, PORT), 1).close()
        return True
    except (OSError, docker.errors.APIError):
        return False


def bench_bare(api: docker.APIClient, targets: list[Target], seconds: float) -> Phase:
    counter = Counter()
    stop = threading.Event()

    def loop(pool: ThreadPoolExecutor, probe: Callable[[Target], bool]) -> None:
        tick = time.monotonic()
        while not stop.is_set():
            for target, ok in zip(targets, pool.map(probe, targets), strict=True):
                counter.add(target.kind, ok)
            tick += 1.0
            stop.wait(max(0.0, tick - time.monotonic()))

    with ThreadPoolExecutor(BARE_THREADS) as pool:
        ticker = threading.Thread(target=loop, args=(pool, lambda t: bare_probe(api, t)), daemon=True)
        ticker.start()
        try:
            time.sleep(WARMUP)
            return measure(counter, seconds)
        finally:
            stop.set()
            ticker.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--timeout", type=int, default=1,
                        help="the probes' timeoutSeconds (upstream's default 1; the bare loop has no timeout)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("probes.py needs root (Docker networks)", file=sys.stderr)
        return 1
    run = uuid.uuid4().hex[:6]
    api = docker.APIClient(version="auto", timeout=60)
    ensure_image(api, BUSYBOX)
    try:
        targets = make_targets(api, run, args.pods)
        bare = bench_bare(api, targets, args.seconds)
        kubelet = bench_kubelet(api, run, targets, args.seconds, args.timeout)
    finally:
        remove_targets(api, run)
    report(args, targets, kubelet, bare)
    return 0


def report(args: argparse.Namespace, targets: list[Target], kubelet: Phase, bare: Phase) -> None:
    mix = "/".join(str(sum(t.kind == kind for t in targets)) for kind in KINDS)
    print(f"# probes, {args.pods} pods probed every second (exec/httpGet/tcpSocket {mix}), {args.seconds:.0f} s "
          f"({platform.node()}, nproc {os.cpu_count()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')})")
    print("| measurement | CPU s (this process) | CPU % of one core | probes run | succeeded | CPU ms/probe "
          "| dockerd CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, phase in (("kubelet prober manager + real executors", kubelet), ("bare loop, same probes", bare)):
        per_probe = 1000 * phase.cpu / phase.probes if phase.probes else float("nan")
        print(f"| {label} | {phase.cpu:.2f} | {100 * phase.cpu / args.seconds:.1f} | {phase.probes} | "
              f"{phase.succeeded} | {per_probe:.2f} | {phase.dockerd_cpu:.2f} |")
    for label, phase in (("kubelet", kubelet), ("bare loop", bare)):
        if phase.failed:
            print(f"{label}: probes that did not succeed, by kind: {phase.failed}")
    ratio = kubelet.cpu / bare.cpu if bare.cpu else float("inf")
    per_probe_ratio = (kubelet.cpu / kubelet.probes) / (bare.cpu / bare.probes) if kubelet.probes and bare.probes \
        else float("inf")
    print(f"CPU ratio kubelet / bare loop: {ratio:.2f} (goal ≤ 1.5: {'met' if ratio <= 1.5 else 'NOT met'}); "
          f"per probe run: {per_probe_ratio:.2f}")


if __name__ == "__main__":
    sys.exit(main())
