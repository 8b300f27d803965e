"""Who may do what: request attributes, the authorizer chain (system:masters, the place of the Node
authorizer, RBAC), escalation prevention, the bootstrap policy, the access reviews and impersonation
(upstream: k8s.io/apiserver/pkg/authorization, plugin/pkg/auth/authorizer/rbac, pkg/registry/rbac,
pkg/registry/authorization). See docs/authorization.md."""
