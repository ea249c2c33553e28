"""Deployments, ReplicaSets, Jobs and PodDisruptionBudgets: objects, updates, status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from inplace.registry.validation import validate_create, validate_status_update, validate_update
from tests.api.validation.builders import (
    DEPLOYMENT,
    JOB,
    NAMESPACE,
    PDB,
    REPLICASET,
    create_messages,
    deployment,
    job,
    messages,
    mutate,
    namespace,
    pdb,
    replicaset,
    template,
)

VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (DEPLOYMENT, deployment),
    (REPLICASET, replicaset),
    (JOB, job),
    (JOB, lambda: job(parallelism=4, completions=8, completionMode="Indexed")),
    (PDB, lambda: pdb(minAvailable=1)),
    (PDB, lambda: pdb(maxUnavailable="25%")),
    (PDB, pdb),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "deployment selector must match template labels; replicas >= 0",
        DEPLOYMENT,
        lambda: deployment(replicas=-1, selector={"matchLabels": {"app": "api"}}),
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
            "`selector` does not match template `labels`",
        ],
    ),
    (
        "deployment selector required",
        DEPLOYMENT,
        lambda: mutate(deployment(), lambda d: d["spec"].pop("selector")),
        ["spec.selector: Required value"],
    ),
    (
        "deployment template restart policy",
        DEPLOYMENT,
        lambda: deployment(template=template(restart="Never")),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
            '"Always"'
        ],
    ),
    (
        "deployment rolling update",
        DEPLOYMENT,
        lambda: deployment(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"},
            }
        ),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
            "`maxSurge` is 0"
        ],
    ),
    (
        "job counts and restart policy",
        JOB,
        lambda: job(
            parallelism=-1, completions=-2, backoffLimit=-3, template=template(restart="Always")
        ),
        [
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.completions: Invalid value: -2: must be greater than or equal to 0",
            "spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
            # upstream v1.36's validateJobSpec: Always (the template default) is "Required"
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        ],
    ),
    (
        "job manual selector must match",
        JOB,
        lambda: job(manualSelector=True, selector={"matchLabels": {"app": "other"}}),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{}: `selector` does "
            "not match template `labels`"
        ],
    ),
    (
        "pdb: not both",
        PDB,
        lambda: pdb(minAvailable=1, maxUnavailable=1),
        [
            'spec: Invalid value: {"maxUnavailable":1,"minAvailable":1,"selector":{"matchLabels":'
            '{"app":"web"}}}: minAvailable and maxUnavailable cannot be both set'
        ],
    ),
    (
        "pdb: int or percent",
        PDB,
        lambda: pdb(minAvailable="half"),
        [
            "spec.minAvailable: Invalid value: half: a valid percent string must be a numeric "
            "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
            "is '[0-9]+%')"
        ],
    ),
    (
        "pdb: at most 100%, not negative",
        PDB,
        lambda: pdb(maxUnavailable="150%"),
        ["spec.maxUnavailable: Invalid value: 150%: must not be greater than 100%"],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)


def test_deployment_selector_is_immutable_template_is_not() -> None:
    old = deployment()
    changed_template = mutate(
        old, lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="x:2")
    )
    validate_update(DEPLOYMENT, changed_template, old)
    new = mutate(
        old,
        lambda d: (
            d["spec"]["selector"]["matchLabels"].update(tier="a"),
            d["spec"]["template"]["metadata"]["labels"].update(tier="a"),
        ),
    )
    assert messages(lambda: validate_update(DEPLOYMENT, new, old)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"a"}}: field is immutable'
    ]


def test_replicaset_selector_is_immutable() -> None:
    old = replicaset()
    new = mutate(
        old,
        lambda r: r["spec"]["selector"].update(
            matchExpressions=[{"key": "app", "operator": "Exists"}]
        ),
    )
    assert [m.split(":")[0] for m in messages(lambda: validate_update(REPLICASET, new, old))] == [
        "spec.selector"
    ]


def test_job_template_is_immutable_except_container_resources() -> None:
    old = job()
    resized = mutate(
        old,
        lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
            cpu="2"
        ),
    )
    validate_update(JOB, resized, old)
    reimaged = mutate(
        old, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="x:2")
    )
    got = messages(lambda: validate_update(JOB, reimaged, old))
    assert len(got) == 1 and got[0].startswith("spec.template: Invalid value: {")
    assert got[0].endswith(": field is immutable")


def test_job_template_resources_change_only_as_the_running_pods_can_be_resized() -> None:
    old = job()

    def first_container(j: dict[str, Any]) -> dict[str, Any]:
        container: dict[str, Any] = j["spec"]["template"]["spec"]["containers"][0]
        return container

    policy = mutate(
        old,
        lambda j: first_container(j).update(
            resizePolicy=[{"resourceName": "memory", "restartPolicy": "NotRequired"}]
        ),
    )
    # A running pod's resizePolicy cannot change (upstream's resize rules), so neither can
    # the template's: the pods could not follow.
    assert messages(lambda: validate_update(JOB, policy, old)) == [
        "spec.template.spec: Forbidden: only cpu and memory resources are mutable"
    ]
    guaranteed = mutate(
        old,
        lambda j: first_container(j)["resources"].update(
            requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}
        ),
    )
    assert messages(lambda: validate_update(JOB, guaranteed, old)) == [
        'spec.template.spec: Invalid value: "Burstable": Pod QOS Class may not change as a '
        "result of resizing"
    ]
    removed = mutate(old, lambda j: first_container(j)["resources"].update(requests={}))
    assert messages(lambda: validate_update(JOB, removed, old)) == [
        'spec.template.spec: Invalid value: "Burstable": Pod QOS Class may not change as a '
        "result of resizing",
        "spec.template.spec.containers[0].resources.requests: Forbidden: resource requests "
        "cannot be removed",
    ]


def test_job_selector_and_completions_immutable() -> None:
    old = job()
    new = mutate(old, lambda j: j["spec"].update(completions=3))
    assert messages(lambda: validate_update(JOB, new, old)) == [
        "spec.completions: Invalid value: 3: field is immutable"
    ]
    new = mutate(old, lambda j: j["spec"]["selector"]["matchLabels"].update(extra="x"))
    got = messages(lambda: validate_update(JOB, new, old))
    assert any(
        m.startswith("spec.selector: Invalid value:") and m.endswith("field is immutable")
        for m in got
    )


def test_workload_status_counts() -> None:
    old = deployment()
    new = mutate(old, lambda d: d.update(status={"replicas": -1}))
    assert messages(lambda: validate_status_update(DEPLOYMENT, new, old)) == [
        "status.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]
    old_ns = namespace()
    bad_ns = mutate(old_ns, lambda n: n["status"].update(phase="Terminating"))
    assert messages(lambda: validate_status_update(NAMESPACE, bad_ns, old_ns)) == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if "
        "`deletionTimestamp` is empty"
    ]
