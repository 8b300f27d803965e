"""Service account tokens as JWTs: the signing key, the claims, signing and checking a signature
(upstream: pkg/serviceaccount/jwt.go, claims.go and legacy.go; k8s.io/apiserver/pkg/server/options key
loading; pkg/serviceaccount/openidmetadata.go for the public keys as a JWKS).

Shared by the API server (TokenRequest issues, the authenticator checks) and the controller manager (the
tokens controller signs legacy token Secrets), as upstream's pkg/serviceaccount is.

- The key is RSA 2048, PEM (PKCS#8) in one file made once with mode 0600 (upstream
  `--service-account-signing-key-file` and `--service-account-key-file` name the same file by default, as
  k3s's `server/tls/service.key`). The `kid` header is upstream's: base64url (no padding) of the sha256
  of the public key's DER SubjectPublicKeyInfo, so verifiers find the key in the JWKS.
- Bound tokens carry `iss`, `sub` (`system:serviceaccount:<ns>:<name>`), `aud`, `exp`, `iat`, `nbf`, `jti`
  and the private `kubernetes.io` claim: `namespace`, `serviceaccount` {name, uid}, and the `pod`,
  `secret` or `node` it is bound to (a pod-bound token also names the pod's node), and `warnafter` for a
  token whose life was extended.
- Legacy tokens (Secrets of type kubernetes.io/service-account-token) are upstream's: issuer
  `kubernetes/serviceaccount`, flat `kubernetes.io/serviceaccount/*` claims, no expiry.

Checking a signature, issuer, audience and time is here (`verify`); whether the objects a token names still
exist is the authenticator's (control/apiserver/authentication/serviceaccounts.py), which reads the store.
"""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # k3s's --service-account-issuer
LEGACY_ISSUER = "kubernetes/serviceaccount"
ALGORITHM = "RS256"
LEEWAY_SECONDS = 60  # go-jose's DefaultLeeway, which upstream's validator uses for exp, nbf and iat
PRIVATE_CLAIM = "kubernetes.io"
USER_PREFIX = "system:serviceaccount:"
LEGACY_NAMESPACE = "kubernetes.io/serviceaccount/namespace"
LEGACY_SECRET_NAME = "kubernetes.io/serviceaccount/secret.name"
LEGACY_ACCOUNT_NAME = "kubernetes.io/serviceaccount/service-account.name"
LEGACY_ACCOUNT_UID = "kubernetes.io/serviceaccount/service-account.uid"


class TokenError(ValueError):
    """A token that does not verify; the message is what the authenticator logs, never the token."""


def username(namespace: str, name: str) -> str:
    return f"{USER_PREFIX}{namespace}:{name}"


def split_username(user: str) -> tuple[str, str] | None:
    """`system:serviceaccount:ns:name` → (ns, name); None for any other user."""
    if not user.startswith(USER_PREFIX):
        return None
    namespace, sep, name = user[len(USER_PREFIX):].partition(":")
    return (namespace, name) if sep and namespace and name and ":" not in name else None


def load_key(path: str) -> rsa.RSAPrivateKey:
    """The RSA private key (PEM) in `path`; TokenError for another kind of key."""
    with open(path, "rb") as handle:
        loaded = serialization.load_pem_private_key(handle.read(), password=None)
    if not isinstance(loaded, rsa.RSAPrivateKey):
        raise TokenError(f"{path}: the service account signing key must be an RSA key")
    return loaded


def load_or_create_key(path: str) -> rsa.RSAPrivateKey:
    """The signing key in `path`, made (RSA 2048, mode 0600) when the file does not exist."""
    try:
        return load_key(path)
    except FileNotFoundError:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        tmp = f"{path}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        os.replace(tmp, path)
        return key


def key_id(public: rsa.RSAPublicKey) -> str:
    """Upstream keyIDFromPublicKey."""
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


def _b64_int(value: int) -> str:
    return base64.urlsafe_b64encode(value.to_bytes((value.bit_length() + 7) // 8, "big")).decode().rstrip("=")


def jwks(keys: Sequence[rsa.RSAPublicKey]) -> dict[str, Any]:
    """The public keys as a JSON Web Key Set, in upstream's field order and shape."""
    return {"keys": [{"use": "sig", "kty": "RSA", "kid": key_id(key), "alg": ALGORITHM,
                      "n": _b64_int(key.public_numbers().n), "e": _b64_int(key.public_numbers().e)}
                     for key in keys]}


@dataclass(frozen=True)
class Ref:
    """An object a token names: its name and uid."""

    name: str
    uid: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "uid": self.uid}


@dataclass(frozen=True)
class BoundClaims:
    """What a bound token says, decided before signing and read back after verifying."""

    namespace: str
    account: Ref
    audiences: tuple[str, ...]
    issued_at: int
    expires_at: int
    pod: Ref | None = None
    secret: Ref | None = None
    node: Ref | None = None
    warn_after: int | None = None
    token_id: str = ""


def bound_payload(issuer: str, claims: BoundClaims) -> dict[str, Any]:
    """The JWT payload of a bound token (upstream claims.go Claims)."""
    private: dict[str, Any] = {"namespace": claims.namespace}
    for key, ref in (("node", claims.node), ("pod", claims.pod), ("secret", claims.secret)):
        if ref is not None:
            private[key] = ref.to_json()
    private["serviceaccount"] = claims.account.to_json()
    if claims.warn_after is not None:
        private["warnafter"] = claims.warn_after
    return {"aud": list(claims.audiences), "exp": claims.expires_at, "iat": claims.issued_at, "iss": issuer,
            "jti": claims.token_id or str(uuid.uuid4()), PRIVATE_CLAIM: private, "nbf": claims.issued_at,
            "sub": username(claims.namespace, claims.account.name)}


def legacy_payload(namespace: str, account: Ref, secret_name: str) -> dict[str, Any]:
    """The payload of a legacy Secret token (upstream legacy.go LegacyClaims)."""
    return {"iss": LEGACY_ISSUER, LEGACY_NAMESPACE: namespace, LEGACY_SECRET_NAME: secret_name,
            LEGACY_ACCOUNT_NAME: account.name, LEGACY_ACCOUNT_UID: account.uid,
            "sub": username(namespace, account.name)}


def sign(key: rsa.RSAPrivateKey, payload: Mapping[str, Any]) -> str:
    return jwt.encode(dict(payload), key, algorithm=ALGORITHM, headers={"kid": key_id(key.public_key())})


def looks_like_jwt(token: str) -> bool:
    """Three base64url parts, the first a JSON object: what upstream's JWT authenticator tries at all."""
    return token.count(".") == 2 and token.startswith("eyJ")


def _ref(value: Any, what: str) -> Ref:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not isinstance(value.get("uid"), str):
        raise TokenError(f"the {what} claim is malformed")
    return Ref(value["name"], value["uid"])


def parse_bound(payload: Mapping[str, Any]) -> BoundClaims:
    """A verified bound token's payload as claims; TokenError when the private claim is malformed."""
    private = payload.get(PRIVATE_CLAIM)
    if not isinstance(private, dict) or not isinstance(private.get("namespace"), str) or not private["namespace"]:
        raise TokenError("the token has no namespace claim")
    aud = payload.get("aud")
    audiences = (aud,) if isinstance(aud, str) else tuple(a for a in aud or () if isinstance(a, str))
    parsed = {key: _ref(private[key], key) if private.get(key) is not None else None
              for key in ("pod", "secret", "node")}
    account = _ref(private.get("serviceaccount"), "serviceaccount")
    if payload.get("sub") != username(private["namespace"], account.name):
        raise TokenError("the token's subject does not name its service account")
    warn_after = private.get("warnafter")
    return BoundClaims(namespace=private["namespace"], account=account, audiences=audiences,
                       issued_at=int(payload.get("iat") or 0), expires_at=int(payload.get("exp") or 0),
                       warn_after=warn_after if isinstance(warn_after, int) else None,
                       token_id=str(payload.get("jti") or ""), **parsed)


def verify(token: str, keys: Sequence[rsa.RSAPublicKey], *, issuers: Sequence[str], audiences: Sequence[str],
           now: float) -> dict[str, Any]:
    """The payload of a token signed by one of `keys`, issued by one of `issuers`; a bound token (not the
    legacy issuer's) must also be for one of `audiences` and within its time (60 s leeway). TokenError
    otherwise, with upstream's wording where it has one."""
    try:
        header = jwt.get_unverified_header(token)
        unverified = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise TokenError(f"malformed token: {exc}") from None
    issuer = unverified.get("iss")
    if issuer not in issuers:
        raise TokenError("token issuer is not accepted")
    if header.get("alg") != ALGORITHM:
        raise TokenError(f"unexpected signing algorithm {header.get('alg')!r}")
    wanted = header.get("kid")
    candidates = [key for key in keys if not wanted or key_id(key) == wanted] or list(keys)
    legacy = issuer == LEGACY_ISSUER
    for key in candidates:
        try:
            payload: dict[str, Any] = jwt.decode(token, key, algorithms=[ALGORITHM], options={
                "verify_exp": False, "verify_nbf": False, "verify_iat": False, "verify_aud": False})
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as exc:
            raise TokenError(f"malformed token: {exc}") from None
        if not legacy:
            check_bound_times(payload, now=now)
            aud = payload.get("aud")
            token_audiences = [aud] if isinstance(aud, str) else list(aud or ())
            if not set(token_audiences) & set(audiences):
                raise TokenError("token audiences is invalid for the target audiences")
        return payload
    raise TokenError("invalid signature")


def check_bound_times(payload: Mapping[str, Any], *, now: float) -> None:
    """exp (required), nbf and iat against `now`, with upstream's leeway and messages."""
    exp, nbf, iat = payload.get("exp"), payload.get("nbf"), payload.get("iat")
    if not isinstance(exp, int | float):
        raise TokenError("the token has no expiry")
    if now - LEEWAY_SECONDS > exp:
        raise TokenError("service account token has expired")
    if isinstance(nbf, int | float) and now + LEEWAY_SECONDS < nbf:
        raise TokenError("service account token is not valid yet")
    if isinstance(iat, int | float) and now + LEEWAY_SECONDS < iat:
        raise TokenError("service account token is issued in the future")
