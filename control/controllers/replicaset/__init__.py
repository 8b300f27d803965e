"""The ReplicaSet and ReplicationController controller (upstream pkg/controller/replicaset)."""
