"""The disruption controller: PodDisruptionBudget status (upstream pkg/controller/disruption)."""
