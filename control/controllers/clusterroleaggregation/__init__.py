"""The ClusterRole aggregation controller (upstream pkg/controller/clusterroleaggregation)."""
