"""End-to-end: CustomResourceDefinitions with the real kubectl 1.33 and a real API server, then a small
operator written with kopf (a test dependency) reconciling a custom object against that server.

What is checked is what a user sees: `kubectl apply` of a CRD, `kubectl wait --for=condition=Established`,
custom objects created with defaults applied and unknown fields pruned, invalid ones refused with
upstream's 422 message, `kubectl get` printing the CRD's printer columns (and `get all` its category),
`kubectl scale` through the scale subresource, strategic merge patch refused (415) while merge and JSON
patches work, several versions (apiVersion rewritten), and `kubectl delete crd` deleting the objects.
kopf needs discovery, list + watch, merge patches of the object and its status, and events; it runs
`--standalone` (no peering CRDs) in a subprocess for at most a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import unavailable
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.support.apiserver import Endpoint, running_server
from tests.support.crd_objects import widget, widget_crd


@pytest.fixture(scope="module")
def crd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("crd-apiserver")), bookmark_seconds=1.0) as endpoint:
        yield endpoint


@pytest.fixture
def k(crd_server: Endpoint, tmp_path: Path) -> Kubectl:
    binary = KUBECTLS["1.33"]
    if not os.access(binary, os.X_OK):
        unavailable("kubectl 1.33", f"{binary} is missing")
    return Kubectl(binary, crd_server.kubeconfig, str(tmp_path / "kube-cache"))


@pytest.fixture
def crd(k: Kubectl) -> Iterator[dict[str, Any]]:
    """The Widget CRD in a group of its own per test, Established; deleted (with its objects) afterwards."""
    group = f"t{uuid.uuid4().hex[:6]}.example.com"
    definition = widget_crd(group=group)
    definition["spec"]["names"]["listKind"] = "WidgetCollection"
    k.run("apply", "-f", "-", input=json.dumps(definition))
    k.run("wait", "--for=condition=Established", f"crd/widgets.{group}", "--timeout=30s")
    k.run("create", "namespace", "widgets", check=False)
    yield definition
    k.run("delete", "crd", f"widgets.{group}", "--ignore-not-found", "--timeout=60s")


def apply(k: Kubectl, obj: dict[str, Any], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    return k.run("apply", "-n", "widgets", "-f", "-", input=yaml.safe_dump(obj), check=check)


def row(table: str, name: str) -> list[str]:
    return next(line.split() for line in table.splitlines() if line.split()[:1] == [name])


def get_json(k: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(k.run("get", "-n", "widgets", *args, "-o", "json").stdout)


def test_custom_objects_with_kubectl(k: Kubectl, crd: dict[str, Any], crd_server: Endpoint) -> None:
    group = crd["spec"]["group"]
    resource = f"widgets.{group}"
    apply(k, widget("small-one", api_version=f"{group}/v1", size="small"))
    created = get_json(k, resource, "small-one")
    assert created["spec"] == {"size": "small", "replicas": 1, "maxReplicas": 10, "color": "blue"}  # defaults
    assert created["metadata"]["generation"] == 1
    # no fieldValidation asked for: unknown fields are pruned (kubectl 1.33 itself asks for Strict)
    posted = crd_server.request("POST", f"/apis/{group}/v1/namespaces/widgets/widgets",
                                json={**widget("pruned", api_version=f"{group}/v1", size="small", junk="x"),
                                      "extra": {"top": "level"}})
    assert posted.status_code == 201
    assert "junk" not in posted.json()["spec"] and "extra" not in posted.json()
    assert 'unknown field \\"spec.junk\\"' in posted.headers.get("Warning", "")  # the published schema at work
    strict = crd_server.request("POST", f"/apis/{group}/v1/namespaces/widgets/widgets?fieldValidation=Strict",
                                json=widget("strict", api_version=f"{group}/v1", size="small", junk="x"))
    assert strict.status_code == 400 and 'unknown field "spec.junk"' in strict.json()["message"]
    explained = k.run("explain", "widgets.spec.size", f"--api-version={group}/v1").stdout
    assert "FIELD: size" in explained and "<string>" in explained
    assert "junk" not in get_json(k, resource, "pruned")["spec"]
    listed = crd_server.request("GET", f"/apis/{group}/v1/namespaces/widgets/widgets").json()
    assert (listed["kind"], listed["apiVersion"]) == ("WidgetCollection", f"{group}/v1")

    refused = apply(k, widget("bad", api_version=f"{group}/v1", size="huge", replicas=-1), check=False)
    assert refused.returncode != 0
    assert 'The Widget "bad" is invalid: \n' in refused.stderr  # kubectl prints the causes as a list
    assert '* spec.size: Unsupported value: "huge": supported values: "small", "large"\n' in refused.stderr
    assert ("* spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0\n"
            in refused.stderr)
    answer = crd_server.request("POST", f"/apis/{group}/v1/namespaces/widgets/widgets",
                                json=widget("bad", api_version=f"{group}/v1", size="huge"))
    assert answer.status_code == 422
    assert answer.json()["message"] == (f'Widget.{group} "bad" is invalid: spec.size: Unsupported value: "huge": '
                                        'supported values: "small", "large"')
    assert answer.json()["details"]["causes"] == [{"reason": "FieldValueNotSupported", "field": "spec.size",
                                                   "message": 'Unsupported value: "huge": supported values: '
                                                              '"small", "large"'}]
    cel_refused = apply(k, widget("greedy", api_version=f"{group}/v1", size="small", replicas=20), check=False)
    assert 'spec: Invalid value: "object": replicas must not exceed maxReplicas' in cel_refused.stderr

    table = k.run("get", "-n", "widgets", resource).stdout
    assert table.split("\n")[0].split() == ["NAME", "SIZE", "REPLICAS", "AGE"]
    assert row(table, "small-one")[:3] == ["small-one", "small", "1"]
    wide = k.run("get", "-n", "widgets", resource, "-o", "wide").stdout
    assert wide.split("\n")[0].split() == ["NAME", "SIZE", "REPLICAS", "COLOR", "AGE"]
    assert "small-one" in k.run("get", "-n", "widgets", "all").stdout  # category "all"

    scaled = k.run("scale", "-n", "widgets", f"{resource}/small-one", "--replicas=3")
    assert "scaled" in scaled.stdout
    assert get_json(k, resource, "small-one")["spec"]["replicas"] == 3
    scale = json.loads(k.run("get", "--raw", f"/apis/{group}/v1/namespaces/widgets/widgets/small-one/scale").stdout)
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 3)

    k.run("patch", "-n", "widgets", resource, "small-one", "--subresource=status", "--type=merge",
          "-p", '{"status": {"replicas": 3, "selector": "app=small-one"}, "spec": {"size": "large"}}')
    after_status = get_json(k, resource, "small-one")
    assert after_status["status"] == {"replicas": 3, "selector": "app=small-one"}
    assert after_status["spec"]["size"] == "small" and after_status["metadata"]["generation"] == 2

    strategic = k.run("patch", "-n", "widgets", resource, "small-one", "-p", '{"spec": {"color": "red"}}', check=False)
    assert strategic.returncode != 0 and "application/strategic-merge-patch+json is not supported" in strategic.stderr
    k.run("patch", "-n", "widgets", resource, "small-one", "--type=json",
          "-p", '[{"op": "replace", "path": "/spec/color", "value": "red"}]')
    beta = get_json(k, f"widgets.v1beta1.{group}", "small-one")
    assert beta["apiVersion"] == f"{group}/v1beta1" and beta["spec"]["color"] == "red"

    service = json.loads(k.run("get", "apiservice", f"v1.{group}", "-o", "json").stdout)
    assert service["spec"]["groupPriorityMinimum"] == 1000 and service["status"]["conditions"][0]["reason"] == "Local"
    discovery = json.loads(k.run("get", "--raw", f"/apis/{group}/v1").stdout)
    entry = next(r for r in discovery["resources"] if r["name"] == "widgets")
    assert entry["shortNames"] == ["wd"] and entry["categories"] == ["all"]


def test_deleting_the_crd_deletes_its_objects(k: Kubectl, crd: dict[str, Any]) -> None:
    group = crd["spec"]["group"]
    for name in ("one", "two"):
        apply(k, widget(name, api_version=f"{group}/v1", size="small"))
    started = time.monotonic()
    k.run("delete", "crd", f"widgets.{group}", "--timeout=60s")
    assert time.monotonic() - started < 30
    assert k.run("get", "crd", f"widgets.{group}", check=False).returncode != 0
    assert group not in k.run("api-versions").stdout
    assert k.run("get", "apiservice", f"v1.{group}", check=False).returncode != 0
    # created again, the CRD starts empty: the old objects are gone from storage, not just unserved
    k.run("apply", "-f", "-", input=json.dumps(crd))
    k.run("wait", "--for=condition=Established", f"crd/widgets.{group}", "--timeout=30s")
    assert "No resources found" in k.run("get", "-n", "widgets", f"widgets.{group}").stderr


OPERATOR = textwrap.dedent('''
    import kopf
    import kubernetes

    GROUP = {group!r}

    @kopf.on.startup()
    def startup(**_):
        kubernetes.config.load_kube_config()

    @kopf.on.create(GROUP, "v1", "widgets")
    def create_fn(spec, name, namespace, body, **_):
        config_map = {{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": name + "-config"}},
                      "data": {{"size": spec["size"], "replicas": str(spec["replicas"])}}}}
        kopf.adopt(config_map, owner=body)
        kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, config_map)
        kopf.info(body, reason="ConfigMapCreated", message=name + "-config")
        return {{"configMap": name + "-config"}}
''')


def test_a_kopf_operator_reconciles_a_custom_object(k: Kubectl, crd: dict[str, Any], crd_server: Endpoint,
                                                    tmp_path: Path) -> None:
    try:
        import kopf  # noqa: F401 - only whether the test extra is installed
    except ImportError:
        unavailable("kopf", "pip install -e .[test] installs it")
    group = crd["spec"]["group"]
    script = tmp_path / "operator.py"
    script.write_text(OPERATOR.format(group=group))
    log_path = tmp_path / "operator.log"
    env = {**os.environ, "KUBECONFIG": crd_server.kubeconfig, "HOME": str(tmp_path)}
    with open(log_path, "w") as log:
        operator = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "-n", "widgets",
                                     str(script)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        apply(k, widget("reconciled", api_version=f"{group}/v1", size="large", replicas=2))
        deadline = time.monotonic() + 45
        obj: dict[str, Any] = {}
        while time.monotonic() < deadline and operator.poll() is None:
            obj = get_json(k, f"widgets.{group}", "reconciled")
            if (obj.get("status") or {}).get("create_fn"):
                break
            time.sleep(0.5)
        assert (obj.get("status") or {}).get("create_fn") == {"configMap": "reconciled-config"}, log_path.read_text()
        config_map = get_json(k, "configmap", "reconciled-config")
        assert config_map["data"] == {"size": "large", "replicas": "2"}
        owner = config_map["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Widget", "reconciled", obj["metadata"]["uid"])
        events = get_json(k, "events", "--field-selector", "involvedObject.name=reconciled")["items"]
        assert any(e["reason"] == "ConfigMapCreated" for e in events)
    finally:
        operator.terminate()
        try:
            operator.wait(timeout=20)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.wait(timeout=10)


def test_a_restarted_server_serves_its_custom_resources_at_once(tmp_path: Path) -> None:
    """The first CRD pass runs before the server listens: no 404 window after a restart."""
    definition = widget_crd(group="restart.example.com")
    path = "/apis/restart.example.com/v1/namespaces/default/widgets"
    with running_server(str(tmp_path)) as endpoint:
        assert endpoint.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                json=definition).status_code == 201
        deadline = time.monotonic() + 10
        while endpoint.request("GET", path).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert endpoint.request("POST", path, json=widget("kept", api_version="restart.example.com/v1",
                                                          size="small")).status_code == 201
    with running_server(str(tmp_path)) as endpoint:
        answer = endpoint.request("GET", f"{path}/kept")
        assert answer.status_code == 200 and answer.json()["spec"]["replicas"] == 1
