"""The node lifecycle controller (upstream pkg/controller/nodelifecycle)."""
