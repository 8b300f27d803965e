"""Service account tokens: the claims a bound and a legacy token carry, what verifying refuses (signature,
issuer, audience, time with its leeway), the binding checks against stored objects (a gone or recreated
ServiceAccount, pod, Secret or Node refuses the token; deletion has 60 s of grace), the user and its extras,
TokenRequest validation and defaults, and ServiceAccount admission's defaults."""

from __future__ import annotations

import base64
import os
import stat
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from control.apiserver.admission import serviceaccount as admission
from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.authentication import serviceaccounts as authn
from control.apiserver.registry import tokenrequest
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.util import satoken

ISSUER = satoken.DEFAULT_ISSUER
NOW = 1_800_000_000
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PODS = by_path("", "v1", "pods")


def obj(name: str, uid: str, *, deleted: float | None = None, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if deleted is not None:
        meta["deletionTimestamp"] = datetime.fromtimestamp(deleted, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": meta, **fields}


def claims(**overrides: Any) -> satoken.BoundClaims:
    base: dict[str, Any] = {"namespace": "ns", "account": satoken.Ref("robot", "sa-uid"), "audiences": (ISSUER,),
                            "issued_at": NOW, "expires_at": NOW + 3600, "token_id": "jti-1"}
    return satoken.BoundClaims(**{**base, **overrides})


def token(key: rsa.RSAPrivateKey = KEY, issuer: str = ISSUER, **overrides: Any) -> str:
    return satoken.sign(key, satoken.bound_payload(issuer, claims(**overrides)))


class Store:
    def __init__(self, **objects: dict[str, Any]) -> None:
        self.objects = {("serviceaccounts", "ns", "robot"): obj("robot", "sa-uid"),
                        ("pods", "ns", "p"): obj("p", "pod-uid"), ("secrets", "ns", "s"): obj("s", "secret-uid"),
                        ("nodes", "", "n1"): obj("n1", "node-uid")}
        for key, value in objects.items():
            plural, namespace, name = key.split("__")
            self.objects[(plural, namespace, name)] = value

    def __call__(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((plural, namespace, name))


def authenticator(store: Store, now: float = NOW + 10, audiences: tuple[str, ...] = (ISSUER,)):
    return authn.ServiceAccountAuthenticator([KEY.public_key()], issuers=[ISSUER], audiences=audiences, get=store,
                                             clock=lambda: now)


# -- claims ------------------------------------------------------------------------------------------------


def test_a_bound_token_carries_upstreams_claims():
    pod, node = satoken.Ref("p", "pod-uid"), satoken.Ref("n1", "node-uid")
    signed = token(pod=pod, node=node, warn_after=NOW + 3607)
    assert jwt.get_unverified_header(signed) == {"alg": "RS256", "kid": satoken.key_id(KEY.public_key()),
                                                 "typ": "JWT"}
    payload = jwt.decode(signed, options={"verify_signature": False})
    assert payload == {
        "aud": [ISSUER], "exp": NOW + 3600, "iat": NOW, "iss": ISSUER, "jti": "jti-1", "nbf": NOW,
        "sub": "system:serviceaccount:ns:robot",
        "kubernetes.io": {"namespace": "ns", "node": {"name": "n1", "uid": "node-uid"},
                          "pod": {"name": "p", "uid": "pod-uid"},
                          "serviceaccount": {"name": "robot", "uid": "sa-uid"}, "warnafter": NOW + 3607}}
    assert satoken.parse_bound(payload) == claims(pod=pod, node=node, warn_after=NOW + 3607)


def test_the_legacy_claims_and_the_key_id():
    payload = satoken.legacy_payload("ns", satoken.Ref("robot", "sa-uid"), "robot-token-x")
    assert payload == {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
                       "kubernetes.io/serviceaccount/secret.name": "robot-token-x",
                       "kubernetes.io/serviceaccount/service-account.name": "robot",
                       "kubernetes.io/serviceaccount/service-account.uid": "sa-uid",
                       "sub": "system:serviceaccount:ns:robot"}
    kid = satoken.key_id(KEY.public_key())
    assert len(kid) == 43 and "=" not in kid
    (jwk,) = satoken.jwks([KEY.public_key()])["keys"]
    assert (jwk["kid"], jwk["alg"], jwk["use"], jwk["kty"], jwk["e"]) == (kid, "RS256", "sig", "RSA", "AQAB")
    assert jwt.PyJWK(jwk).key.public_numbers() == KEY.public_key().public_numbers()


def test_the_signing_key_is_made_once_with_mode_0600(tmp_path):
    path = str(tmp_path / "tls" / "service.key")
    first = satoken.load_or_create_key(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert satoken.load_or_create_key(path).private_numbers() == first.private_numbers()


@pytest.mark.parametrize(("user", "parsed"), [
    pytest.param("system:serviceaccount:ns:robot", ("ns", "robot"), id="account"),
    pytest.param("system:serviceaccount:ns", None, id="no-name"),
    pytest.param("system:serviceaccount:ns:a:b", None, id="too-many-parts"),
    pytest.param("alice", None, id="a-user"),
])
def test_split_username(user, parsed):
    assert satoken.split_username(user) == parsed


# -- verification --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("signed", "now", "error"), [
    pytest.param(token(OTHER_KEY), NOW, "invalid signature", id="another-key"),
    pytest.param(token(issuer="https://elsewhere"), NOW, "token issuer is not accepted", id="another-issuer"),
    pytest.param(token(audiences=("vault",)), NOW, "token audiences is invalid for the target audiences",
                 id="another-audience"),
    pytest.param(token(), NOW + 3600 + 61, "service account token has expired", id="expired"),
    pytest.param(token(), NOW - 61, "service account token is not valid yet", id="not-yet"),
    pytest.param("eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", NOW, "token issuer is not accepted", id="unsigned"),
    pytest.param("eyJ.not.a-token", NOW, "malformed token", id="garbage"),
])
def test_verify_refuses(signed, now, error):
    with pytest.raises(satoken.TokenError, match=error):
        satoken.verify(signed, [KEY.public_key()], issuers=[ISSUER], audiences=[ISSUER], now=now)


@pytest.mark.parametrize("now", [NOW - 59, NOW + 3600 + 59], ids=["early-within-leeway", "late-within-leeway"])
def test_verify_allows_a_minute_of_clock_skew(now):
    payload = satoken.verify(token(), [KEY.public_key()], issuers=[ISSUER], audiences=[ISSUER], now=now)
    assert payload["sub"] == "system:serviceaccount:ns:robot"


# -- authentication and binding checks -------------------------------------------------------------------------


def test_the_user_of_a_pod_bound_token():
    signed = token(pod=satoken.Ref("p", "pod-uid"), node=satoken.Ref("n1", "node-uid"))
    user = authenticator(Store()).authenticate(signed)
    assert user is not None
    assert (user.username, user.uid, user.groups) == (
        "system:serviceaccount:ns:robot", "sa-uid", ("system:serviceaccounts", "system:serviceaccounts:ns"))
    assert dict(user.extra) == {"authentication.kubernetes.io/credential-id": ("JTI=jti-1",),
                                "authentication.kubernetes.io/node-name": ("n1",),
                                "authentication.kubernetes.io/node-uid": ("node-uid",),
                                "authentication.kubernetes.io/pod-name": ("p",),
                                "authentication.kubernetes.io/pod-uid": ("pod-uid",)}


POD = {"pod": satoken.Ref("p", "pod-uid")}
SECRET = {"secret": satoken.Ref("s", "secret-uid")}
NODE = {"node": satoken.Ref("n1", "node-uid")}


@pytest.mark.parametrize(("bound", "store", "accepted"), [
    pytest.param({}, Store(), True, id="unbound"),
    pytest.param({}, Store(serviceaccounts__ns__robot=obj("robot", "new-uid")), False, id="account-recreated"),
    pytest.param(POD, Store(), True, id="pod"),
    pytest.param(POD, Store(pods__ns__p=None), False, id="pod-gone"),
    pytest.param(POD, Store(pods__ns__p=obj("p", "other")), False, id="pod-recreated"),
    pytest.param(POD, Store(pods__ns__p=obj("p", "pod-uid", deleted=NOW - 30)), True, id="pod-deleting-30s"),
    pytest.param(POD, Store(pods__ns__p=obj("p", "pod-uid", deleted=NOW - 90)), False, id="pod-deleting-90s"),
    pytest.param(SECRET, Store(), True, id="secret"),
    pytest.param(SECRET, Store(secrets__ns__s=None), False, id="secret-gone"),
    pytest.param(NODE, Store(), True, id="node"),
    pytest.param(NODE, Store(nodes____n1=obj("n1", "other")), False, id="node-recreated"),
    pytest.param({**POD, **NODE}, Store(nodes____n1=None), True, id="pod-on-a-gone-node"),
])
def test_binding_checks(bound, store, accepted):
    store.objects = {key: value for key, value in store.objects.items() if value is not None}
    assert (authenticator(store).authenticate(token(**bound)) is not None) is accepted


def test_a_gone_service_account_refuses_its_tokens():
    store = Store()
    del store.objects[("serviceaccounts", "ns", "robot")]
    assert authenticator(store).authenticate(token()) is None


def test_a_legacy_token_lives_as_long_as_its_secret_holds_it():
    signed = satoken.sign(KEY, satoken.legacy_payload("ns", satoken.Ref("robot", "sa-uid"), "s"))
    holder = obj("s", "secret-uid", data={"token": base64.b64encode(signed.encode()).decode()})
    user = authenticator(Store(secrets__ns__s=holder), now=NOW + 10**8).authenticate(signed)  # no expiry
    assert user is not None and user.username == "system:serviceaccount:ns:robot" and user.extra == ()
    emptied = obj("s", "secret-uid", data={"token": base64.b64encode(b"another").decode()})
    assert authenticator(Store(secrets__ns__s=emptied)).authenticate(signed) is None


def test_static_tokens_are_not_tried_as_jwts():
    assert authenticator(Store()).authenticate("4fba0b0dafed8d807319f5f46bfb5cf7") is None


# -- TokenRequest -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "result"), [
    pytest.param({}, 3600, id="default"),
    pytest.param({"expirationSeconds": 600}, 600, id="minimum"),
    pytest.param({"expirationSeconds": 599}, "may not specify a duration less than 10 minutes", id="too-short"),
    pytest.param({"expirationSeconds": 2**32 + 1}, "may not specify a duration larger than 2^32 seconds",
                 id="too-long"),
    pytest.param({"audiences": "x"}, "must be a list of strings", id="audiences-not-a-list"),
])
def test_token_request_validation(spec, result):
    if isinstance(result, int):
        assert tokenrequest.validate(spec, "robot") == result
        return
    with pytest.raises(APIError) as refused:
        tokenrequest.validate(spec, "robot")
    assert refused.value.code == 422 and result in refused.value.message


class Registry:
    def __init__(self, objects: dict[tuple[str, str, str], dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, resource, namespace, name):
        return self.objects.get((resource.plural, namespace, name))


def registry() -> Registry:
    return Registry({("serviceaccounts", "ns", "robot"): obj("robot", "sa-uid"),
                     ("pods", "ns", "p"): obj("p", "pod-uid", spec={"serviceAccountName": "robot",
                                                                    "nodeName": "n1"}),
                     ("nodes", "", "n1"): obj("n1", "node-uid")})


def test_a_pod_bound_token_request_for_3607s_lives_a_year_and_warns_after_the_hour():
    issuer = tokenrequest.TokenIssuer(KEY)
    body = {"spec": {"expirationSeconds": 3607, "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}}
    now = datetime.fromtimestamp(NOW, UTC)
    answer = tokenrequest.create_token(registry(), issuer, "ns", "robot", body, now=now)  # type: ignore[arg-type]
    assert answer["status"]["expirationTimestamp"] == datetime.fromtimestamp(NOW + 3607, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    payload = jwt.decode(answer["status"]["token"], options={"verify_signature": False})
    assert payload["exp"] == NOW + 365 * 24 * 3600 and payload["kubernetes.io"]["warnafter"] == NOW + 3607
    assert payload["kubernetes.io"]["node"] == {"name": "n1", "uid": "node-uid"}
    body["spec"]["audiences"] = ["vault"]  # not the API server's: no extension
    answer = tokenrequest.create_token(registry(), issuer, "ns", "robot", body, now=now)  # type: ignore[arg-type]
    payload = jwt.decode(answer["status"]["token"], options={"verify_signature": False})
    assert payload["exp"] == NOW + 3607 and "warnafter" not in payload["kubernetes.io"]


@pytest.mark.parametrize(("ref", "code", "message"), [
    pytest.param({"kind": "Pod", "apiVersion": "v1", "name": "q"}, 404, 'pods "q" not found', id="no-such-pod"),
    pytest.param({"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "old"}, 409,
                 "the UID in the bound object reference (old) does not match", id="uid-differs"),
    pytest.param({"kind": "ConfigMap", "apiVersion": "v1", "name": "c"}, 400,
                 "cannot bind token to object of type /v1, Kind=ConfigMap", id="unsupported-kind"),
])
def test_token_request_binding_refusals(ref, code, message):
    with pytest.raises(APIError) as refused:
        tokenrequest.create_token(registry(), tokenrequest.TokenIssuer(KEY), "ns", "robot",  # type: ignore[arg-type]
                                  {"spec": {"boundObjectRef": ref}})
    assert refused.value.code == code and message in refused.value.message


# -- ServiceAccount admission -------------------------------------------------------------------------------------


class Accounts:
    def __init__(self, **accounts: dict[str, Any]) -> None:
        self.accounts = accounts
        self.lookups = 0

    def get(self, resource, namespace, name):
        self.lookups += 1
        return self.accounts.get(name)

    def list_all(self, resource, namespace):
        return list(self.accounts.values())


def admit(reader: Accounts, pod: dict[str, Any], operation: Operation = Operation.CREATE) -> dict[str, Any]:
    assert PODS is not None
    plugin = admission.ServiceAccount(reader, sleep=lambda _: None, suffix=lambda: "abcde")
    plugin.admit(Attributes(operation, PODS, "ns", pod["metadata"]["name"], obj=pod))
    return pod


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


MOUNT = {"name": "kube-api-access-abcde", "readOnly": True,
         "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}


def test_admission_defaults_the_account_and_mounts_the_token():
    admitted = admit(Accounts(default={}), pod(initContainers=[{"name": "i", "image": "i"}]))
    assert admitted["spec"]["serviceAccountName"] == "default"
    assert admitted["spec"]["volumes"] == [admission.token_volume("kube-api-access-abcde")]
    assert admitted["spec"]["volumes"][0]["projected"]["sources"][0] == {
        "serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert admitted["spec"]["containers"][0]["volumeMounts"] == [MOUNT]
    assert admitted["spec"]["initContainers"][0]["volumeMounts"] == [MOUNT]


@pytest.mark.parametrize(("pod_setting", "account_setting", "mounted"), [
    pytest.param(None, None, True, id="default"),
    pytest.param(None, False, False, id="account-says-no"),
    pytest.param(True, False, True, id="pod-overrides-account"),
    pytest.param(False, True, False, id="pod-says-no"),
])
def test_automount_settings(pod_setting, account_setting, mounted):
    spec = {} if pod_setting is None else {"automountServiceAccountToken": pod_setting}
    account = {} if account_setting is None else {"automountServiceAccountToken": account_setting}
    admitted = admit(Accounts(default=account), pod(**spec))
    assert ("volumes" in admitted["spec"]) is mounted


def test_admission_keeps_an_existing_mount_and_volume():
    own = {"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    admitted = admit(Accounts(default={}), pod(containers=[{"name": "a", "image": "i", "volumeMounts": [own]},
                                                           {"name": "b", "image": "i"}],
                                               volumes=[{"name": "kube-api-access-zzzzz", "emptyDir": {}}]))
    assert admitted["spec"]["containers"][0]["volumeMounts"] == [own]
    assert admitted["spec"]["containers"][1]["volumeMounts"] == [{**MOUNT, "name": "kube-api-access-zzzzz"}]
    assert [v["name"] for v in admitted["spec"]["volumes"]] == ["kube-api-access-zzzzz"]


def test_a_missing_account_is_refused_after_upstreams_retries():
    reader = Accounts()
    with pytest.raises(APIError) as refused:
        admit(reader, pod())
    assert (refused.value.code, refused.value.message) == (
        403, 'pods "p" is forbidden: error looking up service account ns/default: serviceaccount "default" not found')
    assert reader.lookups == 10
    named = Accounts()
    with pytest.raises(APIError):
        admit(named, pod(serviceAccountName="robot"))
    assert named.lookups == 1  # only `default` is waited for


def test_mirror_pods_are_left_alone_but_may_not_name_an_account():
    mirror = pod()
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    assert "serviceAccountName" not in admit(Accounts(), mirror)["spec"]
    mirror["spec"]["serviceAccountName"] = "robot"
    with pytest.raises(APIError, match="a mirror pod may not reference service accounts"):
        admit(Accounts(), mirror)


def test_updates_are_not_touched():
    assert "serviceAccountName" not in admit(Accounts(), pod(), Operation.UPDATE)["spec"]


ON_N1 = obj("p", "pod-uid", spec={"nodeName": "n1"})
POD_REF = {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "pod-uid"}


@pytest.mark.parametrize(("ref", "pod", "refusal"), [
    pytest.param(POD_REF, ON_N1, None, id="its-own-pod"),
    pytest.param(None, None, "node requested token not bound to a pod", id="unbound"),
    pytest.param({"kind": "Secret", "apiVersion": "v1", "name": "s"}, None, "node requested token not bound to a pod",
                 id="bound-to-a-secret"),
    pytest.param({**POD_REF, "uid": ""}, ON_N1, "node requested token with a pod binding without a uid", id="no-uid"),
    pytest.param({**POD_REF, "uid": "old"}, ON_N1, "the UID in the bound object reference (old) does not match",
                 id="recreated"),
    pytest.param(POD_REF, obj("p", "pod-uid", spec={"nodeName": "n2"}),
                 "node requested token bound to a pod scheduled on a different node", id="another-nodes-pod"),
])
def test_what_a_node_may_ask_a_token_for(ref, pod, refusal):
    why = tokenrequest.node_refusal("n1", ref, pod)
    assert why == refusal if refusal is None else why is not None and why.startswith(refusal)
