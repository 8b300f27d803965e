"""Node passwords (k3s: pkg/nodepassword, Secrets `<node>.node-password.k3s` in kube-system): a node's name
belongs to its first joiner.

k3s's agent keeps a random password in its data dir and sends it with every join; the server records a
hash of it per node name and refuses a later join of that name with another password. Here the agent's
per-node secret is a private key (`DIR/agent/node-password.key`, 0600) and every join CSR — the request for
`system:node:<name>` made with the join token — is signed by it: the CSR's self-signature proves the
secret without sending it, so a CSR readable by others (the bootstrap role may list them) gives nothing
away. What is recorded, in the Secret `<node>.node-password.slimkube` in kube-system (type
`slimkube.io/node-password`), is the sha256 of the key's public half. Renewals made with the node's own
certificate (selfnodeclient) need no password. Deleting the Secret frees the name for a new machine.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

NAMESPACE = "kube-system"
SUFFIX = ".node-password.slimkube"
SECRET_TYPE = "slimkube.io/node-password"
KEY = "hash"
PREFIX = "sha256:"


def secret_name(node: str) -> str:
    return node + SUFFIX


def secret(node: str, fingerprint: str) -> dict[str, Any]:
    """The Secret recording `fingerprint` (hex sha256 of the node key's public half) for `node`."""
    return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
            "metadata": {"name": secret_name(node), "namespace": NAMESPACE},
            "data": {KEY: base64.b64encode((PREFIX + fingerprint).encode()).decode()}}


def recorded(secret_obj: Mapping[str, Any] | None) -> str | None:
    """The fingerprint a Secret records; None when there is no Secret; "" when it records nothing usable
    (which matches no key: a damaged record refuses rather than frees the name)."""
    if secret_obj is None:
        return None
    data = secret_obj.get("data")
    value = data.get(KEY) if isinstance(data, Mapping) else None
    try:
        text = base64.b64decode(str(value or ""), validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return ""
    return text.removeprefix(PREFIX) if text.startswith(PREFIX) else ""
