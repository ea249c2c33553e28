"""Owner references, pod state, upstream's deletion order, and creating a pod exactly once
when the connection loses the answer."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from inplace.client import PODS, REPLICASETS, APIAlreadyExistsError, Client
from inplace.client.errors import APIConnectionError
from inplace.controllers.events import ControllerEvents
from inplace.controllers.pods import (
    PodControl,
    controller_of,
    controller_ref,
    deletion_order,
    is_active,
    is_available,
    pod_from_template,
    with_type,
)
from tests.controllers.conftest import Harness

T0 = 1767225600.0


def pod(
    name: str,
    *,
    node: str = "",
    phase: str = "Pending",
    ready_at: str | None = None,
    restarts: int = 0,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready_at})
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_deletion_order_removes_the_least_far_along_first() -> None:
    pods = [
        pod("ready-old", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z"),
        pod("ready-new", node="n", phase="Running", ready_at="2026-01-01T00:05:00Z"),
        pod("running", node="n", phase="Running"),
        pod("pending", node="n"),
        pod("unscheduled"),
        pod("crashy", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z", restarts=5),
    ]
    assert names(deletion_order(pods)) == [
        "unscheduled",
        "pending",
        "running",
        "ready-new",
        "crashy",
        "ready-old",
    ]


def test_deletion_order_prefers_crowded_nodes() -> None:
    a = pod("on-a", node="a", phase="Running", ready_at="2026-01-01T00:00:00Z")
    b = pod("on-b", node="b", phase="Running", ready_at="2026-01-01T00:00:00Z")
    assert names(deletion_order([a, b], colocated={"a": 1, "b": 3})) == ["on-b", "on-a"]


def test_state_helpers() -> None:
    assert is_active(pod("p", phase="Running"))
    assert not is_active(pod("p", phase="Succeeded"))
    deleting = pod("p", phase="Running")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not is_active(deleting)
    ready = pod("p", phase="Running", ready_at="2026-01-01T00:00:00Z")
    assert is_available(ready, 0, T0)
    assert not is_available(ready, 30, T0 + 10)
    assert is_available(ready, 30, T0 + 30)
    assert not is_available(pod("p"), 0, T0)


def test_pod_from_template_carries_labels_annotations_finalizers_and_the_owner() -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "ns", "uid": "u1"},
    }
    template = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"inplace.dev/resize-policy": "InPlacePreferred"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    made = pod_from_template(template, owner, extra_finalizers=["x/y"])
    assert made["metadata"] == {
        "generateName": "web-abc-",
        "namespace": "ns",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-abc",
                "uid": "u1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "labels": {"app": "web"},
        "annotations": {"inplace.dev/resize-policy": "InPlacePreferred"},
        "finalizers": ["x/y"],
    }
    assert made["spec"] == template["spec"] and made["spec"] is not template["spec"]
    assert controller_of(made) == controller_ref(owner)
    assert controller_of({"metadata": {"ownerReferences": [{"uid": "x"}]}}) is None


def test_a_resize_leaves_the_lifecycle_signature_alone() -> None:
    from inplace.controllers.pods import lifecycle_signature

    before = pod("p", node="n", phase="Running", ready_at="2026-01-01T00:00:00Z")
    before["spec"]["containers"] = [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]
    resized = copy.deepcopy(before)
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    resized["status"]["containerStatuses"][0]["resources"] = {"requests": {"cpu": "2"}}
    resized["status"]["conditions"].append({"type": "PodResizeInProgress", "status": "True"})
    assert lifecycle_signature(resized) == lifecycle_signature(before)
    unready = copy.deepcopy(before)
    unready["status"]["conditions"][0]["status"] = "False"
    assert lifecycle_signature(unready) != lifecycle_signature(before)
    relabelled = copy.deepcopy(before)
    relabelled["metadata"]["labels"] = {"app": "other"}
    assert lifecycle_signature(relabelled) != lifecycle_signature(before)


# -- creating exactly once ---------------------------------------------------------------------


class LosingClient:
    """The real client, except that the next creates lose their answer with the connection:
    ``stored`` says whether each lost create reached the store first (the API server died
    after the commit) or not (it died before), and ``stored_as`` makes the stored pod
    someone else's."""

    def __init__(self, client: Client, stored: list[bool], stored_as: str | None = None) -> None:
        self.client = client
        self.stored = stored
        self.stored_as = stored_as
        self.attempts: list[str] = []

    async def create(self, resource: Any, body: dict[str, Any], **kwargs: Any) -> Any:
        self.attempts.append(body["metadata"]["name"])
        if not self.stored:
            return await self.client.create(resource, body, **kwargs)
        if self.stored.pop(0):
            if self.stored_as is not None:
                body = copy.deepcopy(body)
                body["metadata"]["ownerReferences"][0]["uid"] = self.stored_as
            await self.client.create(resource, body, **kwargs)
        raise APIConnectionError("POST pods: Server disconnected")

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            "the roles upstream gives the workload controllers have no get on pods (the "
            "API server answers 403): a lost create is looked for by a list"
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


async def make_owner(client: Client) -> dict[str, Any]:
    labels = {"app": "once"}
    body = {
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }
    owner: dict[str, Any] = await client.create(REPLICASETS, body, namespace="default")
    return with_type(owner, REPLICASETS)


async def owned_pods(client: Client) -> list[str]:
    listed = await client.list(PODS, namespace="default", label_selector="app=once")
    return sorted(p["metadata"]["name"] for p in listed["items"])


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param([True], id="answer-lost-after-the-commit"),
        pytest.param([False, False], id="server-gone-before-the-commit"),
        pytest.param([False, True], id="stored-on-the-second-try"),
    ],
)
async def test_a_create_whose_answer_is_lost_makes_exactly_one_pod(
    harness: Harness, stored: list[bool]
) -> None:
    """The chaos storm killed the API server just after it stored a ReplicaSet's pod: the
    controller, told nothing, made another one for the same slot. The pod is now named before
    it is sent, so sending it again is refused as a duplicate instead."""
    owner = await make_owner(harness.client)
    losing = LosingClient(harness.client, stored)
    control = PodControl(cast(Client, losing), ControllerEvents(harness.client, "test"))
    pod = pod_from_template(owner["spec"]["template"], owner)

    created = await control.create(owner, pod)

    assert await owned_pods(harness.client) == [created["metadata"]["name"]]
    assert created["metadata"]["name"].startswith("once-")
    assert set(losing.attempts) == {created["metadata"]["name"]}
    assert controller_of(created) == controller_ref(owner)


async def test_a_lost_create_that_meets_someone_elses_pod_is_refused(harness: Harness) -> None:
    owner = await make_owner(harness.client)
    losing = LosingClient(harness.client, [True], stored_as="another-owner")
    control = PodControl(cast(Client, losing), ControllerEvents(harness.client, "test"))

    with pytest.raises(APIAlreadyExistsError):
        await control.create(owner, pod_from_template(owner["spec"]["template"], owner))


async def test_a_server_gone_for_longer_than_the_retry_is_reported(harness: Harness) -> None:
    owner = await make_owner(harness.client)
    losing = LosingClient(harness.client, [False] * 100)
    control = PodControl(
        cast(Client, losing), ControllerEvents(harness.client, "test"), lost_create_retry=1.0
    )

    with pytest.raises(APIConnectionError):
        await control.create(owner, pod_from_template(owner["spec"]["template"], owner))
    assert await owned_pods(harness.client) == []
    assert len(set(losing.attempts)) == 1
