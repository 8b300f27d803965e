"""The taint eviction controller (upstream pkg/controller/tainteviction)."""
