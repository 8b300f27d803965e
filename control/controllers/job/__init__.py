"""The Job controller (upstream pkg/controller/job)."""
