"""The kubelet's status manager side: what the API should say about each pod (`generate`, pure), kept
apart from writing it through the pods/status subresource (upstream pkg/kubelet/status)."""
