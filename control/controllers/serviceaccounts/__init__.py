"""The service account controller (upstream pkg/controller/serviceaccount)."""
