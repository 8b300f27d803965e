"""The request-path hook: impersonation, then authorization, after authentication (upstream:
k8s.io/apiserver/pkg/endpoints/filters/impersonation.go and authorization.go in DefaultBuildHandlerChain).

The authenticated user arrives in `request[USER_KEY]` (absent on the public paths, which need no
authorization, as upstream's system:public-info-viewer grants them to everyone). Users a store-free
authorizer allows everything (system:masters, the shared node credential) pass at once; anyone else is
judged on the loop from the authorizers' in-memory views when they allow, and off the loop when a refusal
must first wait for the views to catch up with the store (policycache.py). A refusal is upstream's 403 Status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization import impersonation
from control.apiserver.authorization.attributes import Attributes, request_attributes
from control.apiserver.authorization.authorizer import Chain, forbidden
from control.apiserver.authorization.decision import Verdict

USER_KEY = web.RequestKey("slimkube.user", authn.UserInfo)
# the last verdict, for the audit event's authorization.k8s.io/decision and reason annotations
VERDICT_KEY = web.RequestKey("slimkube.authorization.verdict", Verdict)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class AuthorizationFilter:
    def __init__(self, chain: Chain) -> None:
        self.chain = chain

    async def authorize(self, attributes: Attributes) -> Verdict:
        if not self.chain.needs_lookup(attributes.user):
            return self.chain.authorize(attributes)
        verdict = self.chain.authorize_now(attributes)
        if verdict is not None:
            return verdict
        return await asyncio.to_thread(self.chain.authorize, attributes)

    async def _require(self, request: web.Request, attributes: Attributes) -> None:
        verdict = await self.authorize(attributes)
        request[VERDICT_KEY] = verdict
        if not verdict.allowed:
            raise forbidden(attributes, verdict.reason)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        user = request.get(USER_KEY)
        if user is None:
            return await handler(request)
        wanted = impersonation.parse(request.headers.items())
        if not wanted.empty:
            for question in impersonation.checks(user, wanted):
                await self._require(request, question)
            user = impersonation.impersonated(wanted)
            request[USER_KEY] = user
            authn.current_user.set(user)
        await self._require(request, request_attributes(user, request.method, request.path, request.query))
        return await handler(request)
