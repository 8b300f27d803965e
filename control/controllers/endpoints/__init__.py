"""The endpoints controller (upstream pkg/controller/endpoint)."""
