"""What auditing and encryption at rest cost a request: ConfigMap creates and GETs against a plain server, one
auditing every request at RequestResponse to a JSON-lines file, and one encrypting ConfigMaps with aesgcm, in
the same run.

Run: `.venv/bin/python bench/hardening.py [--requests 300] [--rounds 3]`.

Three real `slimkube server` child processes (SQLite, 127.0.0.1, every controller and the scheduler disabled),
started with the flags an operator passes (`--audit-policy-file`/`--audit-log-path`,
`--encryption-provider-config`). One client, one request at a time over a kept-alive HTTPS connection per
server; each round runs `--requests` creates of a small ConfigMap and as many GETs of one, the three servers
alternating request by request so all meet the same load on a shared machine. The figure per server and kind
is the median latency over all rounds; the ratio is against the plain server (goal ≤ 1.2 for each).
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tests.support` is not installed; the bench reuses its server

from slimkube.controlplane import known_components  # noqa: E402
from tests.support.apiserver import Endpoint, ProcessServer  # noqa: E402

DISABLE = ("--disable", ",".join(known_components()), "--scheduler-port", "0")
CMS = "/api/v1/namespaces/default/configmaps"


def flags(work: Path) -> dict[str, tuple[str, ...]]:
    policy = work / "policy.yaml"
    policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                      "rules": [{"level": "RequestResponse"}]}))
    encryption = work / "encryption.yaml"
    encryption.write_text(yaml.safe_dump({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
        "resources": [{"resources": ["configmaps"], "providers": [
            {"aesgcm": {"keys": [{"name": "k1", "secret": base64.b64encode(b"k" * 32).decode()}]}}]}]}))
    return {"plain": (), "audit": ("--audit-policy-file", str(policy), "--audit-log-path", str(work / "audit.log")),
            "encryption": ("--encryption-provider-config", str(encryption))}


def timed(api: Endpoint, method: str, path: str, **kwargs: object) -> float:
    start = time.perf_counter()
    response = api.request(method, path, **kwargs)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    if response.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hardening-") as tmp:
        work = Path(tmp)
        servers = {name: ProcessServer(str(work / name), args=(*DISABLE, *extra))
                   for name, extra in flags(work).items()}
        try:
            apis = {name: server.start() for name, server in servers.items()}
            for api in apis.values():
                timed(api, "POST", CMS, json={"metadata": {"name": "probe"}, "data": {"k": "v"}})
            samples: dict[tuple[str, str], list[float]] = {(n, k): [] for n in apis for k in ("create", "get")}
            for _ in range(args.rounds):
                for _ in range(args.requests):
                    body = {"metadata": {"name": f"cm-{uuid.uuid4().hex[:10]}"}, "data": {"key": "value" * 20}}
                    for name, api in apis.items():
                        samples[name, "create"].append(timed(api, "POST", CMS, json=body))
                for _ in range(args.requests):
                    for name, api in apis.items():
                        samples[name, "get"].append(timed(api, "GET", f"{CMS}/probe"))
        finally:
            for server in servers.values():
                server.stop()
    print(f"requests {args.requests} × rounds {args.rounds}, one client per server, median ms")
    print("| kind   | plain | audit (RequestResponse) | ratio | encryption (aesgcm) | ratio |")
    print("|--------|------:|------:|------:|------:|------:|")
    for kind in ("create", "get"):
        base = statistics.median(samples["plain", kind])
        audit = statistics.median(samples["audit", kind])
        encrypted = statistics.median(samples["encryption", kind])
        print(f"| {kind:6} | {base * 1000:5.2f} | {audit * 1000:5.2f} | {audit / base:4.2f} | "
              f"{encrypted * 1000:5.2f} | {encrypted / base:4.2f} |")


if __name__ == "__main__":
    main()
