"""One client per controller, each acting as its own service account.

Upstream's ``SAControllerClientBuilder`` (``kube-controller-manager
--use-service-account-credentials``): the controller manager's own identity
(``system:kube-controller-manager``) may only create service accounts in ``kube-system`` and
ask for their tokens; each controller then talks to the API server as
``system:serviceaccount:kube-system:<controller>``, which the default RBAC policy binds to
``system:controller:<controller>``, so each holds only its own permissions.

:meth:`ServiceAccountCredentials.client_for` makes the service account if it is missing, asks
the TokenRequest API for a token (an hour by default) and returns a :class:`Client` that
sends it; the token is replaced when 80% of its life has passed (on failure, retried every
ten seconds until it works).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any, Final

from inplace.api.timestamps import parse_rfc3339

from .api import SERVICEACCOUNTS, Client
from .errors import APIAlreadyExistsError, APIError, APINotFoundError

__all__ = ["CONTROLLER_NAMESPACE", "ServiceAccountCredentials"]

log = logging.getLogger(__name__)

CONTROLLER_NAMESPACE: Final = "kube-system"
_RETRY: Final = 10.0


class ServiceAccountCredentials:
    """Builds (and keeps fresh) the clients of service accounts in one namespace."""

    def __init__(
        self,
        client: Client,
        *,
        namespace: str = CONTROLLER_NAMESPACE,
        expiration: int = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.expiration = expiration
        self.clock = clock
        self.clients: dict[str, Client] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def client_for(self, name: str) -> Client:
        """The client of service account `name` (one per name, made on first use)."""
        existing = self.clients.get(name)
        if existing is not None:
            return existing
        await self._ensure_account(name)
        token, expires = await self._request(name)
        config = dataclasses.replace(self.client.config, token=token, token_file=None)
        client = Client(config, user_agent=f"{self.client.user_agent}/{name}")
        self.clients[name] = client
        self._tasks[name] = asyncio.create_task(
            self._refresh(name, client, expires), name=f"token-{name}"
        )
        return client

    async def _ensure_account(self, name: str) -> None:
        try:
            await self.client.get(SERVICEACCOUNTS, name, namespace=self.namespace)
        except APINotFoundError:
            body = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": self.namespace},
            }
            with contextlib.suppress(APIAlreadyExistsError):
                await self.client.create(SERVICEACCOUNTS, body, namespace=self.namespace)

    async def _request(self, name: str) -> tuple[str, float]:
        """A fresh token of `name` and when it expires (Unix seconds)."""
        body: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"expirationSeconds": self.expiration},
        }
        answer = await self.client.create(
            SERVICEACCOUNTS, body, namespace=self.namespace, subresource="token"
        )
        status = answer.get("status") or {}
        expires = parse_rfc3339(str(status.get("expirationTimestamp"))).timestamp()
        return str(status.get("token") or ""), expires

    async def _refresh(self, name: str, client: Client, expires: float) -> None:
        issued = self.clock()
        while True:
            await asyncio.sleep(max(issued + 0.8 * (expires - issued) - self.clock(), 0.0))
            while True:
                try:
                    await self._ensure_account(name)
                    token, expires = await self._request(name)
                    break
                except (APIError, OSError, ValueError) as exc:
                    log.warning("renewing the token of %s/%s: %s", self.namespace, name, exc)
                    await asyncio.sleep(_RETRY)
            client.config.token = token
            issued = self.clock()

    async def close(self) -> None:
        """Stop renewing and close every client made."""
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for client in self.clients.values():
            await client.close()
        self.clients.clear()
