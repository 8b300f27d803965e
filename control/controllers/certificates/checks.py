"""What each `kubernetes.io/*` signer accepts (upstream: pkg/apis/certificates/helpers.go
ValidateKubeletClientCSR and ValidateKubeletServingCSR, pkg/controller/certificates/signer/signer.go
validAPIServerClientUsages; the messages are upstream's). Pure: a parsed request and its usages in, the
reason it is refused (or None) out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from control.controllers.certificates.request import ParsedRequest

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
NODE_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"

DIGITAL_SIGNATURE, KEY_ENCIPHERMENT = "digital signature", "key encipherment"
CLIENT_AUTH, SERVER_AUTH = "client auth", "server auth"
KUBELET_CLIENT_USAGES = frozenset({DIGITAL_SIGNATURE, KEY_ENCIPHERMENT, CLIENT_AUTH})
KUBELET_CLIENT_USAGES_NO_RSA = frozenset({DIGITAL_SIGNATURE, CLIENT_AUTH})
KUBELET_SERVING_USAGES = frozenset({DIGITAL_SIGNATURE, KEY_ENCIPHERMENT, SERVER_AUTH})
KUBELET_SERVING_USAGES_NO_RSA = frozenset({DIGITAL_SIGNATURE, SERVER_AUTH})


def _node_subject(request: ParsedRequest) -> str | None:
    if list(request.organizations) != [NODES_GROUP]:
        return "subject organization is not system:nodes"
    return None


def _node_name(request: ParsedRequest) -> str | None:
    if not request.common_name.startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    return None


def _sorted(usages: Collection[str]) -> str:
    return "[" + " ".join(sorted(usages)) + "]"


def kubelet_client_error(request: ParsedRequest, usages: Collection[str]) -> str | None:
    """upstream ValidateKubeletClientCSR."""
    if (error := _node_subject(request)) is not None:
        return error
    if request.dns_names:
        return "DNS subjectAltNames are not allowed"
    if request.emails:
        return "Email subjectAltNames are not allowed"
    if request.ip_addresses:
        return "IP subjectAltNames are not allowed"
    if request.uris:
        return "URI subjectAltNames are not allowed"
    if (error := _node_name(request)) is not None:
        return error
    if set(usages) not in (KUBELET_CLIENT_USAGES, KUBELET_CLIENT_USAGES_NO_RSA):
        return f"usages did not match {_sorted(KUBELET_CLIENT_USAGES)}"
    return None


def kubelet_serving_error(request: ParsedRequest, usages: Collection[str]) -> str | None:
    """upstream ValidateKubeletServingCSR."""
    if (error := _node_subject(request)) is not None:
        return error
    if not request.dns_names and not request.ip_addresses:
        return "DNS or IP subjectAltName is required"
    if request.emails:
        return "Email subjectAltNames are not allowed"
    if request.uris:
        return "URI subjectAltNames are not allowed"
    if (error := _node_name(request)) is not None:
        return error
    if set(usages) not in (KUBELET_SERVING_USAGES, KUBELET_SERVING_USAGES_NO_RSA):
        return f"usages did not match {_sorted(KUBELET_SERVING_USAGES)}"
    return None


def apiserver_client_error(request: ParsedRequest, usages: Collection[str]) -> str | None:
    """upstream validAPIServerClientUsages: client auth required, digital signature and key encipherment allowed."""
    for usage in usages:
        if usage not in (DIGITAL_SIGNATURE, KEY_ENCIPHERMENT, CLIENT_AUTH):
            return f"invalid usage for client certificate: {usage}"
    if CLIENT_AUTH not in usages:
        return f"missing required usage for client certificate: {CLIENT_AUTH}"
    return None


SIGNERS: dict[str, Callable[[ParsedRequest, Collection[str]], str | None]] = {
    KUBE_APISERVER_CLIENT: apiserver_client_error,
    KUBELET_CLIENT: kubelet_client_error,
    KUBELET_SERVING: kubelet_serving_error,
}
