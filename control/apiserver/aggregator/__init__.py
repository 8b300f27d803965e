"""The aggregation layer (upstream: k8s.io/kube-aggregator): requests for a group-version an APIService
backed by a Service claims are proxied to that Service (`proxy.py`), with the front proxy's identity headers
and client certificate (`certs.py`); a controller keeps each such APIService's `Available` condition and the
discovery documents it serves (`availability.py`). See docs/admission.md#the-aggregation-layer.
"""
