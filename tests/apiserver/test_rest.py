"""REST follows each kind's strategy: a throw-away kind (`tests.apiserver.gizmo`), registered in
a test Registry, is created, updated, written through its status and `tune` subresources and
deleted with exactly the rules its strategy names, over a real store and watch cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError
from inplace.apiserver.rest import REST
from inplace.store import Store
from tests.apiserver.gizmo import (
    GIZMO,
    GIZMO_REGISTRY,
    NAMESPACE,
    NAMESPACE_UID_ANNOTATION,
    gizmo,
)


@pytest.fixture
async def rest(tmp_path: Path) -> AsyncIterator[REST]:
    store = await Store.open(tmp_path / "store.db")
    cache = WatchCache(store, GIZMO_REGISTRY)
    await cache.start()
    try:
        api = REST(store, cache, GIZMO_REGISTRY)
        await api.create(NAMESPACE, None, {"metadata": {"name": "default"}})
        yield api
    finally:
        await cache.stop()
        await store.close()


async def get(rest: REST, name: str = "g") -> dict[str, Any]:
    return (await rest.get_entry(GIZMO, "default", name)).value


async def rejected(action: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        await action
    return info.value


async def test_create_defaults_admits_and_prepares(rest: REST) -> None:
    body = gizmo() | {"status": {"replicas": 5}}
    created = (await rest.create(GIZMO, "default", body)).obj
    namespace = (await rest.get_entry(NAMESPACE, None, "default")).value
    assert created["spec"] == {"replicas": 1}  # the strategy's defaults
    assert created["status"] == {"replicas": 0}  # its PrepareForCreate, not the body's status
    assert created["metadata"]["annotations"] == {
        NAMESPACE_UID_ANNOTATION: namespace["metadata"]["uid"]  # its admission read it
    }
    assert created["metadata"]["generation"] == 1
    assert await get(rest) == created


async def test_admission_refuses_with_its_code(rest: REST) -> None:
    await rest.create(
        NAMESPACE, None, {"metadata": {"name": "closed", "labels": {"gizmos": "forbidden"}}}
    )
    error = await rejected(rest.create(GIZMO, "closed", gizmo("x")))
    assert (error.code, error.reason) == (403, "Forbidden")
    assert error.message == 'gizmos "x" is forbidden: no gizmos here'


async def test_validation_is_the_strategys_on_create_and_update(rest: REST) -> None:
    error = await rejected(rest.create(GIZMO, "default", gizmo(replicas=11)))
    assert error.code == 422
    assert error.message == (
        'Gizmo.example.inplace.dev "g" is invalid: spec.replicas: Invalid value: 11: '
        "must be at most 10"
    )
    assert error.status()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 11: must be at most 10",
            "field": "spec.replicas",
        }
    ]
    await rest.create(GIZMO, "default", gizmo())
    error = await rejected(rest.update(GIZMO, "default", "g", gizmo(replicas=12)))
    assert error.code == 422
    assert "spec.replicas: Invalid value: 12: must be at most 10" in error.message


async def test_update_keeps_status_and_bumps_generation_on_spec_changes(rest: REST) -> None:
    await rest.create(GIZMO, "default", gizmo())
    updated = (
        await rest.update(GIZMO, "default", "g", gizmo(replicas=3) | {"status": {"replicas": 9}})
    ).obj
    assert updated["spec"] == {"replicas": 3}
    assert updated["status"] == {"replicas": 0}
    assert updated["metadata"]["generation"] == 2
    relabelled = await rest.patch(
        GIZMO, "default", "g", {"metadata": {"labels": {"a": "b"}}}, "merge"
    )
    assert relabelled.obj["metadata"]["labels"] == {"a": "b"}
    assert relabelled.obj["metadata"]["generation"] == 2


async def test_status_subresource_takes_status_only(rest: REST) -> None:
    await rest.create(GIZMO, "default", gizmo(replicas=3))
    written = await rest.update(
        GIZMO,
        "default",
        "g",
        gizmo(replicas=9) | {"status": {"replicas": 3, "readyReplicas": 2}},
        subresource="status",
    )
    assert written.obj["spec"] == {"replicas": 3}
    assert written.obj["status"] == {"replicas": 3, "readyReplicas": 2}
    assert written.obj["metadata"]["generation"] == 1
    error = await rejected(
        rest.patch(
            GIZMO, "default", "g", {"status": {"readyReplicas": 4}}, "merge", subresource="status"
        )
    )
    assert error.code == 422
    assert error.message == (
        'Gizmo.example.inplace.dev "g" is invalid: status.readyReplicas: Invalid value: 4: '
        "must not exceed spec.replicas"
    )


async def test_a_declared_subresource_takes_what_its_strategy_takes(rest: REST) -> None:
    await rest.create(GIZMO, "default", gizmo())
    tuned = await rest.patch(
        GIZMO,
        "default",
        "g",
        {"metadata": {"labels": {"ignored": "yes"}}, "spec": {"replicas": 5}},
        "merge",
        subresource="tune",
    )
    assert tuned.obj["spec"] == {"replicas": 5}
    assert "labels" not in tuned.obj["metadata"]
    assert tuned.obj["metadata"]["generation"] == 2
    error = await rejected(
        rest.patch(GIZMO, "default", "g", {"spec": {"replicas": 11}}, "merge", subresource="tune")
    )
    assert error.code == 422
    assert (await get(rest))["spec"] == {"replicas": 5}
    error = await rejected(rest.update(GIZMO, "default", "g", gizmo(), subresource="scale"))
    assert (error.code, error.message) == (405, "update is not supported on gizmos/scale")


async def test_graceful_deletion_is_the_strategys(rest: REST) -> None:
    await rest.create(GIZMO, "default", gizmo())
    deleted = await rest.delete(GIZMO, "default", "g", {})
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 7
    assert deleted["metadata"]["deletionTimestamp"]
    assert (await get(rest))["metadata"]["deletionGracePeriodSeconds"] == 7
    gone = await rest.delete(GIZMO, "default", "g", {"gracePeriodSeconds": 0})
    assert gone["metadata"]["name"] == "g"
    error = await rejected(rest.get_entry(GIZMO, "default", "g"))
    assert error.code == 404
