"""Regenerate `swagger.json.gz`, the OpenAPI facts control/apiserver/openapi/spec.py serves (SOURCE.md says from where).

    python -m control.apiserver.openapi.data.generate SWAGGER_JSON [OUT]

SWAGGER_JSON is upstream's published OpenAPI v2 document (kube-apiserver's `/openapi/v2` of one release, as
kubernetes-client/python ships it in `kubernetes/swagger.json.unprocessed`). What is kept:

- every definition whose `x-kubernetes-group-version-kind` names a group-version in `GROUP_VERSIONS` (the
  groups slimkube serves or is about to serve), and every definition those reach through `$ref`;
- every path under those group-versions (`/api/v1/...`, `/apis/{group}/{version}/...`) with the shared
  `parameters` they reference, and every definition those paths reach.

openapi/spec.py then narrows this at run time to what the resource table serves, so a group-version listed
here costs only bytes until a resource of it is added to control/apiserver/resources.py.
The output is gzip'd compact JSON with sorted keys, so regenerating from the same input gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from control.apiserver.openapi.spec import refs_below

OUT = Path(__file__).with_name("swagger.json.gz")

GROUP_VERSIONS: tuple[tuple[str, str], ...] = (
    ("", "v1"), ("admissionregistration.k8s.io", "v1"), ("apiextensions.k8s.io", "v1"),
    ("apiregistration.k8s.io", "v1"), ("apps", "v1"), ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"), ("autoscaling", "v1"), ("autoscaling", "v2"), ("batch", "v1"),
    ("certificates.k8s.io", "v1"), ("coordination.k8s.io", "v1"), ("discovery.k8s.io", "v1"),
    ("events.k8s.io", "v1"), ("networking.k8s.io", "v1"), ("node.k8s.io", "v1"), ("policy", "v1"),
    ("rbac.authorization.k8s.io", "v1"), ("scheduling.k8s.io", "v1"), ("storage.k8s.io", "v1"),
)


def _path_group_version(path: str) -> tuple[str, str] | None:
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"]:
        return "", "v1"
    if parts[0] == "apis" and len(parts) >= 3:
        return parts[1], parts[2]
    return None


def select(spec: dict[str, Any], group_versions: tuple[tuple[str, str], ...] = GROUP_VERSIONS) -> dict[str, Any]:
    """The part of `spec` this server can serve: see the module docstring."""
    wanted = set(group_versions)
    definitions: dict[str, Any] = spec["definitions"]
    paths = {path: item for path, item in spec["paths"].items() if _path_group_version(path) in wanted}
    parameter_names = {ref.removeprefix("#/parameters/") for ref in refs_below(paths)
                       if ref.startswith("#/parameters/")}
    parameters = {name: spec["parameters"][name] for name in sorted(parameter_names)}
    roots = {name for name, schema in definitions.items()
             if any((gvk.get("group", ""), gvk.get("version")) in wanted
                    for gvk in schema.get("x-kubernetes-group-version-kind", []))}
    roots |= {ref.removeprefix("#/definitions/") for ref in refs_below([paths, parameters])
              if ref.startswith("#/definitions/")}
    kept: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        kept.add(name)
        todo.extend(ref.removeprefix("#/definitions/") for ref in refs_below(definitions[name])
                    if ref.startswith("#/definitions/"))
    return {"swagger": spec["swagger"], "definitions": {name: definitions[name] for name in sorted(kept)},
            "paths": paths, "parameters": parameters, "security": spec.get("security", []),
            "securityDefinitions": spec.get("securityDefinitions", {})}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    data = json.dumps(select(spec), separators=(",", ":"), sort_keys=True).encode()
    out = Path(argv[2]) if len(argv) == 3 else OUT
    out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{out}: {len(data)} bytes of JSON, {out.stat().st_size} gzip'd", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
