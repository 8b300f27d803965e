"""The resource quota controller (upstream pkg/controller/resourcequota)."""
