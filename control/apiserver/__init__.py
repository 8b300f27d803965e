"""The Kubernetes REST API server (aiohttp): a component over control.storage and the shared base
(control.api, control.apimachinery), in rooms along k8s.io/apiserver's packages, each importing only the
ones below it (an import contract in pyproject.toml):

- server.py — the composition: storage → watch cache → registry → routes, the start-up writes, the loops.
- crd/ — custom resources: their strategy and the controller that serves a CRD once it is established,
  installing its versions into the server's table (the registry's `ServedResources`).
- controlplane/ — what the server keeps in place: bootstrap objects, APIServices, the `kubernetes` endpoints.
- endpoints/ — HTTP: handlers, request parsing, discovery, tables and printers, watch serving, health,
  metrics. openapi/ — the OpenAPI v2/v3 documents and their protobuf form.
- registry/ — the generic store (store.py: create/update/patch/delete with compare-and-swap, knowing no
  kind), the per-kind strategies (registry/strategies/) and the REST storages beside it (binding,
  eviction, component statuses, metrics.k8s.io, service allocators).
- apiextensions/ — the CRD API's rules: structural schemas, CEL, printer-column JSONPath, naming.
- admission/ — one ordered chain of mutating then validating plugins, entered once per write: namespace
  lifecycle, priority, default storage class, the kind's validation, quota last.
- fieldmanager/ — merge/strategic/JSON patch, field sets and managedFields for server-side apply.
- streaming/ — exec/attach/port-forward relayed to the kubelet (WebSocket, SPDY).
- codec/ — JSON, protobuf, strict field decoding. storage/ — watch cache, label and field selection.
  authentication/ — tokens, the cluster CA, kubelet serving certificates.
- resources.py (the static table of built-in resources, and `ServedResources`, one server's table with its
  custom resources) and status.py (API errors as Status objects) — read by all.
"""
