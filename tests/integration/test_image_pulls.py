"""Image pulls through a real kubelet from real registries: pulls from the
local registry with and without a secret.

Two throwaway registries (Debian's docker-registry binary, unpacked by install.sh) run as child
processes on free 127.0.0.1 ports with their own config files and storage in tmp dirs: one open, one
with htpasswd auth (the bcrypt entry made with Python's `crypt`, Blowfish method: the registry only takes
bcrypt, and this needs no new package). dockerd treats 127.0.0.0/8 registries as insecure by default, so
plain HTTP works without touching its configuration. slimkube/busybox:1 is tagged into each and pushed
with the docker SDK, and the local tag removed, so a pod's image can only come from the registry.

Checked, through a real API server and kubelet:
- a pod pulls from the open registry with no secret: events Pulling "Pulling image \"x\"" and Pulled
  "Successfully pulled image \"x\" in …", the image is now local; a second pod with IfNotPresent gets
  Pulled "Container image \"x\" already present on machine";
- a pod pulling from the auth registry with no secret shows ErrImagePull, then ImagePullBackOff, with the
  event Failed "Failed to pull image \"x\": …" and BackOff "Back-off pulling image \"x\"";
- the same image with a kubernetes.io/dockerconfigjson imagePullSecret read through the API: Running.
The registries are killed by PID, and every tag and digest reference made here removed by reference, even
when a test fails.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from control.client.errors import NotFound
from control.client.rest import RESTClient
from nodeagent.config import KubeletConfig
from nodeagent.images import BUSYBOX_IMAGE
from nodeagent.kubelet import Kubelet
from nodeagent.network.bridge import delete_bridge
from tests.conftest import TEST_LABEL, unavailable
from tests.support.apiserver import ThreadServer
from tests.support.hostnet import free_pod_cidr
from tests.support.polling import wait_for

NAMESPACE = "default"
REGISTRY_BINARY = "/opt/slimkube/docker-registry/docker-registry"  # where install.sh unpacks it
USER, PASSWORD = "sktest", "pw-" + uuid.uuid4().hex[:8]


def registry_binary() -> str:
    found = REGISTRY_BINARY if os.access(REGISTRY_BINARY, os.X_OK) else shutil.which("docker-registry")
    if found is None:
        unavailable("docker-registry", f"not at {REGISTRY_BINARY} nor on PATH (run ./install.sh)")
    return found


def bcrypt_htpasswd(user: str, password: str) -> str:
    """One htpasswd line with a bcrypt hash ($2b$), the only scheme the registry's htpasswd auth accepts."""
    with warnings.catch_warnings():  # deprecated since 3.11, removed in 3.13 (then: apache2-utils' htpasswd -B)
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    if not hashed or not hashed.startswith("$2"):
        unavailable("bcrypt", "this libcrypt has no Blowfish method")
    return f"{user}:{hashed}\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """One docker-registry child process on 127.0.0.1 with its own config and storage."""

    def __init__(self, binary: str, root: Path, *, htpasswd: str | None = None) -> None:
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        config: dict[str, Any] = {"version": "0.1", "log": {"level": "warn"},
                  "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
                  "http": {"addr": self.host}}
        if htpasswd is not None:
            (root / "htpasswd").write_text(htpasswd)
            config["auth"] = {"htpasswd": {"realm": "sktest", "path": str(root / "htpasswd")}}
        (root / "config.yml").write_text(json.dumps(config))  # JSON is YAML
        self.log = open(root / "registry.log", "wb")  # closed in stop()
        self.process = subprocess.Popen([binary, "serve", str(root / "config.yml")], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.root = root

    def wait_ready(self) -> None:
        def answers() -> bool:
            if self.process.poll() is not None:
                pytest.fail(f"registry exited: {(self.root / 'registry.log').read_text()}")
            try:
                with requests.Session() as session:
                    session.trust_env = False
                    return session.get(f"http://{self.host}/v2/", timeout=1).status_code in (200, 401)
            except requests.RequestException:
                return False
        wait_for(answers, 15, f"registry on {self.host}", interval=0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()


class Setup:
    def __init__(self, client: RESTClient, config: KubeletConfig, open_registry: Registry,
                 auth_registry: Registry, tag: str) -> None:
        self.client = client
        self.config = config
        self.open_image = f"{open_registry.host}/sktest/busybox:{tag}"
        self.auth_image = f"{auth_registry.host}/sktest/busybox:{tag}"
        self.auth_host = auth_registry.host

    def create(self, name: str, image: str, policy: str, **spec: Any) -> None:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"nodeName": self.config.node_name, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "app", "image": image, "imagePullPolicy": policy,
                                         "command": ["sleep", "3600"]}], **spec}}
        self.client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", body)

    def pod(self, name: str) -> dict[str, Any]:
        try:
            return self.client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        except NotFound:
            return {}

    def waiting_reason(self, name: str) -> str:
        for status in (self.pod(name).get("status") or {}).get("containerStatuses") or []:
            return ((status.get("state") or {}).get("waiting") or {}).get("reason") or ""
        return ""

    def running(self, name: str) -> bool:
        statuses = (self.pod(name).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and "running" in (statuses[0].get("state") or {})

    def events(self, name: str) -> list[tuple[str, str, str]]:
        items = self.client.list(f"/api/v1/namespaces/{NAMESPACE}/events").get("items") or []
        return [(e.get("type", ""), e.get("reason", ""), e.get("message", "")) for e in items
                if (e.get("involvedObject") or {}).get("name") == name]


def push(docker_api: Any, image: str, auth: dict[str, str] | None = None) -> None:
    repository, tag = image.rsplit(":", 1)
    docker_api.tag(BUSYBOX_IMAGE, repository, tag=tag)
    for line in docker_api.push(repository, tag=tag, stream=True, decode=True, auth_config=auth):
        if isinstance(line, dict) and line.get("error"):
            pytest.fail(f"pushing {image}: {line['error']}")
    docker_api.remove_image(image)  # the tag only: slimkube/busybox:1 keeps the image


def remove_references(docker_api: Any, prefixes: tuple[str, ...]) -> None:
    """Every tag and digest reference under `prefixes` (our registries' hosts), by reference."""
    for image in docker_api.images():
        for ref in [*(image.get("RepoTags") or ()), *(image.get("RepoDigests") or ())]:
            if ref.startswith(prefixes):
                try:
                    docker_api.remove_image(ref)
                except Exception:  # noqa: BLE001 - gone already with a sibling reference
                    pass


@pytest.fixture(scope="module")
def setup(tmp_path_factory, docker_api, images, iptables) -> Iterator[Setup]:
    binary = registry_binary()
    rid = uuid.uuid4().hex[:6]
    registries: list[Registry] = []
    server = ThreadServer(str(tmp_path_factory.mktemp("apiserver")))
    client: RESTClient | None = None
    kubelet: Kubelet | None = None
    config = KubeletConfig(
        node_name=f"sktest-{rid}", node_ip="127.0.0.1", address="127.0.0.1", port=0,
        data_dir=str(tmp_path_factory.mktemp("kubelet")), pod_cidr=free_pod_cidr(), pod_bridge=f"sktest{rid}"[:15],
        pod_network="none", veth_prefix="sktest", pod_forward_chain=f"KUBE-SKTEST-{rid}-FWD",
        pod_masquerade_chain=f"KUBE-SKTEST-{rid}-MASQ", sync_frequency=5.0, node_status_update_frequency=5.0,
        pleg_relist_period=0.25, crash_loop_backoff_initial=1.0, crash_loop_backoff_max=4.0)
    try:
        open_registry = Registry(binary, tmp_path_factory.mktemp("registry-open"))
        registries.append(open_registry)
        auth_registry = Registry(binary, tmp_path_factory.mktemp("registry-auth"),
                                 htpasswd=bcrypt_htpasswd(USER, PASSWORD))
        registries.append(auth_registry)
        for registry in registries:
            registry.wait_ready()
        client = RESTClient.from_kubeconfig(server.start().kubeconfig)
        state = Setup(client, config, open_registry, auth_registry, rid)
        push(docker_api, state.open_image)
        push(docker_api, state.auth_image, {"username": USER, "password": PASSWORD,
                                            "serveraddress": auth_registry.host})
        kubelet = Kubelet(config, client, extra_labels={TEST_LABEL: rid}, oom_score_adj=None)
        kubelet.start()
        yield state
    finally:
        try:
            if client is not None and kubelet is not None:
                for pod in client.list(f"/api/v1/namespaces/{NAMESPACE}/pods").get("items") or []:
                    try:
                        client.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}",
                                      grace_period_seconds=1)
                    except NotFound:
                        pass
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and client.list(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]:
                    time.sleep(0.3)
        finally:
            if kubelet is not None:
                kubelet.stop()
                if kubelet.parts is not None:
                    kubelet.parts.network.manager.remove_host_rules()
            for entry in docker_api.containers(all=True, filters={"label": f"{TEST_LABEL}={rid}"}):
                docker_api.remove_container(entry["Id"], force=True)
            delete_bridge(config.pod_bridge)
            for registry in registries:
                registry.stop()
            remove_references(docker_api, tuple(f"{r.host}/" for r in registries))
            if client is not None:
                client.close()
            server.stop()


def test_pull_from_an_open_registry_then_already_present(setup: Setup, docker_api) -> None:
    image = setup.open_image
    setup.create("open-pull", image, "IfNotPresent")
    wait_for(lambda: setup.running("open-pull"), 30, lambda: f"open-pull running: {setup.pod('open-pull')}",
             interval=0.2)
    events = setup.events("open-pull")
    assert ("Normal", "Pulling", f'Pulling image "{image}"') in events, events
    pulled = f'Successfully pulled image "{image}" in '
    assert any(kind == "Normal" and reason == "Pulled" and message.startswith(pulled)
               for kind, reason, message in events), events
    assert docker_api.inspect_image(image)["Id"]
    setup.create("open-present", image, "IfNotPresent")
    wait_for(lambda: setup.running("open-present"), 30, "open-present running", interval=0.2)
    assert ("Normal", "Pulled", f'Container image "{image}" already present on machine') \
        in setup.events("open-present")


def test_auth_registry_needs_the_pull_secret(setup: Setup) -> None:
    image = setup.auth_image
    setup.create("auth-nosecret", image, "Always")
    seen: set[str] = set()

    def backing_off() -> bool:
        seen.add(setup.waiting_reason("auth-nosecret"))
        return {"ErrImagePull", "ImagePullBackOff"} <= seen
    wait_for(backing_off, 30, lambda: f"ErrImagePull then ImagePullBackOff (seen {seen})", interval=0.1)
    wait_for(lambda: any(r == "BackOff" for _, r, _ in setup.events("auth-nosecret")), 10, "BackOff event",
             interval=0.2)
    events = setup.events("auth-nosecret")
    failed = [m for kind, reason, m in events if kind == "Warning" and reason == "Failed"
              and m.startswith(f'Failed to pull image "{image}": ')]
    assert failed and any("auth" in m.lower() for m in failed), events
    assert ("Warning", "Failed", "Error: ErrImagePull") in events
    assert ("Normal", "BackOff", f'Back-off pulling image "{image}"') in events
    assert not setup.running("auth-nosecret")

    config = {"auths": {setup.auth_host: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}}
    setup.client.create(f"/api/v1/namespaces/{NAMESPACE}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()}})
    setup.create("auth-secret", image, "Always", imagePullSecrets=[{"name": "regcred"}])
    wait_for(lambda: setup.running("auth-secret"), 30,
             lambda: f"auth-secret running: {setup.pod('auth-secret')} {setup.events('auth-secret')}", interval=0.2)
    assert any(reason == "Pulled" and message.startswith(f'Successfully pulled image "{image}"')
               for _, reason, message in setup.events("auth-secret"))
