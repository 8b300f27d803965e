"""The controller manager at scale: `kubectl scale --replicas=1000` of a Deployment on 100 fake nodes with
the scheduler running, beside a bare client creating the same pods through the API.

Run: `.venv/bin/python bench/controllers.py [--replicas 1000] [--nodes 100] [--clients N]` (no root: one
`slimkube server` child process on 127.0.0.1, SQLite, every controller and the scheduler in it).

Fake nodes, as upstream's kubemark "hollow nodes" without their kubelet: `--nodes` Node objects created
through the API (Ready, 32 cpu, 64Gi, 110 pods) whose Leases this process renews, so the node lifecycle
controller keeps them Ready. No container runs: a "fake kubelet" here marks each pod Running and Ready
(status patch with a made-up pod IP) as soon as it sees it bound, so the EndpointSlice controller has
ready endpoints to write.

Same run, same server:
1. bare: `--clients` threads POST `--replicas` pods (the Deployment's pod template, no owner) into their
   own namespace; pods/s = replicas ÷ (last 201 − first POST). The scheduler binds them meanwhile, as it
   binds the controller's pods in step 2.
2. controller: a Deployment of 0 replicas behind a Service exists; the clock starts just before
   `kubectl scale deployment/bench --replicas=N` (real kubectl when found, else the same PATCH of the
   scale subresource); a watch on the namespace's pods notes when each pod is first seen (created) and
   first seen with a nodeName (bound); the EndpointSlices of the Service are polled until they hold N
   ready endpoints. pods/s created = N ÷ (last pod seen − scale).
The ratio is the controller's creates/s ÷ the bare client's. Goal: ≥ 0.5.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server

from control.client.rest import RESTClient  # noqa: E402
from tests.support.apiserver import ProcessServer  # noqa: E402

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
LEASE_SECONDS = 40
RENEW_SECONDS = 10
POD_IPS = ipaddress.ip_network("10.199.0.0/16")  # never routed: only written into pod status
TIMEOUT = 600.0
LABELS = {"app": "bench"}


def pod_template() -> dict[str, Any]:
    return {"metadata": {"labels": dict(LABELS)},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "app", "image": "slimkube/busybox:1", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def micro_time() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


# -- fake nodes -------------------------------------------------------------------------------------------

def create_fake_nodes(client: RESTClient, count: int, clients: int) -> list[str]:
    """Node objects that look Ready to the scheduler and the node lifecycle controller, and their Leases."""
    names = [f"fake-node-{i:04d}" for i in range(count)]

    def create(name: str) -> None:
        client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                     "topology.kubernetes.io/zone": f"zone-{hash(name) % 3}"}}})
        capacity = {"cpu": "32", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        client.patch(f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "fake node of bench/controllers.py",
                            "lastHeartbeatTime": now_rfc3339(), "lastTransitionTime": now_rfc3339()}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}]}})
        client.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": micro_time()}})

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(create, names))
    return names


def renew_leases(client: RESTClient, names: list[str], stop: threading.Event) -> None:
    """The fake nodes' heartbeat, every RENEW_SECONDS, as the kubelet's lease controller does."""
    while not stop.wait(RENEW_SECONDS):
        for name in names:
            client.patch(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}",
                         {"spec": {"renewTime": micro_time()}})


# -- the two ways of creating pods -----------------------------------------------------------------------

def bare_creates(client: RESTClient, namespace: str, replicas: int, clients: int) -> float:
    """pods/s of `clients` threads POSTing `replicas` pods."""
    template = pod_template()

    def create(i: int) -> None:
        client.create(f"/api/v1/namespaces/{namespace}/pods",
                      {"apiVersion": "v1", "kind": "Pod", **template,
                       "metadata": {**template["metadata"], "name": f"bare-{i}"}})

    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(create, range(replicas)))
    return replicas / (time.perf_counter() - began)


class PodTimeline:
    """A watch on the namespace's pods: when each pod was first seen, and first seen bound. Bound pods are
    handed to `on_bound` once (the fake kubelet)."""

    def __init__(self, client: RESTClient, namespace: str, on_bound: Any) -> None:
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self._client, self._namespace, self._on_bound = client, namespace, on_bound
        self._stop = threading.Event()
        revision = client.list(f"/api/v1/namespaces/{namespace}/pods")["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, args=(revision,), daemon=True)
        self._thread.start()

    def _run(self, revision: str) -> None:
        for event in self._client.watch(f"/api/v1/namespaces/{self._namespace}/pods", resource_version=revision,
                                        stop=self._stop):
            if event.type not in ("ADDED", "MODIFIED"):
                continue
            seen = time.perf_counter()
            name = event.object["metadata"]["name"]
            self.created.setdefault(name, seen)
            if event.object["spec"].get("nodeName") and name not in self.bound:
                self.bound[name] = seen
                self._on_bound(event.object)

    def stop(self) -> None:
        self._stop.set()


class FakeKubelet:
    """Marks bound pods Running and Ready, with a pod IP, from a pool of threads."""

    def __init__(self, client: RESTClient, clients: int) -> None:
        self._client = client
        self._pool = ThreadPoolExecutor(clients)
        self._ips = iter(POD_IPS.hosts())
        self._lock = threading.Lock()

    def __call__(self, pod: dict[str, Any]) -> None:
        with self._lock:
            ip = str(next(self._ips))
        self._pool.submit(self._ready, pod["metadata"]["namespace"], pod["metadata"]["name"], ip)

    def _ready(self, namespace: str, name: str, ip: str) -> None:
        stamp = now_rfc3339()
        conditions = [{"type": kind, "status": "True", "lastTransitionTime": stamp}
                      for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled")]
        self._client.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status", {"status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1", "startTime": stamp,
            "conditions": conditions,
            "containerStatuses": [{"name": "app", "image": "slimkube/busybox:1", "imageID": "", "ready": True,
                                   "started": True, "restartCount": 0, "state": {"running": {"startedAt": stamp}}}]}})

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def ready_endpoints(client: RESTClient, namespace: str, service: str) -> int:
    slices = client.list(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                         params={"labelSelector": f"kubernetes.io/service-name={service}"})["items"]
    return sum(1 for piece in slices for endpoint in piece.get("endpoints") or []
               if (endpoint.get("conditions") or {}).get("ready"))


def scale(client: RESTClient, kubeconfig: str, namespace: str, replicas: int) -> str:
    if os.access(KUBECTL, os.X_OK):
        subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "-n", namespace, "scale", "deployment/bench",
                        f"--replicas={replicas}"], check=True, capture_output=True, text=True)
        return "kubectl scale"
    client.patch(f"/apis/apps/v1/namespaces/{namespace}/deployments/bench/scale", {"spec": {"replicas": replicas}})
    return "PATCH deployments/bench/scale"


def wait_until(condition: Any, what: str) -> float:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {TIMEOUT:.0f} s waiting for {what}")
        time.sleep(0.05)
    return time.perf_counter()


def controller_run(client: RESTClient, kubeconfig: str, namespace: str, replicas: int,
                   clients: int) -> dict[str, float | str]:
    client.create(f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "bench"},
        "spec": {"selector": dict(LABELS), "ports": [{"port": 80, "targetPort": 8080}]}})
    client.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench"},
        "spec": {"replicas": 0, "selector": {"matchLabels": dict(LABELS)}, "template": pod_template()}})
    kubelet = FakeKubelet(client, clients)
    timeline = PodTimeline(client, namespace, kubelet)
    try:
        began = time.perf_counter()
        how = scale(client, kubeconfig, namespace, replicas)
        created = wait_until(lambda: len(timeline.created) >= replicas, f"{replicas} pods created")
        bound = wait_until(lambda: len(timeline.bound) >= replicas, f"{replicas} pods bound")
        sliced = wait_until(lambda: ready_endpoints(client, namespace, "bench") >= replicas,
                            f"{replicas} ready endpoints in the Service's EndpointSlices")
    finally:
        timeline.stop()
        kubelet.close()
    last_created = max(timeline.created.values())
    return {"how": how, "created_s": created - began, "bound_s": bound - began, "sliced_s": sliced - began,
            "rate": replicas / (last_created - began)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--clients", type=int, default=16,
                        help="concurrent creating threads of the bare client, and of the fake kubelet")
    args = parser.parse_args()
    print(f"nproc {os.cpu_count()}, Python {platform.python_version()}, {platform.platform()}")
    with ExitStack() as stack:
        workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="slimkube-bench-"))
        server = ProcessServer(os.path.join(workdir, "server"))
        stack.callback(server.stop)
        endpoint = server.start()
        client = stack.enter_context(RESTClient.from_kubeconfig(endpoint.kubeconfig))
        nodes = create_fake_nodes(client, args.nodes, args.clients)
        stop = threading.Event()
        stack.callback(stop.set)
        threading.Thread(target=renew_leases, args=(client, nodes, stop), daemon=True).start()
        for namespace in ("bench-bare", "bench-ctrl"):
            client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": namespace}})
        bare = bare_creates(client, "bench-bare", args.replicas, args.clients)
        print(f"bare: {args.replicas} pods by {args.clients} threads: {bare:.1f} pods/s", flush=True)
        run = controller_run(client, endpoint.kubeconfig, "bench-ctrl", args.replicas, args.clients)
    ratio = float(run["rate"]) / bare
    print(f"\n{args.replicas} replicas on {len(nodes)} fake nodes, scaled by {run['how']}:")
    print(f"| {'measure':<52} | {'value':>10} |")
    print(f"|{'-' * 54}|{'-' * 12}:|")
    print(f"| {'until all pods created, s':<52} | {run['created_s']:>10.1f} |")
    print(f"| {'until all pods bound, s':<52} | {run['bound_s']:>10.1f} |")
    print(f"| {'until the EndpointSlices list all as ready, s':<52} | {run['sliced_s']:>10.1f} |")
    print(f"| {'ReplicaSet controller creates, pods/s':<52} | {run['rate']:>10.1f} |")
    print(f"| {f'bare client ({args.clients} threads) creates, pods/s':<52} | {bare:>10.1f} |")
    print(f"| {'ratio controller / bare (goal >= 0.5)':<52} | {ratio:>10.2f} |")


if __name__ == "__main__":
    main()
