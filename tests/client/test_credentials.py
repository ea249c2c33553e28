"""A client per controller: the controller manager's identity makes each controller's service
account and token, and each controller then holds only its own role."""

from __future__ import annotations

import time

import pytest

from inplace.client import (
    NAMESPACES,
    PODS,
    APIForbiddenError,
    Client,
    ClusterConfig,
    ServiceAccountCredentials,
)
from tests.apiserver.authz.conftest import Cluster, cluster
from tests.poll import await_until

__all__ = ["cluster"]


def _pod() -> dict[str, object]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


async def test_each_controller_acts_as_its_own_service_account(cluster: Cluster) -> None:
    token = cluster.tokens.token_for("system:kube-controller-manager")
    async with Client(ClusterConfig(server=cluster.base, token=token)) as manager:
        credentials = ServiceAccountCredentials(manager)
        try:
            client = await credentials.client_for("replicaset-controller")
            assert await credentials.client_for("replicaset-controller") is client
            await client.list(PODS)
            with pytest.raises(APIForbiddenError):
                await client.create(NAMESPACES, {"metadata": {"name": "x"}})
            with pytest.raises(APIForbiddenError):  # its informers read, the controllers write
                await manager.create(PODS, _pod(), namespace="default")
            await client.create(PODS, _pod(), namespace="default")
        finally:
            await credentials.close()


async def test_the_token_is_renewed_before_it_expires(cluster: Cluster) -> None:
    token = cluster.tokens.token_for("system:kube-controller-manager")
    async with Client(ClusterConfig(server=cluster.base, token=token)) as manager:
        # A clock an hour ahead: the token looks due for renewal at once.
        credentials = ServiceAccountCredentials(manager, clock=lambda: time.time() + 3600)
        try:
            client = await credentials.client_for("job-controller")
            first = client.config.token
            await await_until(lambda: client.config.token != first, what="a renewed token")
            await client.list(PODS)
        finally:
            await credentials.close()
