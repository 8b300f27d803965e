"""Auditing (upstream k8s.io/apiserver/pkg/audit and pkg/endpoints/filters/audit.go): a policy decides the
level of each request, the filter builds audit.k8s.io/v1 Events, a log backend writes them (docs/apiserver.md)."""
