"""ControllerRevision helpers: hashing, building, ordering, history truncation, and the
create loop's collision handling against the real API server."""

from __future__ import annotations

from typing import Any

from inplace.client import CONTROLLERREVISIONS
from inplace.controllers.history import (
    REVISION_HASH_LABEL,
    create_revision,
    equal_revision,
    find_equal,
    hash_revision,
    history_to_delete,
    new_revision,
    next_revision_number,
    renumber_revision,
    revision_data,
    sort_revisions,
    template_of,
)
from tests.controllers.conftest import Harness


def template(image: str = "busybox", memory: str = "64Mi") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "c", "image": image, "resources": {"limits": {"memory": memory}}}
            ]
        },
    }


def parent(name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": "u-1", "annotations": {"a": "b"}},
    }


def test_data_restores_the_template_and_reads_back() -> None:
    data = revision_data(template())
    assert data["spec"]["template"]["$patch"] == "replace"
    assert template_of({"data": data}) == template()


def test_hash_is_stable_semantic_and_collision_aware() -> None:
    a = revision_data(template())
    b = {"spec": {"template": dict(reversed(list(a["spec"]["template"].items())))}}
    assert hash_revision(a) == hash_revision(b)  # however the keys were ordered
    assert hash_revision(a) != hash_revision(revision_data(template(image="nginx")))
    assert hash_revision(a, 1) != hash_revision(a) != hash_revision(a, 2)
    assert set(hash_revision(a)) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_new_revision_is_labelled_annotated_and_owned() -> None:
    revision = new_revision(parent(), template(), 3)
    meta = revision["metadata"]
    hash_ = meta["labels"][REVISION_HASH_LABEL]
    assert meta["name"] == f"web-{hash_}"
    assert meta["labels"]["app"] == "web"
    assert meta["annotations"] == {"a": "b"}
    assert meta["ownerReferences"][0]["controller"] is True
    assert revision["revision"] == 3
    named = new_revision(parent(), template(), 1, hash_="abc")
    assert named["metadata"]["name"] == "web-abc"


def test_equality_sorting_numbering_and_truncation() -> None:
    one = new_revision(parent(), template(), 1)
    two = new_revision(parent(), template(image="nginx"), 2)
    three = new_revision(parent(), template(image="redis"), 3)
    assert equal_revision(one, new_revision(parent(), template(), 7))
    assert not equal_revision(one, two)
    assert find_equal([one, two, three], new_revision(parent(), template(image="nginx"), 9)) == [
        two
    ]
    assert sort_revisions([three, one, two]) == [one, two, three]
    assert next_revision_number([one, three]) == 4
    assert next_revision_number([]) == 1
    live = [three["metadata"]["name"]]
    assert history_to_delete([three, two, one], live, 1) == [one]
    assert history_to_delete([three, two, one], live, 2) == []
    assert history_to_delete([three, two, one], live, 0) == [one, two]


async def test_create_takes_an_equal_revision_and_steps_past_a_foreign_one(
    harness: Harness,
) -> None:
    client = harness.client
    owner = {**parent(), "metadata": {**parent()["metadata"], "uid": "0f0f"}}
    revision = new_revision(owner, template(), 1, 0)
    created, count = await create_revision(client, owner, revision, 0)
    assert count == 0 and created["metadata"]["name"] == revision["metadata"]["name"]
    again, count = await create_revision(client, owner, revision, 0)
    assert count == 0 and again["metadata"]["uid"] == created["metadata"]["uid"]
    # Different data squatting on the name the next revision would take.
    first = new_revision(owner, template(image="nginx"), 2, 0)
    squatter = {**first, "data": revision_data(template(image="redis"))}
    await client.create(CONTROLLERREVISIONS, squatter, namespace="default")
    stepped, count = await create_revision(client, owner, first, 0)
    assert count == 1
    assert stepped["metadata"]["name"] == f"web-{hash_revision(first['data'], 1)}"
    assert template_of(stepped) == template(image="nginx")
    renumbered = await renumber_revision(client, stepped, 9)
    assert renumbered["revision"] == 9
