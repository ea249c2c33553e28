"""StatefulSets, DaemonSets and ControllerRevisions: objects, updates, status, with upstream's
paths and messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from inplace.registry.validation import validate_create, validate_status_update, validate_update
from tests.api.validation.builders import (
    CONTROLLERREVISION,
    DAEMONSET,
    STATEFULSET,
    create_messages,
    daemon_set,
    messages,
    mutate,
    stateful_set,
    template,
)

MISMATCH = (
    'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
    "`selector` does not match template `labels`"
)


def claim_template(name: str = "data", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }


def revision(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-5d8f", "namespace": "default"},
        "revision": 1,
        "data": {"spec": {"template": {"$patch": "replace", **template()}}},
        **fields,
    }


def mounted_claim() -> dict[str, Any]:
    """A StatefulSet whose container mounts its claim template by name (no such volume in
    the pod template: the controller adds it)."""
    sts = stateful_set(volumeClaimTemplates=[claim_template()])
    sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}
    ]
    return sts


VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (STATEFULSET, stateful_set),
    (STATEFULSET, mounted_claim),
    (STATEFULSET, lambda: stateful_set(podManagementPolicy="Parallel", serviceName="")),
    (STATEFULSET, lambda: stateful_set(updateStrategy={"type": "OnDelete"})),
    (
        STATEFULSET,
        lambda: stateful_set(
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}
        ),
    ),
    (DAEMONSET, daemon_set),
    (DAEMONSET, lambda: daemon_set(updateStrategy={"type": "OnDelete"})),
    (
        DAEMONSET,
        lambda: daemon_set(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"},
            }
        ),
    ),
    (CONTROLLERREVISION, revision),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "statefulset selector must match the template",
        STATEFULSET,
        lambda: stateful_set(selector={"matchLabels": {"app": "api"}}),
        [MISMATCH],
    ),
    (
        "statefulset selector required (and then selects nothing)",
        STATEFULSET,
        lambda: mutate(stateful_set(), lambda s: s["spec"].pop("selector")),
        ["spec.selector: Required value", MISMATCH],
    ),
    (
        "statefulset empty selector",
        STATEFULSET,
        lambda: stateful_set(selector={}),
        ["spec.selector: Invalid value: {}: empty selector is invalid for statefulset"],
    ),
    (
        "statefulset enums",
        STATEFULSET,
        lambda: stateful_set(
            podManagementPolicy="Sometimes",
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep", "whenScaled": "Retain"},
        ),
        [
            "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or "
            "'Parallel'",
            'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": '
            'supported values: "Retain", "Delete"',
        ],
    ),
    (
        "statefulset rolling update",
        STATEFULSET,
        lambda: stateful_set(
            replicas=-1,
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"partition": -1, "maxUnavailable": 0},
            },
        ),
        [
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater "
            "than or equal to 0",
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0",
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "statefulset maxUnavailable above 100%",
        STATEFULSET,
        lambda: stateful_set(
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 150%: must not be "
            "greater than 100%"
        ],
    ),
    (
        "statefulset OnDelete takes no rollingUpdate",
        STATEFULSET,
        lambda: stateful_set(updateStrategy={"type": "OnDelete", "rollingUpdate": {}}),
        [
            "spec.updateStrategy.rollingUpdate: Invalid value: {}: only allowed for "
            "updateStrategy 'RollingUpdate'"
        ],
    ),
    (
        "statefulset pods always restart",
        STATEFULSET,
        lambda: stateful_set(template=template(restart="Never")),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
            '"Always"'
        ],
    ),
    (
        "statefulset name and service name are DNS labels",
        STATEFULSET,
        lambda: mutate(
            stateful_set(serviceName="Web"), lambda s: s["metadata"].update(name="web.v1")
        ),
        [
            'metadata.name: Invalid value: "web.v1": must not contain dots',
            'spec.serviceName: Invalid value: "Web": a lowercase RFC 1123 label must consist of '
            "lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
            "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ],
    ),
    (
        "statefulset claim templates are claims",
        STATEFULSET,
        lambda: stateful_set(
            volumeClaimTemplates=[
                claim_template(),
                {"metadata": {"name": "logs"}, "spec": {"resources": {"requests": {}}}},
            ]
        ),
        [
            "spec.volumeClaimTemplates[1].spec.accessModes: Required value: at least 1 access "
            "mode is required",
            "spec.volumeClaimTemplates[1].spec.resources[storage]: Required value",
        ],
    ),
    (
        "daemonset selector must match the template",
        DAEMONSET,
        lambda: daemon_set(selector={"matchLabels": {"app": "api"}}),
        [MISMATCH],
    ),
    (
        "daemonset without a selector selects nothing",
        DAEMONSET,
        lambda: mutate(daemon_set(), lambda d: d["spec"].pop("selector")),
        [MISMATCH],
    ),
    (
        "daemonset empty selector",
        DAEMONSET,
        lambda: daemon_set(selector={}),
        ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"],
    ),
    (
        "daemonset pods always restart and have no deadline",
        DAEMONSET,
        lambda: mutate(
            daemon_set(template=template(restart="OnFailure")),
            lambda d: d["spec"]["template"]["spec"].update(activeDeadlineSeconds=5),
        ),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported '
            'values: "Always"',
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
            "DaemonSet is not Supported",
        ],
    ),
    (
        "daemonset rolling update: not both zero",
        DAEMONSET,
        lambda: daemon_set(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "0%", "maxSurge": 0},
            }
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when "
            "maxSurge is 0"
        ],
    ),
    (
        "daemonset rolling update: not both set",
        DAEMONSET,
        lambda: daemon_set(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "120%"},
            }
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 120%: must not be "
            "greater than 100%",
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 120%: may not be set "
            "when maxUnavailable is non-zero",
        ],
    ),
    (
        "daemonset history limit",
        DAEMONSET,
        lambda: daemon_set(revisionHistoryLimit=-1, minReadySeconds=-2),
        [
            "spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0",
            "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "controllerrevision revision and data",
        CONTROLLERREVISION,
        lambda: mutate(revision(revision=-1), lambda r: r.pop("data")),
        [
            "revision: Invalid value: -1: must be greater than or equal to 0",
            "data: Required value: data is mandatory",
        ],
    ),
    (
        "controllerrevision data is an object",
        CONTROLLERREVISION,
        lambda: revision(data=[1, 2]),
        ["data: Required value: data must be a valid JSON object"],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)


def test_daemonset_unknown_strategy_is_unsupported() -> None:
    got = create_messages(DAEMONSET, daemon_set(updateStrategy={"type": "Surge"}))
    assert len(got) == 1
    assert got[0].startswith("spec.updateStrategy: Unsupported value: ")
    assert got[0].endswith('supported values: "RollingUpdate", "OnDelete"')


def test_statefulset_spec_changes_only_in_what_a_rollout_follows() -> None:
    old = stateful_set(volumeClaimTemplates=[claim_template()])
    for change in (
        lambda s: s["spec"].update(replicas=5, minReadySeconds=3, revisionHistoryLimit=2),
        lambda s: s["spec"]["template"]["spec"]["containers"][0].update(image="busybox:2"),
        lambda s: s["spec"].update(updateStrategy={"type": "OnDelete"}),
        lambda s: s["spec"].update(ordinals={"start": 2}),
        lambda s: s["spec"]["persistentVolumeClaimRetentionPolicy"].update(whenDeleted="Delete"),
    ):
        validate_update(STATEFULSET, mutate(old, change), old)
    forbidden = (
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    )
    for change in (
        lambda s: s["spec"].update(serviceName="other"),
        lambda s: s["spec"].update(podManagementPolicy="Parallel"),
        lambda s: s["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"].update(
            storage="2Gi"
        ),
    ):
        assert messages(lambda c=change: validate_update(STATEFULSET, mutate(old, c), old)) == [
            forbidden
        ]
    relabelled = mutate(
        old,
        lambda s: (
            s["spec"]["selector"]["matchLabels"].update(tier="a"),
            s["spec"]["template"]["metadata"]["labels"].update(tier="a"),
        ),
    )
    assert messages(lambda: validate_update(STATEFULSET, relabelled, old)) == [forbidden]


def test_statefulset_update_tolerates_what_was_stored() -> None:
    """An invalid service name (immutable) is kept; a stored template that fails today's
    rules is not re-checked; the name is not re-validated."""
    old = mutate(stateful_set(serviceName="Web"), lambda s: s["metadata"].update(name="web.v1"))
    old["spec"]["template"]["spec"]["containers"][0]["image"] = ""
    scaled = mutate(old, lambda s: s["spec"].update(replicas=4))
    validate_update(STATEFULSET, scaled, old)


def test_statefulset_status() -> None:
    old = stateful_set()
    old["status"] = {"replicas": 2, "collisionCount": 2}
    new = mutate(
        old,
        lambda s: s.update(
            status={"replicas": 2, "readyReplicas": 3, "availableReplicas": 1, "collisionCount": 1}
        ),
    )
    assert messages(lambda: validate_status_update(STATEFULSET, new, old)) == [
        "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas",
        "status.collisionCount: Invalid value: 1: cannot be decremented",
    ]
    new = mutate(old, lambda s: s.update(status={"replicas": 2, "availableReplicas": 1}))
    assert messages(lambda: validate_status_update(STATEFULSET, new, old)) == [
        "status.availableReplicas: Invalid value: 1: cannot be greater than status.readyReplicas",
        "status.collisionCount: Invalid value: 0: cannot be decremented",
    ]


def test_daemonset_selector_is_immutable() -> None:
    old = daemon_set()
    new = mutate(
        old,
        lambda d: (
            d["spec"]["selector"]["matchLabels"].update(tier="a"),
            d["spec"]["template"]["metadata"]["labels"].update(tier="a"),
        ),
    )
    assert messages(lambda: validate_update(DAEMONSET, new, old)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"a"}}: field is immutable'
    ]


def test_daemonset_status_counts() -> None:
    old = daemon_set()
    new = mutate(old, lambda d: d.update(status={"numberReady": -1, "numberMisscheduled": -2}))
    assert messages(lambda: validate_status_update(DAEMONSET, new, old)) == [
        "status.numberMisscheduled: Invalid value: -2: must be greater than or equal to 0",
        "status.numberReady: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_controllerrevision_data_is_immutable() -> None:
    old = revision()
    validate_update(
        CONTROLLERREVISION, mutate(old, lambda r: r["metadata"].update(labels={"a": "b"})), old
    )
    new = mutate(old, lambda r: r.update(data={"spec": {}}))
    assert messages(lambda: validate_update(CONTROLLERREVISION, new, old)) == [
        'data: Invalid value: {"spec":{}}: field is immutable'
    ]


def test_daemonset_template_generation_must_be_an_integer() -> None:
    """apps/v1 converts the annotation to the internal ``spec.templateGeneration`` with
    ``strconv.ParseInt``; what does not parse is refused (here a 422 naming it)."""
    for text in ("two", "1.5", " 3", "4_0"):
        ds = mutate(
            daemon_set(),
            lambda d, t=text: d["metadata"].update(
                annotations={"deprecated.daemonset.template.generation": t}
            ),
        )
        assert create_messages(DAEMONSET, ds) == [
            "metadata.annotations[deprecated.daemonset.template.generation]: Invalid value: "
            f'"{text}": must be an integer (the DaemonSet\'s template generation)'
        ]
    for text in ("+2", "-1", "7"):
        ds = mutate(
            daemon_set(),
            lambda d, t=text: d["metadata"].update(
                annotations={"deprecated.daemonset.template.generation": t}
            ),
        )
        if text == "-1":
            assert create_messages(DAEMONSET, ds) == [
                "spec.templateGeneration: Invalid value: -1: must be greater than or equal to 0"
            ]
        else:
            validate_create(DAEMONSET, ds)
