"""What the API server keeps in front of control.storage: the watch cache and selection (upstream:
k8s.io/apiserver/pkg/storage, cacher).
"""
