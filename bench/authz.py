"""What RBAC costs a request: creates and LISTs by a user RBAC allows through one of many bindings, against
the same requests by a `system:masters` member, in the same run on the same server.

Run: `.venv/bin/python bench/authz.py [--roles 1000] [--requests 200] [--rounds 5] [--list-size 50]`.

A real `slimkube server` child process (SQLite, 127.0.0.1; every controller and the scheduler disabled, so
only the API server runs). The admin creates, in namespace `bench`, `--roles` Roles and as many
RoleBindings (each to its own user), and as many ClusterRoles and ClusterRoleBindings (each to its own
user): the policy a big cluster has. The measured user `bench-user` is bound by the last RoleBinding, in
`bench` and in `bench-list`, to a Role allowing create, list and delete of ConfigMaps.

Both identities are reached the same way, through impersonation by the admin token (the impersonation
checks are the admin's, which take the store-free path): `Impersonate-User: bench-admin` +
`Impersonate-Group: system:masters` for the baseline, `Impersonate-User: bench-user` for RBAC. One client,
one request at a time over a kept-alive HTTPS connection. Each round runs `--requests` creates of a small
ConfigMap in `bench`, then `--requests` LISTs of `bench-list` (which holds `--list-size` ConfigMaps), the
two identities alternating request by request so both meet the same load on a shared machine; the figure
per identity and kind is the median latency over all rounds. The ratio is RBAC ÷ masters per request
(goal ≤ 1.1). Last, the authorizer chain alone is timed in this process over the same policy (listed
through the API): µs per create decision for each identity.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server

from control.apiserver.authentication.tokens import UserInfo  # noqa: E402
from control.apiserver.authorization import follower  # noqa: E402
from control.apiserver.authorization.attributes import request_attributes  # noqa: E402
from control.apiserver.authorization.nodegraph import NodeGraph  # noqa: E402
from control.apiserver.authorization.policycache import PolicyCache  # noqa: E402
from control.apiserver.authorization.source import default_chain  # noqa: E402
from control.storage.sqlite import SQLiteStorage  # noqa: E402
from slimkube.controlplane import known_components  # noqa: E402
from tests.support.apiserver import Endpoint, ProcessServer  # noqa: E402

RBAC = "/apis/rbac.authorization.k8s.io/v1"
NAMESPACE, LIST_NAMESPACE, USER = "bench", "bench-list", "bench-user"
MASTERS = {"Impersonate-User": "bench-admin", "Impersonate-Group": "system:masters"}
AS_USER = {"Impersonate-User": USER}


def role(kind: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "rules": rules}


def binding(kind: str, name: str, role_kind: str, role_name: str, user: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


def post(session: requests.Session, endpoint: Endpoint, path: str, body: dict[str, Any],
         headers: dict[str, str] | None = None) -> None:
    answer = session.post(endpoint.url + path, json=body, headers=headers or {}, verify=endpoint.verify, timeout=30)
    if answer.status_code != 201:
        raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:300]}")


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def build_policy(session: requests.Session, endpoint: Endpoint, roles: int) -> None:
    for ns in (NAMESPACE, LIST_NAMESPACE):
        post(session, endpoint, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns}})
    for i in range(roles):
        rules = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": [f"s-{i}"]}]
        post(session, endpoint, f"{RBAC}/clusterroles", role("ClusterRole", f"bench-{i}", rules))
        post(session, endpoint, f"{RBAC}/clusterrolebindings",
             binding("ClusterRoleBinding", f"bench-{i}", "ClusterRole", f"bench-{i}", f"cluster-user-{i}"))
        post(session, endpoint, f"{RBAC}/namespaces/{NAMESPACE}/roles", role("Role", f"bench-{i}", rules))
        post(session, endpoint, f"{RBAC}/namespaces/{NAMESPACE}/rolebindings",
             binding("RoleBinding", f"bench-{i}", "Role", f"bench-{i}", f"user-{i}"))
    configmaps = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "list", "delete"]}]
    for ns in (NAMESPACE, LIST_NAMESPACE):
        post(session, endpoint, f"{RBAC}/namespaces/{ns}/roles", role("Role", "bench-user", configmaps))
        post(session, endpoint, f"{RBAC}/namespaces/{ns}/rolebindings",
             binding("RoleBinding", "bench-user", "Role", "bench-user", USER))


def timed(call: Callable[[], requests.Response], expected: int) -> float:
    start = time.perf_counter()
    answer = call()
    elapsed = time.perf_counter() - start
    if answer.status_code != expected:
        raise RuntimeError(f"{answer.status_code} {answer.text[:300]}")
    return elapsed


def run_round(session: requests.Session, endpoint: Endpoint, tag: str, count: int,
              results: dict[str, dict[str, list[float]]]) -> None:
    """`count` creates by each identity, alternating request by request (both meet the same load), then
    `count` LISTs likewise."""
    identities = (("masters", MASTERS), ("rbac", AS_USER))
    for i in range(count):
        for who, headers in identities:
            results[who]["create"].append(timed(functools.partial(
                session.post, f"{endpoint.url}/api/v1/namespaces/{NAMESPACE}/configmaps",
                json=configmap(f"{tag}-{who}-{i}"), headers=headers, verify=endpoint.verify, timeout=30), 201))
    for _ in range(count):
        for who, headers in identities:
            results[who]["list"].append(timed(functools.partial(
                session.get, f"{endpoint.url}/api/v1/namespaces/{LIST_NAMESPACE}/configmaps", headers=headers,
                verify=endpoint.verify, timeout=30), 200))


def decision_microseconds(endpoint: Endpoint, session: requests.Session, path: str, repeats: int) -> dict[str, float]:
    """The authorizer chain alone, in this process, over the server's policy (listed through the API into a
    PolicyCache): µs per decision for a create by each identity."""
    storage = SQLiteStorage(path)
    for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
        items = session.get(f"{endpoint.url}{RBAC}/{plural}", verify=endpoint.verify, timeout=60).json()["items"]
        for item in items:
            namespace = item["metadata"].get("namespace")
            key = f"/registry/{plural}/{namespace + '/' if namespace else ''}{item['metadata']['name']}"
            storage.create(key, json.dumps(item).encode())
    policy = PolicyCache(storage)
    follower.load([policy], storage)
    chain = default_chain(storage, NodeGraph(), policy)
    out = {}
    for who, user in (("masters", UserInfo("bench-admin", groups=("system:masters",))), ("rbac", UserInfo(USER))):
        attributes = request_attributes(user, "POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {})
        assert chain.authorize(attributes).allowed
        start = time.perf_counter()
        for _ in range(repeats):
            chain.authorize(attributes)
        out[who] = (time.perf_counter() - start) / repeats * 1e6
    storage.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roles", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200, help="creates and LISTs per identity per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--list-size", type=int, default=50)
    args = parser.parse_args()
    print(f"nproc {os.cpu_count()}, Python {platform.python_version()}, {platform.platform()}")
    with tempfile.TemporaryDirectory(prefix="slimkube-bench-") as workdir:
        server = ProcessServer(os.path.join(workdir, "server"),
                               args=("--disable", ",".join(known_components()), "--scheduler-port", "0"))
        endpoint = server.start()
        try:
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {endpoint.token}"
            started = time.monotonic()
            build_policy(session, endpoint, args.roles)
            for i in range(args.list_size):
                post(session, endpoint, f"/api/v1/namespaces/{LIST_NAMESPACE}/configmaps", configmap(f"item-{i}"))
            print(f"policy: {args.roles} Roles + RoleBindings and {args.roles} ClusterRoles + ClusterRoleBindings "
                  f"in {time.monotonic() - started:.1f} s", flush=True)
            warm: dict[str, dict[str, list[float]]] = {"masters": {"create": [], "list": []},
                                                       "rbac": {"create": [], "list": []}}
            run_round(session, endpoint, "warm", 20, warm)  # connection, caches
            results: dict[str, dict[str, list[float]]] = {"masters": {"create": [], "list": []},
                                                          "rbac": {"create": [], "list": []}}
            for r in range(args.rounds):
                run_round(session, endpoint, f"r{r}", args.requests, results)
            decisions = decision_microseconds(endpoint, session, os.path.join(workdir, "policy.db"), 2000)
        finally:
            server.stop()
    print(f"\n{args.roles} Roles/RoleBindings + {args.roles} ClusterRoles/ClusterRoleBindings, "
          f"{args.rounds} rounds x {args.requests} requests per identity and kind, LIST of {args.list_size}:")
    print(f"| {'request':<10} | {'system:masters p50 ms':>22} | {'RBAC user p50 ms':>17} "
          f"| {'ratio (goal <= 1.1)':>20} |")
    print(f"|{'-' * 12}|{'-' * 23}:|{'-' * 18}:|{'-' * 21}:|")
    for kind in ("create", "list"):
        masters = statistics.median(results["masters"][kind]) * 1000
        rbac = statistics.median(results["rbac"][kind]) * 1000
        print(f"| {kind:<10} | {masters:>22.2f} | {rbac:>17.2f} | {rbac / masters:>20.2f} |")
    print(f"\nthe authorizer chain alone, in-process, per create decision: system:masters "
          f"{decisions['masters']:.1f} µs, RBAC user {decisions['rbac']:.1f} µs")


if __name__ == "__main__":
    main()
