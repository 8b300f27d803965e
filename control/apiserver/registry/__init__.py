"""The generic store and the per-kind strategies and REST storages (upstream: k8s.io/apiserver/pkg/registry,
pkg/registry).
"""
