"""The API's kinds: per-kind defaulting and validation, quota counting and the pod QoS class (upstream's
pkg/apis/*/v1 defaults, pkg/apis/*/validation, pkg/quota and pkg/apis/core/helper/qos).

Part of the shared base: the API server applies these on every write, and the kubelet applies the same
defaults and validation to static pods it reads from files, as upstream's kubelet does.
"""
