"""The in-tree plugins (upstream pkg/scheduler/framework/plugins/): one module per plugin family, and
`registry.py` mapping upstream's plugin names to constructors."""
