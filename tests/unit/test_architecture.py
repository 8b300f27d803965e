"""The layer contracts of pyproject.toml's [tool.importlinter] hold for the tree, and a forbidden import
breaks them: composition root (slimkube) → components (API server, controllers, kubelet, proxy; none
importing another, only the API server reaching storage) → shared base (client, api, apimachinery, util),
with no import cycle inside the shared base and API validation in its own layers (kind table → API group
modules → pod checks → primitives). What import-linter cannot see is checked here from the syntax trees:
no module imports another's private (`_name`) helpers, and the shared base imports only at module level,
so a cycle cannot hide in a function body.

The negative cases run import-linter over a copy of the packages with one import added, so the test
shows the contracts are live, not just that today's tree happens to pass.

The kubelet's runtime boundary is checked the same way: no method of the runtime takes an API object
(a parameter named pod/container/spec, or any mapping), and a class that does is caught.
"""

from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
import sys
import typing
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("slimkube", "control", "nodeagent", "proxy", "clusterdns")
SHARED_BASE = ("control/api", "control/apimachinery", "control/client", "control/util")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports in `tree`; it reads the pyproject.toml there and imports the packages from there."""
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(command), "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"}, check=False)


def test_the_tree_keeps_every_contract():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture
def copy_of_tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize("module,added,message", [
    pytest.param("proxy/model.py", "from nodeagent import pleg", "proxy is not allowed to import nodeagent",
                 id="component-imports-component"),
    pytest.param("clusterdns/records.py", "import nodeagent.pleg", "clusterdns is not allowed to import nodeagent",
                 id="dns-imports-kubelet"),
    pytest.param("nodeagent/pleg.py", "import control.apiserver.registry.store",
                 "nodeagent is not allowed to import control.apiserver", id="kubelet-imports-apiserver"),
    pytest.param("control/client/rest.py", "from control.controllers import manager",
                 "control.client is not allowed to import control.controllers", id="base-imports-component"),
    pytest.param("control/apiserver/status.py", "import slimkube.cli",
                 "control.apiserver is not allowed to import slimkube", id="component-imports-root"),
    pytest.param("control/apimachinery/labels.py", "import control.client.rest",
                 "control.apimachinery is not allowed to import control.client", id="base-imports-upward"),
    pytest.param("control/apiserver/registry/store.py", "from control.apiserver.endpoints import handlers",
                 "control.apiserver.registry is not allowed to import control.apiserver.endpoints",
                 id="registry-imports-endpoints"),
    pytest.param("control/apiserver/codec/jsonwire.py", "from control.apiserver.registry import store",
                 "control.apiserver.codec is not allowed to import control.apiserver.registry",
                 id="codec-imports-registry"),
    pytest.param("control/controllers/manager.py", "from control.storage import sqlite",
                 "control.controllers is not allowed to import control.storage", id="controller-reads-store"),
    pytest.param("control/controllers/daemonset/decisions.py", "from control.controllers.deployment import util",
                 "control.controllers.daemonset is not allowed to import control.controllers.deployment",
                 id="controller-imports-controller"),
    pytest.param("control/controllers/ttlafterfinished/controller.py",
                 "import control.controllers.garbagecollector.graph",
                 "control.controllers.ttlafterfinished is not allowed to import control.controllers.garbagecollector",
                 id="last-controller-imports-controller"),
    pytest.param("control/controllers/shared/history.py", "from control.controllers.deployment import util",
                 "control.controllers.shared is not allowed to import control.controllers.deployment",
                 id="shared-imports-controller"),
    pytest.param("control/api/validation/networking.py", "from control.api.validation import apps",
                 "control.api.validation.networking is not allowed to import control.api.validation.apps",
                 id="validation-group-imports-group"),
    pytest.param("control/api/validation/primitives.py", "import control.api.validation.core",
                 "control.api.validation.primitives is not allowed to import control.api.validation.core",
                 id="validation-primitives-import-group"),
    pytest.param("control/api/priority.py", "import control.api.validation.pods",
                 "No cycles are allowed in control.api.", id="shared-base-cycle"),
])
def test_a_forbidden_import_breaks_a_contract(copy_of_tree: Path, module: str, added: str, message: str):
    target = copy_of_tree / module
    target.write_text(target.read_text() + f"\n{added}\n")
    result = _lint_imports(copy_of_tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in " ".join(result.stdout.split())  # the report wraps long module names


# ---- the kubelet's runtime boundary ----

_API_OBJECT_NAMES = {"pod", "container", "spec", "obj"}


def _takes_wire_data(hint: object) -> bool:
    """Whether an annotation is (or unions in) a Mapping or dict: how an API object is typed here."""
    origin = typing.get_origin(hint) or hint
    if origin in (dict, Mapping, MutableMapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        return True
    return any(_takes_wire_data(arg) for arg in typing.get_args(hint))


def _api_object_parameters(cls: type) -> list[str]:
    """`method(parameter)` for every public method of `cls` that takes a pod, a container spec or any
    mapping of wire data."""
    found = []
    for name, method in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        hints = typing.get_type_hints(method)
        for parameter in list(inspect.signature(method).parameters)[1:]:
            if parameter in _API_OBJECT_NAMES or _takes_wire_data(hints.get(parameter)):
                found.append(f"{cls.__name__}.{name}({parameter})")
    return found


def test_no_runtime_method_takes_an_api_object():
    """The runtime (its Protocols and the Docker runtime) is given CRI-shaped records only: what a pod
    means for a sandbox or a container is decided in the kubelet's sync layer."""
    from nodeagent.runtime.docker import DockerRuntime
    from nodeagent.runtime.interface import Runtime, StreamingRuntime

    for cls in (Runtime, StreamingRuntime, DockerRuntime):
        assert _api_object_parameters(cls) == [], cls


def test_the_runtime_check_sees_a_pod_parameter():
    class Leaky:
        def run_sandbox(self, pod: dict[str, Any]) -> str: ...

        def create_container(self, sandbox_id: str, config: Mapping[str, Any] | None) -> str: ...

        def logs(self, container: str) -> bytes: ...

    assert _api_object_parameters(Leaky) == ["Leaky.create_container(config)", "Leaky.logs(container)",
                                             "Leaky.run_sandbox(pod)"]


def _trees(*folders: str) -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path)))
            for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def test_no_module_imports_another_modules_private_names():
    found = [f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}"
             for path, tree in _trees(*PACKAGES) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []


def test_the_shared_base_imports_only_at_module_level():
    found = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for path, tree in _trees(*SHARED_BASE) for function in ast.walk(tree)
             if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
             for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]
    assert found == []


CUSTOM_STRATEGY = "CustomResourceStrategy"
CRD_PACKAGE = ROOT / "control" / "apiserver" / "crd"


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def class_checks(source: str, class_name: str) -> list[int]:
    """Lines of `source` that check an object's class against `class_name`: isinstance/issubclass with it,
    or `type(x)` compared with it."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2
                and class_name in _names_in(node.args[1])):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            calls_type = any(isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "type"
                             for s in sides)
            if calls_type and any(class_name in _names_in(s) for s in sides if not isinstance(s, ast.Call)):
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("source,found", [
    pytest.param("if isinstance(s, CustomResourceStrategy): pass", [1], id="isinstance"),
    pytest.param("ok = isinstance(s, (Strategy, crd.CustomResourceStrategy))", [1], id="isinstance-tuple"),
    pytest.param("x = 1\nif type(s) is CustomResourceStrategy: pass", [2], id="type-is"),
    pytest.param("if isinstance(s, Strategy) and s.list_kind: pass", [], id="other-class"),
])
def test_class_checks_finds_checks_on_the_class(source: str, found: list[int]):
    assert class_checks(source, CUSTOM_STRATEGY) == found


def test_only_the_crd_package_checks_the_custom_resource_strategy_class():
    """Handlers, tables and the store ask a strategy through its methods (list kind, printer columns,
    scale); only control/apiserver/crd/ knows the custom-resource strategy's class."""
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if CRD_PACKAGE in path.parents:
                continue
            for line in class_checks(path.read_text(), CUSTOM_STRATEGY):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert not offenders, f"{CUSTOM_STRATEGY} class checked outside {CRD_PACKAGE.relative_to(ROOT)}: {offenders}"
