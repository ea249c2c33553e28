"""The pause contract: a pod paused at its memory limit is answered by exactly one of the VPA
updater and the memory-pause responder. Each side's own code decides here: the updater's
grouping of pods (:func:`~inplace.controllers.vpa.controller.pods_to_update`) and decisions
(:func:`~inplace.controllers.vpa.updater.decide`), the responder's coverage and decision
(:mod:`inplace.controllers.memorypause.decision`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.vpa_targets import Lookup, resolve_target
from inplace.client import key_of
from inplace.controllers.memorypause import decision as responder
from inplace.controllers.vpa import updater
from inplace.controllers.vpa.controller import pods_to_update
from inplace.controllers.vpa.settings import UpdaterSettings
from tests.api.test_vpa_targets import CASES, WEB_POD, lookup, no_deployment
from tests.controllers.memorypause.test_decision import PAUSED_AT, paused_pod


def paused(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` scheduled, running and paused at its memory limit, opted in to bumps."""
    out = paused_pod()
    out["metadata"] = {
        **copy.deepcopy(dict(pod["metadata"])),
        **{"annotations": out["metadata"]["annotations"]},
    }
    out["spec"]["nodeName"] = "n1"
    out["status"]["phase"] = "Running"
    return out


def updater_answers(pod: dict[str, Any], vpas: list[dict[str, Any]], find: Lookup) -> bool:
    """Some VPA's updater takes the pod up (no recommendation yet: it waits for one)."""
    for vpa in vpas:
        mine = pods_to_update(vpa, resolve_target(vpa, find), [pod], vpas, find)
        decisions = updater.decide(vpa, mine, replicas={}, now=0.0, settings=UpdaterSettings())
        if any(d.pod == key_of(pod) and d.action != updater.Action.NONE for d in decisions):
            return True
    return False


def responder_answers(pod: dict[str, Any], vpas: list[dict[str, Any]], find: Lookup) -> bool:
    covered_by = responder.covering_vpa(pod, vpas, find)
    now = datetime.fromtimestamp(PAUSED_AT.timestamp() + 1, UTC)
    answer = responder.decide(pod, now=now, covered_by=covered_by)
    assert answer.action == "resize" or answer.reason == "CoveredByVPA", answer
    return answer.action == "resize"


@pytest.mark.parametrize(("vpas", "find", "_controlling", "answering"), CASES.values(), ids=CASES)
def test_exactly_one_answers_a_pause(
    vpas: list[dict[str, Any]], find: Lookup, _controlling: str | None, answering: str | None
) -> None:
    pod = paused(WEB_POD)
    by_updater = updater_answers(pod, vpas, find)
    assert by_updater != responder_answers(pod, vpas, find)
    assert by_updater == (answering is not None)


def _vpa(target: tuple[str, str], mode: str | None, created: int, namespace: str) -> dict[str, Any]:
    kind, name = target
    spec: dict[str, Any] = {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    return {
        "metadata": {
            "name": f"v{created}",
            "namespace": namespace,
            "creationTimestamp": f"2026-01-{created:02d}T00:00:00Z",
        },
        "spec": spec,
    }


VPAS = st.lists(
    st.builds(
        _vpa,
        st.sampled_from(
            [
                ("Deployment", "web"),
                ("Deployment", "missing"),
                ("Deployment", "bare"),
                ("ReplicaSet", "web-1"),
                ("ReplicaSet", "lone"),
                ("StatefulSet", "web"),
                ("Job", "batch"),
            ]
        ),
        st.sampled_from([None, "Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace"]),
        st.integers(1, 28),
        st.sampled_from(["default", "prod"]),
    ),
    max_size=5,
    unique_by=lambda v: v["metadata"]["name"],
)


@given(
    vpas=VPAS,
    owner=st.sampled_from([("ReplicaSet", "web-1"), ("ReplicaSet", "lone"), None]),
    labels=st.sampled_from([{"app": "web"}, {"app": "lone"}, {}]),
    find=st.sampled_from([lookup, no_deployment]),
)
def test_exactly_one_answers_whatever_the_vpas(
    vpas: list[dict[str, Any]],
    owner: tuple[str, str] | None,
    labels: dict[str, str],
    find: Lookup,
) -> None:
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}
        ]
    pod = paused({"metadata": meta})
    assert updater_answers(pod, vpas, find) != responder_answers(pod, vpas, find)
