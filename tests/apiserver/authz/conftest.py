"""An in-process API server with real authentication and authorization, and callers with
tokens of their own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig

RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass
class Caller:
    """Requests as one identity (or as nobody, when `token` is None)."""

    base: str
    session: aiohttp.ClientSession
    token: str | None

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        sent = {"Content-Type": content_type, **(headers or {})}
        if self.token is not None:
            sent["Authorization"] = f"Bearer {self.token}"
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method, self.base + path, data=data, headers=sent
        ) as response:
            text = await response.read()
            try:
                return response.status, json.loads(text) if text else None
            except ValueError:
                return response.status, text.decode()


@dataclass
class Cluster:
    server: APIServer
    tokens: TokenFile
    session: aiohttp.ClientSession

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def as_user(self, name: str, *groups: str) -> Caller:
        return Caller(self.base, self.session, self.tokens.token_for(name, groups))

    @property
    def admin(self) -> Caller:
        return self.as_user("admin", MASTERS_GROUP)

    @property
    def anonymous(self) -> Caller:
        return Caller(self.base, self.session, None)

    async def bind(
        self,
        name: str,
        role: str,
        *subjects: dict[str, Any],
        namespace: str | None = None,
        kind: str = "ClusterRole",
    ) -> None:
        """A RoleBinding in `namespace` (a ClusterRoleBinding without one), as the admin."""
        body: dict[str, Any] = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": list(subjects),
        }
        path = (
            f"{RBAC}/namespaces/{namespace}/rolebindings"
            if namespace
            else f"{RBAC}/clusterrolebindings"
        )
        status, answer = await self.admin.call("POST", path, body)
        assert status == 201, answer


def user(name: str) -> dict[str, Any]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def group(name: str) -> dict[str, Any]:
    return {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def service_account(name: str, namespace: str | None = None) -> dict[str, Any]:
    subject: dict[str, Any] = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        subject["namespace"] = namespace
    return subject


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    tokens = TokenFile(tmp_path / "tokens.csv")
    server = APIServer(APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield Cluster(server, tokens, session)
    finally:
        await server.stop()
