"""Pod start-up latency through the kubelet against bare Docker (create 30 pods at once on one
node, measure creation→Running (seen by a watch) p50/p99, beside the time bare docker create+start of
the same pause+app containers takes in the same run; goal p99 ≤ 1.3 × bare and ≤ 5 s, upstream's SLO).

Run (root, a running dockerd): `.venv/bin/python bench/pod_startup.py [--pods 30]`.

Same run, same host, same images:
1. bare Docker: `--pods` threads at once each create+start a pause container (network none, IPC
   shareable, as the kubelet's sandbox) and then a busybox `sleep` joined to its network and IPC
   namespaces; per pod, the time from the common start to its app container started. Then the same
   pods one at a time (the per-pod figure, ~280 ms when first measured).
2. slimkube: a `slimkube server` child process and a `slimkube agent` child process (the kubelet
   alone in its process, so psutil measures it and nothing else) joined with the K10 node token; a
   watch on the node's pods is opened, then `--pods` pods (pause + the same busybox) are created by 8
   client threads at once; per pod, the time from just before its POST to the watch event that first
   shows phase Running. The kubelet's network (bridge, veths, IP, rules) is in its figure and not in
   bare Docker's: that is the cost being measured.
3. The kubelet idle with those pods: CPU% of its process over `--idle-seconds`, and its RSS.

Everything is made with this run's names (node `skbench-<id>`, bridge `skbench<id>`, chains
`KUBE-SKBENCH-<id>-*`, label `slimkube.bench=<id>` on the bare containers) and removed at the end, even
on failure (nodeagent/teardown.py for the kubelet's, by label for the bare ones).
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server and helpers

import docker  # noqa: E402
import psutil  # noqa: E402
import yaml  # noqa: E402

from control.client.rest import RESTClient  # noqa: E402
from control.util.iptables import detect  # noqa: E402
from nodeagent.config import load  # noqa: E402
from nodeagent.images import BUSYBOX, PAUSE, ensure_image  # noqa: E402
from nodeagent.teardown import RealHostNetwork, teardown  # noqa: E402
from tests.support.apiserver import ProcessServer, free_port  # noqa: E402
from tests.support.hostnet import free_pod_cidr  # noqa: E402

APP_COMMAND = ["sleep", "3600"]
CREATE_CLIENTS = 8
# Not `slimkube.test`: test sessions sweep every container with that label when they start and end, which
# would pull the bare pods from under a bench that runs beside a test suite.
BENCH_LABEL = "slimkube.bench"
RUNNING_TIMEOUT = 120.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# -- bare Docker -----------------------------------------------------------------------------------------

def bare_pod(api: docker.APIClient, name: str, run: str) -> None:
    labels = {BENCH_LABEL: run}
    sandbox = api.create_container(PAUSE.ref, name=f"{name}-pause", labels=labels, hostname=name,
                                   host_config=api.create_host_config(network_mode="none", ipc_mode="shareable"))
    api.start(sandbox["Id"])
    shared = f"container:{sandbox['Id']}"
    app = api.create_container(BUSYBOX.ref, command=APP_COMMAND, name=f"{name}-app", labels=labels,
                               host_config=api.create_host_config(network_mode=shared, ipc_mode=shared))
    api.start(app["Id"])


def remove_bare(api: docker.APIClient, run: str) -> None:
    def remove(container: dict) -> None:
        try:
            api.remove_container(container["Id"], force=True, v=True)
        except docker.errors.NotFound:
            pass

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(remove, api.containers(all=True, filters={"label": f"{BENCH_LABEL}={run}"})))


def bench_bare(api: docker.APIClient, pods: int, run: str) -> tuple[list[float], float]:
    """(per-pod seconds with all pods at once, mean seconds per pod one at a time)."""
    done: list[float] = [0.0] * pods
    start = time.monotonic()

    def one(i: int) -> None:
        bare_pod(api, f"skbench-{run}-{i}", run)
        done[i] = time.monotonic() - start

    try:
        with ThreadPoolExecutor(pods) as pool:
            list(pool.map(one, range(pods)))
    finally:
        remove_bare(api, run)
    sequential_start = time.monotonic()
    try:
        for i in range(pods):
            bare_pod(api, f"skbench-{run}-s{i}", run)
        sequential = (time.monotonic() - sequential_start) / pods
    finally:
        remove_bare(api, run)
    return done, sequential


# -- slimkube --------------------------------------------------------------------------------------------

def pod_manifest(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "app", "image": BUSYBOX.ref, "imagePullPolicy": "Never", "command": APP_COMMAND}]}}


def watch_running(client: RESTClient, node: str, rv: str, seen: dict[str, float], stop: threading.Event) -> None:
    for event in client.watch("/api/v1/namespaces/default/pods", resource_version=rv, stop=stop,
                              params={"fieldSelector": f"spec.nodeName={node}"}):
        name = event.object.get("metadata", {}).get("name", "")
        if event.object.get("status", {}).get("phase") == "Running" and name not in seen:
            seen[name] = time.monotonic()


def bench_kubelet(client: RESTClient, node: str, pods: int) -> list[float]:
    listed = client.list("/api/v1/namespaces/default/pods")
    seen: dict[str, float] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_running, args=(client, node, listed["metadata"]["resourceVersion"],
                                                           seen, stop), daemon=True)
    watcher.start()
    time.sleep(0.5)  # the watch is open before the first create
    created: dict[str, float] = {}

    def create(i: int) -> None:
        name = f"bench-{i}"
        created[name] = time.monotonic()
        client.create("/api/v1/namespaces/default/pods", pod_manifest(name, node))

    with ThreadPoolExecutor(CREATE_CLIENTS) as pool:
        list(pool.map(create, range(pods)))
    deadline = time.monotonic() + RUNNING_TIMEOUT
    while len(seen) < pods and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    if len(seen) < pods:
        raise RuntimeError(f"only {len(seen)} of {pods} pods Running after {RUNNING_TIMEOUT} s")
    return [seen[name] - created[name] for name in created]


def idle_usage(pid: int, seconds: float) -> tuple[float, float]:
    """(CPU % of one core over `seconds`, RSS MiB at the end) of the process."""
    process = psutil.Process(pid)
    before, start = process.cpu_times(), time.monotonic()
    time.sleep(seconds)
    after, elapsed = process.cpu_times(), time.monotonic() - start
    busy = (after.user - before.user) + (after.system - before.system)
    return 100.0 * busy / elapsed, process.memory_info().rss / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=30)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("pod_startup.py needs root (bridges, iptables, Docker)", file=sys.stderr)
        return 1
    run = uuid.uuid4().hex[:6]
    api = docker.APIClient(version="auto", timeout=120)
    for spec in (PAUSE, BUSYBOX):
        ensure_image(api, spec)
    bare, sequential = bench_bare(api, args.pods, run)

    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="skbench-"))
        node = f"skbench-{run}"
        settings = {"nodeName": node, "podBridge": f"skbench{run}", "vethPrefix": "skb",
                    "podCIDR": free_pod_cidr(), "podNetwork": "none", "address": "127.0.0.1", "port": free_port(),
                    "podForwardChain": f"KUBE-SKBENCH-{run}-FWD", "podMasqueradeChain": f"KUBE-SKBENCH-{run}-MASQ",
                    "dataDir": os.path.join(tmp, "agent"), "maxPods": max(110, args.pods + 10)}
        config_path = os.path.join(tmp, "kubelet.yaml")
        with open(config_path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(settings, handle)
        config = load(config_path)
        stack.callback(lambda: teardown(config, docker_api=api, iptables=detect(), network=RealHostNetwork()))
        server = ProcessServer(os.path.join(tmp, "server"))
        stack.callback(server.stop)
        endpoint = server.start()
        with open(os.path.join(tmp, "server", "node-token"), encoding="utf-8") as handle:
            token = handle.read().strip()
        agent = subprocess.Popen([sys.executable, "-m", "slimkube.cli", "agent", "--server", endpoint.url, "--token",
                                  token, "--config", config_path], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=stack.enter_context(open(os.path.join(tmp, "agent.log"), "wb")))

        def stop_agent() -> None:
            if agent.poll() is None:
                agent.send_signal(signal.SIGINT)
                try:
                    agent.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()

        stack.callback(stop_agent)
        client = stack.enter_context(RESTClient.from_kubeconfig(endpoint.kubeconfig))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _node_ready(client, node):
            if agent.poll() is not None:
                with open(os.path.join(tmp, "agent.log"), encoding="utf-8", errors="replace") as log:
                    raise RuntimeError(f"the agent exited {agent.returncode}:\n{log.read()[-3000:]}")
            time.sleep(0.2)
        kubelet = bench_kubelet(client, node, args.pods)
        time.sleep(2.0)
        cpu, rss = idle_usage(agent.pid, args.idle_seconds)

    report(args.pods, bare, sequential, kubelet, cpu, rss, args.idle_seconds)
    return 0


def _node_ready(client: RESTClient, node: str) -> bool:
    try:
        conditions = client.get(f"/api/v1/nodes/{node}").get("status", {}).get("conditions") or []
    except Exception:  # noqa: BLE001 - not registered yet
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def report(pods: int, bare: list[float], sequential: float, kubelet: list[float], cpu: float, rss: float,
           idle_seconds: float) -> None:
    def ms(values: list[float], q: float) -> str:
        return f"{percentile(values, q) * 1000:.0f}"

    print(f"# pod start-up, {pods} pods at once, one node ({platform.node()}, nproc {os.cpu_count()}, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')})")
    print("| measurement | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|")
    print(f"| slimkube: POST → Running seen by a watch | {ms(kubelet, .5)} | {ms(kubelet, .99)} | "
          f"{max(kubelet) * 1000:.0f} |")
    print(f"| bare docker: create+start pause+app, all at once | {ms(bare, .5)} | {ms(bare, .99)} | "
          f"{max(bare) * 1000:.0f} |")
    print(f"| bare docker: one pod at a time (mean per pod) | {sequential * 1000:.0f} | | |")
    ratio = percentile(kubelet, .99) / percentile(bare, .99)
    p99 = percentile(kubelet, .99)
    print(f"p99 ratio slimkube / bare docker: {ratio:.2f} (goal ≤ 1.3: {'met' if ratio <= 1.3 else 'NOT met'}); "
          f"p99 {p99:.2f} s (goal ≤ 5 s: {'met' if p99 <= 5 else 'NOT met'}); "
          f"mean {statistics.mean(kubelet) * 1000:.0f} ms vs {statistics.mean(bare) * 1000:.0f} ms")
    print(f"kubelet idle with {pods} pods: CPU {cpu:.1f}% of one core over {idle_seconds:.0f} s, RSS {rss:.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
