"""``--controllers`` selection and the duration flags, as kube-controller-manager reads them;
the controllers under RBAC with ``--use-service-account-credentials``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from inplace.client import (
    DEPLOYMENTS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    APIForbiddenError,
    Client,
    ClusterConfig,
    ServiceAccountCredentials,
)
from inplace.controllers.manager import (
    CONTROLLERS,
    ControllerManager,
    ControllerSelectionError,
    select_controllers,
)
from tests.conftest import InProcessServer
from tests.controllers.deployment.test_controller import deployment
from tests.poll import await_until


def names(text: str) -> list[str]:
    return [spec.name for spec in select_controllers(text)]


def test_star_selects_every_controller_and_minus_removes_one() -> None:
    every = names("*")
    assert "deployment-controller" in every and "workload-resize" in every
    without_gc = names("*,-garbagecollector")
    assert "garbage-collector-controller" not in without_gc
    assert len(without_gc) == len(every) - 1


def test_aliases_and_the_workload_resize_controller_alone() -> None:
    assert names("deployment,replicaset") == ["replicaset-controller", "deployment-controller"]
    assert names("workload-resize") == ["workload-resize"]
    assert names("") == []


def test_an_unknown_controller_is_refused_naming_it() -> None:
    with pytest.raises(ControllerSelectionError, match='unknown controller "nope"'):
        select_controllers("*,nope")


async def test_with_service_account_credentials_each_controller_holds_only_its_role(
    apiserver: InProcessServer,
) -> None:
    """As `inplace up` runs it: the manager's own identity reads (informers) and may not
    write pods; each controller writes as `kube-system/<its account>` under RBAC, and a
    Deployment still gets its ReplicaSet and pods, which garbage collection removes."""
    token = apiserver.tokens.token_for("system:kube-controller-manager", ())
    async with (
        Client(ClusterConfig(server=apiserver.url, token=token)) as own,
        Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as admin,
    ):
        with pytest.raises(APIForbiddenError, match='User "system:kube-controller-manager"'):
            await own.create(PODS, {"metadata": {"name": "x"}}, namespace="default")
        credentials = ServiceAccountCredentials(own)
        specs = select_controllers("replicaset,deployment,garbage-collector")
        manager = ControllerManager(own, specs, credentials=credentials)
        task = asyncio.create_task(manager.run())
        try:
            await await_until(lambda: manager.synced.is_set() or task.done(), what="synced")
            assert sorted(credentials.clients) == [
                "deployment-controller",
                "generic-garbage-collector",
                "replicaset-controller",
            ]
            # Each account holds its system:controller:* role and nothing more.
            rs_client = credentials.clients["replicaset-controller"]
            with pytest.raises(
                APIForbiddenError,
                match='User "system:serviceaccount:kube-system:replicaset-controller" cannot '
                'create resource "namespaces"',
            ):
                await rs_client.create(NAMESPACES, {"metadata": {"name": "nope"}})
            with pytest.raises(APIForbiddenError, match="deployment-controller"):
                await credentials.clients["deployment-controller"].create(
                    PODS, {"metadata": {"name": "x"}}, namespace="default"
                )
            await admin.create(DEPLOYMENTS, deployment("web", 2), namespace="default")

            async def pods() -> list[Any] | None:
                found = await admin.list(PODS, namespace="default", label_selector="app=web")
                return found["items"] if len(found["items"]) == 2 else None

            made = await await_until(pods, what="the Deployment's two pods")
            owner = made[0]["metadata"]["ownerReferences"][0]
            assert owner["kind"] == "ReplicaSet"
            await admin.delete(DEPLOYMENTS, "web", namespace="default")

            async def gone() -> bool:
                found = await admin.list(PODS, namespace="default", label_selector="app=web")
                sets = await admin.list(REPLICASETS, namespace="default")
                return not found["items"] and not sets["items"]

            await await_until(gone, what="the ReplicaSet and pods collected")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await credentials.close()


def test_every_controller_has_an_account_bound_to_its_role() -> None:
    """--use-service-account-credentials needs a system:controller:* role for each one."""
    from inplace.apiserver.authz.controller_policy import controller_role_bindings

    bound = {b["subjects"][0]["name"]: b["roleRef"]["name"] for b in controller_role_bindings()}
    for spec in CONTROLLERS:
        assert bound.get(spec.service_account) == f"system:controller:{spec.service_account}"
