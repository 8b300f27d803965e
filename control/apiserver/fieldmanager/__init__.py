"""Patch and server-side apply: merge/strategic/JSON patch, field sets, managedFields (upstream:
k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager, sigs.k8s.io/structured-merge-diff).
"""
