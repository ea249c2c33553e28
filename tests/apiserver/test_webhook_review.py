"""The AdmissionReview sent and upstream's verdicts on the answers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from inplace.apiserver.auth import User
from inplace.apiserver.errors import StatusError
from inplace.apiserver.webhooks.matching import Resource
from inplace.apiserver.webhooks.review import (
    CallFailed,
    apply_patch,
    build_review,
    denied,
    dry_run_unsupported,
    parse_response,
)

V1 = Resource("example.com", "v1", "widgets", "Widget", True)
V2 = Resource("example.com", "v2", "widgets", "Widget", True)


def test_the_review_names_the_matched_and_the_requested_version() -> None:
    review = build_review(
        "u1",
        operation="UPDATE",
        matched=V1,
        requested=V2,
        subresource="status",
        name="w",
        namespace="ns",
        user=User("alice", ("team",), "uid-1", (("scopes", ("a",)),)),
        obj={"apiVersion": "example.com/v2", "kind": "Widget"},
        old={"apiVersion": "example.com/v2", "kind": "Widget"},
        dry_run=True,
        options={"kind": "UpdateOptions"},
    )
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert request["kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert request["requestResource"] == {
        "group": "example.com",
        "version": "v2",
        "resource": "widgets",
    }
    assert request["object"]["apiVersion"] == "example.com/v1"
    assert request["oldObject"]["apiVersion"] == "example.com/v1"
    assert (request["subResource"], request["requestSubResource"]) == ("status", "status")
    assert request["userInfo"] == {
        "username": "alice",
        "uid": "uid-1",
        "groups": ["team"],
        "extra": {"scopes": ["a"]},
    }
    assert request["dryRun"] is True


def answer(**response: Any) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    ).encode()


PATCH = base64.b64encode(b'[{"op":"add","path":"/a","value":1}]').decode()


@pytest.mark.parametrize(
    ("body", "mutating", "reason"),
    [
        (b"<html>", True, "failed to call webhook: couldn't get version/kind; json parse error"),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            True,
            "received invalid webhook response: webhook response was absent",
        ),
        (
            answer(uid="other", allowed=True),
            True,
            'received invalid webhook response: expected response.uid="u", got "other"',
        ),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1beta1",
                    "kind": "AdmissionReview",
                    "response": {"uid": "u", "allowed": True},
                }
            ).encode(),
            True,
            "received invalid webhook response: expected webhook response of "
            "admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, "
            "Kind=AdmissionReview",
        ),
        (
            answer(uid="u", allowed=True, patch=PATCH, patchType="JSONPatch"),
            False,
            "received invalid webhook response: validating webhook may not return "
            "response.patchType",
        ),
        (
            answer(uid="u", allowed=True, patch=PATCH),
            True,
            "received invalid webhook response: webhook returned response.patch but not "
            "response.patchType",
        ),
    ],
)
def test_bad_answers_are_call_failures(body: bytes, mutating: bool, reason: str) -> None:
    with pytest.raises(CallFailed) as failed:
        parse_response("w.example.com", body, "u", mutating=mutating)
    assert str(failed.value).startswith(f'failed calling webhook "w.example.com": {reason}')


def test_a_good_answer() -> None:
    verdict = parse_response(
        "w",
        answer(uid="u", allowed=True, patch=PATCH, patchType="JSONPatch", warnings=["careful"]),
        "u",
        mutating=True,
    )
    assert verdict.allowed and verdict.warnings == ("careful",)
    assert verdict.patch == [{"op": "add", "path": "/a", "value": 1}]
    assert apply_patch("w", {}, verdict.patch) == {"a": 1}


def test_a_patch_that_does_not_apply_or_has_no_object_is_an_internal_error() -> None:
    with pytest.raises(StatusError) as error:
        apply_patch("w", {}, [{"op": "remove", "path": "/missing"}])
    assert error.value.code == 500
    assert error.value.message.startswith("Internal error occurred: ")
    with pytest.raises(StatusError) as error:
        apply_patch("w", None, [{"op": "add", "path": "/a", "value": 1}])
    assert error.value.message == (
        'Internal error occurred: admission webhook "w" attempted to modify the object, which '
        "is not supported for this operation"
    )


@pytest.mark.parametrize(
    ("result", "code", "message"),
    [
        ({"message": "no", "code": 403}, 403, 'admission webhook "w" denied the request: no'),
        ({"reason": "Because"}, 400, 'admission webhook "w" denied the request: Because'),
        ({"code": 200}, 400, 'admission webhook "w" denied the request without explanation'),
    ],
)
def test_refusals(result: dict[str, Any], code: int, message: str) -> None:
    error = denied("w", result)
    assert (error.code, error.message) == (code, message)
    assert error.status()["status"] == "Failure"


def test_dry_run_unsupported() -> None:
    error = dry_run_unsupported("w")
    assert (error.code, error.message) == (400, 'admission webhook "w" does not support dry run')
