"""Acting as another user (upstream: k8s.io/apiserver/pkg/endpoints/filters/impersonation.go).

`Impersonate-User`, `Impersonate-Group` (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>`
headers (kubectl `--as`, `--as-group`, `--as-uid`) ask to act as someone else; each is checked with the
`impersonate` verb against the requester: `users` (or `serviceaccounts` in the account's namespace for a
`system:serviceaccount:<ns>:<name>` user), `groups`, `uids` and `userextras/<key>` (authentication.k8s.io).
The request then runs as the impersonated user: a service account given no groups gets
`system:serviceaccounts` and `system:serviceaccounts:<ns>`, and every impersonated user `system:authenticated`.

Departure: groups, extras or a uid without a user are a 400 here (upstream answers 500, which this server
keeps for its own bugs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from control.apiserver import status
from control.apiserver.authentication.tokens import AUTHENTICATED, UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.rbac import SERVICE_ACCOUNT_PREFIX

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


@dataclass(frozen=True)
class Request:
    """What the headers ask for."""

    username: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.username or self.groups or self.uid or self.extra)


def parse(headers: Iterable[tuple[str, str]]) -> Request:
    """The impersonation asked for by (name, value) header pairs; a 400 for one without a user."""
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for name, value in headers:
        lower = name.lower()
        if lower == USER:
            username = value
        elif lower == GROUP:
            groups.append(value)
        elif lower == UID:
            uid = value
        elif lower.startswith(EXTRA_PREFIX):
            extra.setdefault(unquote(lower[len(EXTRA_PREFIX):]), []).append(value)
    wanted = Request(username, tuple(groups), uid, tuple((k, tuple(v)) for k, v in extra.items()))
    if not username and not wanted.empty:
        raise status.bad_request("requested impersonation of groups, extra or a uid without impersonating a user")
    return wanted


def checks(requester: UserInfo, wanted: Request) -> list[Attributes]:
    """The `impersonate` questions to ask about `requester`, in upstream's order."""
    def ask(resource: str, name: str, *, namespace: str = "", group: str = "", subresource: str = "") -> Attributes:
        return Attributes(user=requester, verb="impersonate", resource_request=True, namespace=namespace,
                          api_group=group, resource=resource, subresource=subresource, name=name)

    out = []
    if wanted.username.startswith(SERVICE_ACCOUNT_PREFIX) and wanted.username.count(":") == 3:
        namespace, name = wanted.username[len(SERVICE_ACCOUNT_PREFIX):].split(":", 1)
        out.append(ask("serviceaccounts", name, namespace=namespace))
    elif wanted.username:
        out.append(ask("users", wanted.username))
    out += [ask("groups", group) for group in wanted.groups]
    for key, values in wanted.extra:
        out += [ask("userextras", value, group=AUTHENTICATION_GROUP, subresource=key) for value in values]
    if wanted.uid:
        out.append(ask("uids", wanted.uid, group=AUTHENTICATION_GROUP))
    return out


def impersonated(wanted: Request) -> UserInfo:
    """The user the request runs as once every check passed."""
    groups = [g for g in wanted.groups if g != AUTHENTICATED]
    if not wanted.groups and wanted.username.startswith(SERVICE_ACCOUNT_PREFIX) and wanted.username.count(":") == 3:
        namespace = wanted.username[len(SERVICE_ACCOUNT_PREFIX):].split(":", 1)[0]
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    return UserInfo(wanted.username, uid=wanted.uid, groups=tuple(groups), extra=wanted.extra)
