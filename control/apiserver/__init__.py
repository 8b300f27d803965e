"""The Kubernetes REST API server (aiohttp) and its pure helpers: a component over control.storage and the
shared base (control.api, control.apimachinery).

Request path: server.py (auth, routing) → handlers.py (HTTP verbs, tables, watch) → registry.py (the
generic store: create/update/patch/delete with compare-and-swap, knowing no kind) → the resource's
strategy in strategies/ (per-kind defaults, validation, prepare-for-create/update, status, allocations,
deletion rules), admission.py (namespace lifecycle, quota) → control.storage. resources.py is the table of
served resources everything reads; bootstrap.py and binding.py are the start-up writes and the pod
binding REST storage beside the generic store.
"""
