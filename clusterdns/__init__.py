"""The cluster DNS: the Kubernetes DNS-based service discovery records, served from informers on each node.

`records.py` (pure: a Service and its EndpointSlices → records) → `zone.py` (the in-memory zone the
informers keep: one lookup per query) → `answer.py` (a query → the authoritative answer, or None for names
to forward) → `server.py` (UDP and TCP on the node's address, `forward.py` for other names) → `app.py`
(informers, the node's `kube-dns` EndpointSlice in `registration.py`, start and stop).
"""
