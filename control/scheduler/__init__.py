"""The scheduler (kube-scheduler): binds pending pods to nodes through the API, with upstream's
filter/score plugin framework (pkg/scheduler). A component: it imports only the shared base.

Parts: `resources.py` (a pod's requests), `nodeinfo.py` (what a node holds), `cache.py` (informer-fed, with
assume/forget), `queue.py` (active/backoff/unschedulable), `framework.py` (plugin protocols, cycle state,
profiles), `plugins/` (filters and scores), `algorithm.py` (the pure `schedule_one`), `scheduler.py` (the
loop: one cycle at a time, binding asynchronously), `metrics.py`.
"""
