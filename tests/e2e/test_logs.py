"""`kubectl logs` on the shared `up --nodes 3`, with the real kubectl 1.33 (and 1.20 for
the basics): -f receives lines as the container prints them and ends when the container does, --tail,
--since, --since-time, --timestamps (RFC3339Nano), --limit-bytes, -c and the error without it,
--all-containers, --previous after a restart and its error when there is none, the error for a container
that is waiting to start; and the kubelet's log rotation settings on the Docker container's LogConfig.
The pods are spread over the three nodes, so the API server relays from kubelets in other namespaces too.
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from control.apimachinery.meta import parse_timestamp
from control.client.errors import ApiError
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)

IMAGE = "slimkube/busybox:1"
COUNTER = "i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.2; done"
# exits 1 after printing "run 1"; the restarted instance prints "run 2" and stays (an emptyDir counts runs)
CRASH_ONCE = ("n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo run $n; "
              "if [ $n -ge 2 ]; then exec sleep 3600; fi; sleep 0.5; exit 1")


def _pod(name: str, node: str, containers: list[dict], **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": containers, **spec}}


def _sh(name: str, script: str, **extra: object) -> dict:
    return {"name": name, "image": IMAGE, "command": ["sh", "-c", script], **extra}


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^line-(\d+)$", text, re.M)]


def _lines_of(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """kubectl's stdout line by line as it arrives (None at its end), read on a thread."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_kubectl_logs(workload_cluster: RunningCluster, cluster_namespace: str, tmp_path: Path,
                      docker_api: object) -> None:
    client, ns, nodes = workload_cluster.client, cluster_namespace, workload_cluster.names
    pods = [
        _pod("counter", nodes[1], [_sh("count", COUNTER)]),
        _pod("two", nodes[2], [_sh("a", "echo from-a; exec sleep 3600"), _sh("b", "echo from-b; exec sleep 3600")]),
        _pod("crash", nodes[0], [_sh("crash", CRASH_ONCE, volumeMounts=[{"name": "data", "mountPath": "/data"}])],
             volumes=[{"name": "data", "emptyDir": {}}]),
        _pod("finite", nodes[2], [_sh("f", "sleep 3; for i in 1 2 3 4 5; do echo n-$i; sleep 0.3; done")],
             restartPolicy="Never"),
        _pod("waiting", nodes[0], [{"name": "w", "image": "slimkube/absent:1", "imagePullPolicy": "Never"}]),
    ]
    for pod in pods:
        client.create(f"/api/v1/namespaces/{ns}/pods", pod)
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path / "cache"))
    old = Kubectl(KUBECTLS["1.20"], workload_cluster.kubeconfig, str(tmp_path / "cache-1.20"))

    def logs(*args: str, check: bool = True, tool: Kubectl = kubectl) -> subprocess.CompletedProcess[str]:
        return tool.run("logs", "-n", ns, *args, check=check)

    # -f on a container that ends: every line, then kubectl exits by itself
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/finite", timeout=60)
    finite = kubectl.popen("logs", "-n", ns, "-f", "finite")
    out, err = finite.communicate(timeout=20)
    assert finite.returncode == 0 and out == "".join(f"n-{i}\n" for i in range(1, 6)), err

    # -f on a running container: new lines arrive while kubectl runs, as they are printed
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/counter", timeout=60)
    follow = kubectl.popen("logs", "-n", ns, "-f", "--tail=1", "counter")
    try:
        lines = _lines_of(follow)
        first = lines.get(timeout=10)
        assert first is not None and first.startswith("line-")
        started, seen = time.monotonic(), [int(first.strip().split("-")[1])]
        while len(seen) < 15:
            line = lines.get(timeout=5)
            assert line is not None, "the followed log ended while the container runs"
            seen.append(int(line.strip().split("-")[1]))
        assert seen == list(range(seen[0], seen[0] + 15))
        # the last lines were printed after the first arrived: ~0.2 s apart, so not one buffered burst
        assert time.monotonic() - started > 1.0
    finally:
        follow.kill()
        follow.wait(timeout=10)

    wait_for(lambda: len(_numbers(logs("counter").stdout)) >= 25, 20, "25 lines of counter")
    everything = _numbers(logs("counter").stdout)
    tail = _numbers(logs("counter", "--tail=2").stdout)
    assert len(tail) == 2 and tail[1] == tail[0] + 1 and tail[0] >= everything[-1] - 1
    assert _numbers(logs("counter", "--tail=2", tool=old).stdout)[0] >= tail[0]  # kubectl 1.20
    recent = _numbers(logs("counter", "--since=1s").stdout)
    assert 1 <= len(recent) <= 8 and recent[-1] >= everything[-1], recent  # ~5 lines a second
    limited = logs("counter", "--limit-bytes=10").stdout
    assert limited == "line-1\nlin"

    stamped = logs("counter", "--timestamps", "--tail=5").stdout.splitlines()
    assert len(stamped) == 5
    now = datetime.now(UTC)
    for line in stamped:
        stamp, text = line.split(" ", 1)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z", stamp), stamp  # RFC3339Nano
        assert now - timedelta(seconds=60) < parse_timestamp(stamp) <= now + timedelta(seconds=1)
        assert text.startswith("line-")
    # --since-time: kubectl sends the time to the second (metav1.Time in a query); the log starts at the
    # first line of that second (or at the very line, should the nanoseconds survive)
    since_stamp, since_text = stamped[2].split(" ", 1)
    whole_second = parse_timestamp(since_stamp).replace(microsecond=0)
    first_of_second = next(line.split(" ", 1)[1] for line in logs("counter", "--timestamps").stdout.splitlines()
                           if parse_timestamp(line.split(" ", 1)[0]) >= whole_second)
    since = logs("counter", f"--since-time={since_stamp}").stdout
    assert since.splitlines()[0] in (first_of_second, since_text)
    assert len(_numbers(since)) < len(_numbers(logs("counter").stdout))

    # the kubelet's rotation settings (defaults 10Mi, 5 files) on the Docker container
    found = docker_api.containers(filters={"label": [f"io.kubernetes.pod.namespace={ns}",  # type: ignore[attr-defined]
                                                     "io.kubernetes.pod.name=counter",
                                                     "io.kubernetes.container.name=count"]})
    assert len(found) == 1
    log_config = docker_api.inspect_container(found[0]["Id"])["HostConfig"]["LogConfig"]  # type: ignore[attr-defined]
    assert log_config == {"Type": "json-file", "Config": {"max-size": "10485760", "max-file": "5"}}

    # -c, the error without it, --all-containers
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/two", timeout=60)
    assert logs("two", "-c", "b").stdout == "from-b\n"
    # both containers' logs; kubectl 1.33 does not keep them in spec order (seen "from-b\nfrom-a\n" in CI)
    assert sorted(logs("two", "--all-containers").stdout.splitlines()) == ["from-a", "from-b"]
    refused = logs("two", check=False, tool=old)  # kubectl 1.20 does not pick a default container
    assert refused.returncode != 0
    assert "a container name must be specified for pod two, choose one of: [a b]" in refused.stderr
    with pytest.raises(ApiError) as caught:  # what the API server says to any client
        client.get(f"/api/v1/namespaces/{ns}/pods/two/log")
    assert caught.value.code == 400
    assert caught.value.message == "a container name must be specified for pod two, choose one of: [a b]"
    with pytest.raises(ApiError) as caught:
        client.get(f"/api/v1/namespaces/{ns}/pods/two/log", params={"container": "a", "limitBytes": "0"})
    assert caught.value.code == 422 and "limitBytes: Invalid value: 0: must be greater than 0" in caught.value.message

    # --previous: the dead instance the container GC keeps; none for a container that never restarted
    def restarted_and_running() -> bool:
        statuses = client.get(f"/api/v1/namespaces/{ns}/pods/crash").get("status", {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0].get("restartCount", 0) >= 1 and "running" in statuses[0]["state"]

    wait_for(restarted_and_running, 40, "crash restarted and running")
    assert logs("crash").stdout == "run 2\n"
    assert logs("crash", "--previous").stdout == "run 1\n"
    none = logs("counter", "--previous", check=False)
    assert none.returncode != 0
    assert 'previous terminated container "count" in pod "counter" not found' in none.stderr

    # a container that never started
    waiting = logs("waiting", check=False)
    assert waiting.returncode != 0
    assert 'container "w" in pod "waiting" is waiting to start: ' in waiting.stderr, waiting.stderr
