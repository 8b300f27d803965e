"""Certificate controllers (upstream pkg/controller/certificates): the signer of approved
CertificateSigningRequests for the `kubernetes.io/*` signers, the kubelet client-certificate approver with
node passwords, and the kubelet serving-certificate approver (docs/identity.md)."""
