"""Pods and pod specs: create, update and status update, with upstream's paths and messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.api.validation.pods import set_protected_host_paths
from inplace.registry.kinds import Kind
from inplace.registry.validation import validate_create, validate_status_update, validate_update
from tests.api.validation.builders import (
    DNS_LABEL_MSG,
    DNS_SUBDOMAIN_MSG,
    POD,
    burstable_pod,
    c0,
    container,
    create_messages,
    guaranteed_pod,
    messages,
    mutate,
    pod,
)

VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (POD, lambda: pod()),
    (POD, guaranteed_pod),
    (POD, burstable_pod),
    (
        POD,
        lambda: pod(
            container(
                "main",
                limits={"cpu": "2", "memory": "1Gi"},
                requests={"cpu": "1", "memory": "512Mi"},
            )
            | {
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "memory", "restartPolicy": "RestartContainer"},
                ],
                "ports": [{"containerPort": 8080, "name": "http"}],
                "env": [{"name": "JAVA_OPTS", "value": "-Xmx1g"}],
            },
            initContainers=[container("init"), container("sidecar") | {"restartPolicy": "Always"}],
            nodeName="node-1",
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
            ],
        ),
    ),
    (POD, lambda: pod(restart_policy="Never")),
    (POD, lambda: pod(container(limits={"example.com/gpu": "1"}))),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "no containers",
        POD,
        lambda: mutate(pod(), lambda p: p["spec"].update(containers=[])),
        ["spec.containers: Required value"],
    ),
    (
        "container names",
        POD,
        lambda: pod(container("App"), container("b"), container("b")),
        [
            f'spec.containers[0].name: Invalid value: "App": {DNS_LABEL_MSG}',
            'spec.containers[2].name: Duplicate value: "b"',
        ],
    ),
    (
        "init container name collides with a container",
        POD,
        lambda: pod(container("app"), initContainers=[container("app")]),
        ['spec.initContainers[0].name: Duplicate value: "app"'],
    ),
    (
        "image required (the runtime runs command, but upstream requires image)",
        POD,
        lambda: mutate(pod(), lambda p: c0(p).pop("image")),
        ["spec.containers[0].image: Required value"],
    ),
    (
        "restart policy",
        POD,
        lambda: mutate(pod(), lambda p: p["spec"].update(restartPolicy="Sometimes")),
        [
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"'
        ],
    ),
    (
        "container restartPolicy only on init containers, only Always",
        POD,
        lambda: pod(
            container() | {"restartPolicy": "Always"},
            initContainers=[container("init") | {"restartPolicy": "OnFailure"}],
        ),
        [
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported '
            'values: "Always"',
        ],
    ),
    (
        "resize policy entries",
        POD,
        lambda: pod(
            container()
            | {
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "cpu", "restartPolicy": "Sometimes"},
                    {"resourceName": "ephemeral-storage", "restartPolicy": "NotRequired"},
                ]
            }
        ),
        [
            'spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"',
            'spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: '
            '"NotRequired", "RestartContainer"',
            'spec.containers[0].resizePolicy: Unsupported value: "ephemeral-storage": supported '
            'values: "cpu", "memory"',
        ],
    ),
    (
        "restartPolicy Never allows only NotRequired resize policies",
        POD,
        lambda: pod(
            container()
            | {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]},
            restart_policy="Never",
        ),
        [
            'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
            "'NotRequired' when `restartPolicy` is 'Never'"
        ],
    ),
    (
        "volumeMount naming no volume",
        POD,
        lambda: pod(container() | {"volumeMounts": [{"name": "data", "mountPath": "/data"}]}),
        ['spec.containers[0].volumeMounts[0].name: Not found: "data"'],
    ),
    (
        "subPath and subPathExpr descend (upstream reports them at volumeMounts.subPath)",
        POD,
        lambda: pod(
            container()
            | {
                "volumeMounts": [
                    {"name": "v", "mountPath": "/a", "subPath": "../etc"},
                    {"name": "v", "mountPath": "/b", "subPath": "/abs"},
                    {"name": "v", "mountPath": "/c", "subPath": "x", "subPathExpr": "$(X)/.."},
                ]
            },
            volumes=[{"name": "v", "emptyDir": {}}],
        ),
        [
            'spec.containers[0].volumeMounts.subPath: Invalid value: "../etc": must not '
            "contain '..'",
            'spec.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative '
            "path",
            'spec.containers[0].volumeMounts[2].subPathExpr: Invalid value: "$(X)/..": subPathExpr '
            "and subPath are mutually exclusive",
            'spec.containers[0].volumeMounts.subPathExpr: Invalid value: "$(X)/..": must not '
            "contain '..'",
        ],
    ),
    (
        "node name",
        POD,
        lambda: pod(nodeName="Node_1"),
        [f'spec.nodeName: Invalid value: "Node_1": {DNS_SUBDOMAIN_MSG}'],
    ),
    (
        "our annotations",
        POD,
        lambda: mutate(
            pod(),
            lambda p: p["metadata"].update(
                annotations={
                    "inplace.dev/resize-policy": "Sometimes",
                    "inplace.dev/oom-kill-disable": "yes",
                }
            ),
        ),
        [
            'metadata.annotations[inplace.dev/resize-policy]: Unsupported value: "Sometimes": '
            'supported values: "InPlaceOnly", "InPlacePreferred", "Restart"',
            'metadata.annotations[inplace.dev/oom-kill-disable]: Unsupported value: "yes": '
            'supported values: "true", "false"',
        ],
    ),
    (
        "the rescuer's and the pause annotations",
        POD,
        lambda: mutate(
            pod(),
            lambda p: p["metadata"].update(
                annotations={
                    "inplace.dev/shrinkable": "maybe",
                    "inplace.dev/original-resources": '{"main": {"requests": {"gpu": "1"}}}',
                    "inplace.dev/memory-on-pause": "x0.5",
                    "inplace.dev/memory-max": "lots",
                    "inplace.dev/pause-timeout": "5",
                }
            ),
        ),
        [
            'metadata.annotations[inplace.dev/shrinkable]: Unsupported value: "maybe": '
            'supported values: "true", "false"',
            "metadata.annotations[inplace.dev/original-resources]: Invalid value: "
            '"{\\"main\\": {\\"requests\\": {\\"gpu\\": \\"1\\"}}}": '
            "main.requests: only cpu and memory, not 'gpu'",
            'metadata.annotations[inplace.dev/memory-on-pause]: Invalid value: "x0.5": '
            "the factor must be greater than 1",
            'metadata.annotations[inplace.dev/memory-max]: Invalid value: "lots": '
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            'metadata.annotations[inplace.dev/pause-timeout]: Invalid value: "5": '
            'time: missing unit in duration "5"',
        ],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_objects(k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(k, build())) == sorted(expected)


def test_validation_requires_defaulted_objects() -> None:
    raw = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    }
    assert sorted(create_messages(POD, raw)) == [
        "spec.containers[0].imagePullPolicy: Required value",
        "spec.containers[0].terminationMessagePolicy: Required value",
        "spec.dnsPolicy: Required value",
        "spec.restartPolicy: Required value",
        "spec.terminationGracePeriodSeconds: Required value",
    ]


def test_pod_update_allows_image_and_added_tolerations() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p).update(image="busybox:1.37"))
    new["spec"]["tolerations"].append({"key": "x", "operator": "Exists", "effect": "NoSchedule"})
    new["metadata"]["labels"] = {"tier": "web"}
    validate_update(POD, new, old)


def test_pod_update_forbids_resource_changes() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p)["resources"]["limits"].update(cpu="2"))
    (message,) = messages(lambda: validate_update(POD, new, old))
    assert message.startswith(
        "spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)\n"
    )
    assert "spec.containers[0].resources.limits[cpu]: 1 -> 2" in message


def test_pod_update_semantic_equality() -> None:
    old = guaranteed_pod()
    new = mutate(old, lambda p: c0(p)["resources"]["limits"].update(cpu="1000m"))
    new["spec"]["hostNetwork"] = False  # Go's zero value, same as absent
    validate_update(POD, new, old)


def test_pod_update_immutable_metadata_and_node_name() -> None:
    old = pod()
    new = mutate(
        old, lambda p: (p["metadata"].update(name="api", uid="u2"), p["spec"].update(nodeName="n1"))
    )
    got = messages(lambda: validate_update(POD, new, old))
    assert 'metadata.name: Invalid value: "api": field is immutable' in got
    assert 'metadata.uid: Invalid value: "u2": field is immutable' in got
    assert any(
        m.startswith("spec: Forbidden: pod updates may not change") and "spec.nodeName" in m
        for m in got
    )


def test_pod_update_tolerations_only_added() -> None:
    old = pod()
    new = mutate(old, lambda p: p["spec"]["tolerations"].pop())
    assert messages(lambda: validate_update(POD, new, old)) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ]


def test_pod_update_containers_count() -> None:
    old = pod()
    new = mutate(old, lambda p: p["spec"]["containers"].append(c0(pod(container("two")))))
    assert messages(lambda: validate_update(POD, new, old)) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]


def test_pod_status_update() -> None:
    old = mutate(guaranteed_pod(), lambda p: p.update(status={"qosClass": "Guaranteed"}))
    ok = mutate(
        old,
        lambda p: p["status"].update(
            conditions=[{"type": "PodResizeInProgress", "status": "True"}], phase="Running"
        ),
    )
    validate_status_update(POD, ok, old)
    bad = mutate(
        old, lambda p: (p["status"].update(qosClass="Burstable"), p["spec"].update(nodeName="n"))
    )
    assert sorted(messages(lambda: validate_status_update(POD, bad, old))) == [
        "status.nodeName: Forbidden: may not be changed directly",
        'status.qosClass: Invalid value: "Burstable": field is immutable',
    ]


def test_host_path_under_the_cluster_data_dir_is_refused() -> None:
    set_protected_host_paths(("/var/lib/inplace",))
    try:
        for path, refused in (
            ("/var/lib/inplace", True),
            ("/var/lib/inplace/pki/", True),
            ("/var/lib/inplace/../inplace/store", True),
            ("/var/lib/inplace-other", False),
            ("/var/lib", False),
        ):
            built = pod(volumes=[{"name": "h", "hostPath": {"path": path, "type": ""}}])
            if refused:
                assert create_messages(POD, built) == [
                    f'spec.volumes[0].hostPath.path: Invalid value: "{path}": must not be the '
                    "cluster's data directory /var/lib/inplace or lie under it"
                ], path
            else:
                validate_create(POD, built)
    finally:
        set_protected_host_paths(())
