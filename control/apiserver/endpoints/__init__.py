"""HTTP: routing, handlers, request parsing, discovery, tables, watch serving, health and metrics (upstream:
k8s.io/apiserver/pkg/endpoints).
"""
