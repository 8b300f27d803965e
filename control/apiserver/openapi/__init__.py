"""The OpenAPI v2/v3 documents and their protobuf form (upstream: k8s.io/kube-openapi, gnostic)."""
