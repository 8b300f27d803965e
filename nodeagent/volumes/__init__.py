"""Pod volumes on the node: pod_volumes.py sets them up under the pod's directory and tears them down,
atomic_writer.py keeps configMap/secret/downwardAPI files consistent across updates, payloads.py decides
their files, mounts.py turns a container's volumeMounts into Docker binds and tmpfs mounts."""
