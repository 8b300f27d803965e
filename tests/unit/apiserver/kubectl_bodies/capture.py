"""Re-capture the request bodies in this directory: run each typed `kubectl create` of COMMANDS with
kubectl 1.33 (protobuf bodies → NAME.pb) and kubectl 1.31 (JSON bodies → NAME.json) at -v=9 against a
throw-away API server, and keep the first POST body each prints. The server's answer does not matter;
the bodies are what the client sends. Run from the repository root:

    PYTHONPATH=. python tests/unit/apiserver/kubectl_bodies/capture.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.apiserver import running_server

HERE = Path(__file__).parent
KUBECTL = {"pb": "/usr/lib/google-cloud-sdk/bin/kubectl.1.33", "json": "/usr/lib/google-cloud-sdk/bin/kubectl.1.31"}
COMMANDS = {
    "deployment": ["create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80"],
    "service": ["create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443"],
    "job": ["create", "job", "once", "--image=busybox", "--", "echo", "hi"],
    "cronjob": ["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--restart=OnFailure"],
    "serviceaccount": ["create", "serviceaccount", "robot"],
    "quota": ["create", "quota", "small", "--hard=pods=3,requests.cpu=500m,requests.memory=1Gi",
              "--scopes=NotTerminating"],
    "secret": ["create", "secret", "generic", "creds", "--from-literal=user=admin", "--type=Opaque"],
    "tls": ["create", "secret", "docker-registry", "pull", "--docker-server=r.example", "--docker-username=u",
            "--docker-password=p"],
    "role": ["create", "role", "reader", "--verb=get,list", "--resource=pods,deployments.apps"],
    "rolebinding": ["create", "rolebinding", "read", "--role=reader", "--serviceaccount=default:robot"],
    "ingress": ["create", "ingress", "web", "--rule=a.example/=web:80,tls=cert", "--class=nginx"],
    "token": ["create", "token", "robot", "--duration=10m", "--audience=api"],
    "pdb": ["create", "poddisruptionbudget", "pdb", "--selector=app=web", "--min-available=0"],
}
HEXLINE = re.compile(r"^\s*[0-9a-f]{8}  ((?:[0-9a-f]{2} {1,2}){1,16})")


def first_body(stderr: str) -> bytes | None:
    """The first "Request Body" klog prints: a hex dump for binary bodies, a quoted string for text."""
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if "Request Body: " in line:  # kubectl 1.31 and older print text bodies as they are
            return line.split("Request Body: ", 1)[1].encode()
        if '"Request Body"' not in line:
            continue
        if "body=<" not in line:
            quoted = line.split("body=", 1)[1]
            return bytes(quoted[1:-1], "utf-8").decode("unicode_escape").encode("latin-1")
        data = bytearray()
        for dump in lines[index + 1:]:
            match = HEXLINE.match(dump)
            if not match:
                break
            data += bytes.fromhex(match.group(1).replace(" ", ""))
        return bytes(data) or None
    return None


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, running_server(tmp) as endpoint:
        for suffix, binary in KUBECTL.items():
            for name, command in COMMANDS.items():
                result = subprocess.run([binary, f"--kubeconfig={endpoint.kubeconfig}", f"--cache-dir={tmp}/c",
                                         "-n", "default", "-v=9", *command], capture_output=True, text=True,
                                        env={**os.environ, "HOME": tmp}, timeout=60)
                body = first_body(result.stderr)
                if body is None:
                    print(f"{name}.{suffix}: no request body", file=sys.stderr)
                    continue
                (HERE / f"{name}.{suffix}").write_bytes(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
