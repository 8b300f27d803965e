"""Admission: the plugins a write passes before it reaches storage (upstream: k8s.io/apiserver/pkg/admission,
plugin/pkg/admission).
"""
