"""Service account tokens for the pods of a node: kubelet's token manager.

A pod's ``serviceAccountToken`` projected source (the ``kube-api-access-*`` volume the
ServiceAccount admission plugin adds to every pod that mounts its credentials) is filled with
a token from the TokenRequest API, bound to the pod by name and uid, for the source's audience
and lifetime. Tokens are kept and reused until they need a refresh — when less than a fifth
of their lifetime is left, or a day after they were issued (upstream's ``requiresRefresh``,
with up to ten seconds of jitter) — and at that moment the manager calls ``on_refresh`` with
the pod's namespace, so the agent rewrites the pod's volumes with a fresh token before the old
one expires. A pod's tokens are forgotten when it goes.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.timestamps import parse_rfc3339
from inplace.client import SERVICEACCOUNTS, Client

__all__ = ["TokenManager", "TokenRequestError"]

#: Upstream's maxTTL and maxJitter.
MAX_TTL: Final = 24 * 3600.0
MAX_JITTER: Final = 10.0


class TokenRequestError(Exception):
    """The API refused or failed the token request (the volume is retried)."""


@dataclass
class _Token:
    token: str
    expires: float
    lifetime: int
    namespace: str
    timer: asyncio.TimerHandle | None = None

    def refresh_at(self, jitter: float) -> float:
        """Upstream ``requiresRefresh``: a day after issue, or a fifth of the life before the
        end, whichever comes first."""
        issued = self.expires - self.lifetime
        return min(issued + MAX_TTL - jitter, self.expires - self.lifetime * 0.2 - jitter)


class TokenManager:
    """Requests, caches and refreshes the tokens of one node's pods."""

    def __init__(
        self,
        client: Client,
        on_refresh: Callable[[str], None],
        *,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = lambda: random.uniform(0, MAX_JITTER),
    ) -> None:
        self.client = client
        self.on_refresh = on_refresh
        self.clock = clock
        self.jitter = jitter
        self._tokens: dict[tuple[str, str, str, str, int], _Token] = {}

    async def token(
        self, pod: Mapping[str, Any], account: str, audience: str, lifetime: int
    ) -> str:
        """A token of `account` bound to `pod`, for `audience` ("" for the API server's),
        valid `lifetime` seconds as asked."""
        meta = pod.get("metadata") or {}
        namespace, uid = str(meta.get("namespace") or ""), str(meta.get("uid") or "")
        key = (uid, namespace, account, audience, lifetime)
        cached = self._tokens.get(key)
        if cached is not None and self.clock() < cached.refresh_at(0.0):
            return cached.token
        request: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": account, "namespace": namespace},
            "spec": {
                "audiences": [audience] if audience else [],
                "expirationSeconds": lifetime,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": str(meta.get("name") or ""),
                    "uid": uid,
                },
            },
        }
        try:
            answer = await self.client.create(
                SERVICEACCOUNTS, request, namespace=namespace, subresource="token"
            )
        except Exception as exc:  # any API or connection failure: the volume is retried
            raise TokenRequestError(f"failed to fetch token: {exc}") from exc
        status = answer.get("status") or {}
        try:
            expires = parse_rfc3339(str(status.get("expirationTimestamp"))).timestamp()
        except ValueError:
            raise TokenRequestError("failed to fetch token: no expiration in the answer") from None
        fresh = _Token(str(status.get("token") or ""), expires, lifetime, namespace)
        if cached is not None and cached.timer is not None:
            cached.timer.cancel()
        self._tokens[key] = fresh
        self._schedule(fresh)
        return fresh.token

    def _schedule(self, token: _Token) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        delay = max(token.refresh_at(self.jitter()) - self.clock(), 0.0)
        token.timer = loop.call_later(delay, self.on_refresh, token.namespace)

    def forget(self, pod_uid: str) -> None:
        """Drop the tokens of a pod that is gone (their timers too)."""
        for key in [k for k in self._tokens if k[0] == pod_uid]:
            token = self._tokens.pop(key)
            if token.timer is not None:
                token.timer.cancel()

    def close(self) -> None:
        for token in self._tokens.values():
            if token.timer is not None:
                token.timer.cancel()
        self._tokens.clear()
