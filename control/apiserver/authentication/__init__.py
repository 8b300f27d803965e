"""Who a request is: bearer tokens, the cluster CA and the kubelets' serving certificates (upstream:
k8s.io/apiserver/pkg/authentication).
"""
