"""The per-controller roles: one ``system:controller:<name>`` ClusterRole per controller,
bound to the service account ``kube-system/<name>`` the controller manager runs that
controller as (upstream's ``--use-service-account-credentials``).

Transcribed from upstream's ``bootstrappolicy/controller_policy.go`` (v1.33) for the
controllers a single-host cluster can run (cloud, storage-attach, certificate and
dynamic-resource controllers left out); ``workload-resize-controller``, the rescuer's, the
memory-pause responder's and ``vertical-pod-autoscaler`` are this project's.
"""

from __future__ import annotations

from typing import Any, Final

from inplace.apiserver.authz.policy import (
    READ,
    cluster_role,
    cluster_role_binding,
    events_rule,
    rule,
    subject,
)

__all__ = ["CONTROLLER_NAMESPACE", "controller_role_bindings", "controller_roles"]

#: Where the controllers' service accounts live.
CONTROLLER_NAMESPACE: Final = "kube-system"
_PREFIX: Final = "system:controller:"

_APPS_EXT: Final = ("apps", "extensions")


def _controllers() -> dict[str, list[dict[str, Any]]]:
    """Controller (service account) name → its rules."""
    return {
        "clusterrole-aggregation-controller": [
            rule(
                ("escalate", "get", "list", "watch", "update", "patch"),
                ("rbac.authorization.k8s.io",),
                ("clusterroles",),
            ),
        ],
        "cronjob-controller": [
            rule(("get", "list", "watch", "update"), ("batch",), ("cronjobs",)),
            rule(
                ("get", "list", "watch", "create", "update", "delete", "patch"),
                ("batch",),
                ("jobs",),
            ),
            rule(("update",), ("batch",), ("cronjobs/status",)),
            rule(("update",), ("batch",), ("cronjobs/finalizers",)),
            rule(("list", "watch", "delete"), ("",), ("pods",)),
            events_rule(),
        ],
        "daemon-set-controller": [
            rule(READ, _APPS_EXT, ("daemonsets",)),
            rule(("update",), _APPS_EXT, ("daemonsets/status",)),
            rule(("update",), _APPS_EXT, ("daemonsets/finalizers",)),
            rule(("list", "watch"), ("",), ("nodes",)),
            rule(("list", "watch", "create", "delete", "patch"), ("",), ("pods",)),
            rule(("create",), ("",), ("pods/binding",)),
            rule(
                ("get", "list", "watch", "create", "delete", "update", "patch"),
                ("apps",),
                ("controllerrevisions",),
            ),
            events_rule(),
        ],
        "deployment-controller": [
            rule(("get", "list", "watch", "update"), _APPS_EXT, ("deployments",)),
            rule(("update",), _APPS_EXT, ("deployments/status",)),
            rule(("update",), _APPS_EXT, ("deployments/finalizers",)),
            rule(
                ("get", "list", "watch", "create", "update", "patch", "delete"),
                _APPS_EXT,
                ("replicasets",),
            ),
            rule(("get", "list", "watch", "update"), ("",), ("pods",)),
            events_rule(),
        ],
        "disruption-controller": [
            rule(READ, _APPS_EXT, ("deployments",)),
            rule(READ, _APPS_EXT, ("replicasets",)),
            rule(READ, ("",), ("replicationcontrollers",)),
            rule(READ, ("policy",), ("poddisruptionbudgets",)),
            rule(READ, ("apps",), ("statefulsets",)),
            rule(("update",), ("policy",), ("poddisruptionbudgets/status",)),
            rule(("patch", "update"), ("",), ("pods/status",)),
            rule(("get",), ("*",), ("*/scale",)),
            events_rule(),
        ],
        "endpoint-controller": [
            rule(READ, ("",), ("services", "pods")),
            rule(("get", "list", "create", "update", "delete", "watch"), ("",), ("endpoints",)),
            rule(("create",), ("",), ("endpoints/restricted",)),
            events_rule(),
        ],
        "endpointslice-controller": [
            rule(READ, ("",), ("services", "pods", "nodes")),
            rule(("update",), ("",), ("services/finalizers",)),
            rule(
                ("get", "list", "create", "update", "delete", "watch"),
                ("discovery.k8s.io",),
                ("endpointslices",),
            ),
            events_rule(),
        ],
        "generic-garbage-collector": [
            rule(("get", "list", "watch", "patch", "update", "delete"), ("*",), ("*",)),
            events_rule(),
        ],
        "horizontal-pod-autoscaler": [
            rule(READ, ("autoscaling",), ("horizontalpodautoscalers",)),
            rule(("update",), ("autoscaling",), ("horizontalpodautoscalers/status",)),
            rule(("get", "update"), ("*",), ("*/scale",)),
            rule(("list", "watch"), ("",), ("pods",)),
            rule(("list", "watch"), ("metrics.k8s.io",), ("pods",)),
            rule(READ, ("custom.metrics.k8s.io",), ("*",)),
            rule(READ, ("external.metrics.k8s.io",), ("*",)),
            events_rule(),
        ],
        "job-controller": [
            rule(("get", "list", "watch", "update", "patch"), ("batch",), ("jobs",)),
            rule(("update",), ("batch",), ("jobs/status",)),
            rule(("update",), ("batch",), ("jobs/finalizers",)),
            rule(("list", "watch", "create", "delete", "patch"), ("",), ("pods",)),
            events_rule(),
        ],
        "namespace-controller": [
            rule(("get", "list", "watch", "delete"), ("",), ("namespaces",)),
            rule(("update",), ("",), ("namespaces/finalize", "namespaces/status")),
            rule(("get", "list", "watch", "delete", "deletecollection"), ("*",), ("*",)),
        ],
        "node-controller": [
            rule(("get", "list", "update", "delete", "patch", "watch"), ("",), ("nodes",)),
            rule(("patch", "update"), ("",), ("nodes/status",)),
            rule(("patch", "update"), ("",), ("pods/status",)),
            rule(("list", "watch", "get", "delete"), ("",), ("pods",)),
            events_rule(),
        ],
        "persistent-volume-binder": [
            rule(
                ("get", "list", "watch", "update", "create", "delete"),
                ("",),
                ("persistentvolumes",),
            ),
            rule(("update",), ("",), ("persistentvolumes/status",)),
            rule(("get", "list", "watch", "update"), ("",), ("persistentvolumeclaims",)),
            rule(("update",), ("",), ("persistentvolumeclaims/status",)),
            rule(("list", "watch", "get", "create", "delete"), ("",), ("pods",)),
            rule(READ, ("storage.k8s.io",), ("storageclasses",)),
            rule(("watch", "list"), ("",), ("nodes",)),
            events_rule(),
            rule(("watch",), ("",), ("events",)),
        ],
        "pod-garbage-collector": [
            rule(("list", "watch", "delete"), ("",), ("pods",)),
            rule(READ, ("",), ("nodes",)),
            rule(("patch",), ("",), ("pods/status",)),
        ],
        "pv-protection-controller": [
            rule(("get", "list", "watch", "update"), ("",), ("persistentvolumes",)),
            events_rule(),
        ],
        "pvc-protection-controller": [
            rule(("get", "list", "watch", "update"), ("",), ("persistentvolumeclaims",)),
            rule(("update",), ("",), ("persistentvolumeclaims/status",)),
            rule(READ, ("",), ("pods",)),
            events_rule(),
        ],
        "replicaset-controller": [
            rule(("get", "list", "watch", "update"), _APPS_EXT, ("replicasets",)),
            rule(("update",), _APPS_EXT, ("replicasets/status",)),
            rule(("update",), _APPS_EXT, ("replicasets/finalizers",)),
            rule(("list", "watch", "patch", "create", "delete"), ("",), ("pods",)),
            events_rule(),
        ],
        "replication-controller": [
            rule(("get", "list", "watch", "update"), ("",), ("replicationcontrollers",)),
            rule(("update",), ("",), ("replicationcontrollers/status",)),
            rule(("update",), ("",), ("replicationcontrollers/finalizers",)),
            rule(("list", "watch", "patch", "create", "delete"), ("",), ("pods",)),
            events_rule(),
        ],
        "resourcequota-controller": [
            rule(("list", "watch"), ("*",), ("*",)),
            rule(("update",), ("",), ("resourcequotas/status",)),
            events_rule(),
        ],
        "root-ca-cert-publisher": [
            rule(("create", "update"), ("",), ("configmaps",)),
            events_rule(),
        ],
        "service-account-controller": [
            rule(("create",), ("",), ("serviceaccounts",)),
            events_rule(),
        ],
        "statefulset-controller": [
            rule(("list", "watch"), ("",), ("pods",)),
            rule(READ, ("apps",), ("statefulsets",)),
            rule(("update",), ("apps",), ("statefulsets/status",)),
            rule(("update",), ("apps",), ("statefulsets/finalizers",)),
            rule(("get", "create", "delete", "update", "patch"), ("",), ("pods",)),
            rule(
                ("get", "create", "delete", "update", "patch", "list", "watch"),
                ("apps",),
                ("controllerrevisions",),
            ),
            rule(("get", "create", "list", "watch"), ("",), ("persistentvolumeclaims",)),
            rule(("update", "delete"), ("",), ("persistentvolumeclaims",)),
            rule(("update",), ("",), ("pods/finalizers",)),
            events_rule(),
        ],
        "taint-eviction-controller": [
            rule(("patch", "update"), ("",), ("pods/status",)),
            rule(("list", "get", "delete"), ("",), ("pods",)),
            events_rule(),
        ],
        "ttl-after-finished-controller": [
            rule(("get", "list", "watch", "delete"), ("batch",), ("jobs",)),
            events_rule(),
        ],
        "ttl-controller": [
            rule(("update", "patch", "list", "watch"), ("",), ("nodes",)),
            events_rule(),
        ],
        # This project's, exactly what it does (it reads through the controller manager's
        # shared informers): resize a workload's pods in place, evict the ones that wait too
        # long (InPlacePreferred), and report progress on the workload's status.
        "workload-resize-controller": [
            rule(("patch",), ("",), ("pods/resize",)),
            rule(("create",), ("",), ("pods/eviction",)),
            rule(
                ("patch",),
                ("apps",),
                (
                    "deployments/status",
                    "replicasets/status",
                    "statefulsets/status",
                    "daemonsets/status",
                ),
            ),
            rule(("patch",), ("batch",), ("jobs/status",)),
            events_rule(),
        ],
        # This project's: completes what the operator's webhook held (a ReplicaSet's
        # template, pods' revision labels, the workload given back).
        "in-place-release-controller": [
            rule(("update",), ("apps",), ("replicasets",)),
            rule(("patch",), ("apps",), ("deployments", "statefulsets", "daemonsets")),
            rule(("patch",), ("",), ("pods",)),
            events_rule(),
        ],
        # This project's rescuer: usage from metrics.k8s.io, a donor's size remembered in
        # its annotation (a patch of the pod), then shrunk and grown back by pods/resize.
        "rescue-controller": [
            rule(("list",), ("metrics.k8s.io",), ("pods",)),
            rule(("patch",), ("",), ("pods", "pods/resize")),
            events_rule(),
        ],
        # This project's memory-pause responder: more memory for a paused pod.
        "memory-pause-responder": [
            rule(("patch",), ("",), ("pods/resize",)),
            events_rule(),
        ],
        # The vertical pod autoscaler's recommender and updater in one (upstream's
        # vpa-actor, vpa-status-actor, vpa-checkpoint-actor, evictioner and in-place
        # roles): usage from metrics.k8s.io, the VPAs' status, the checkpoints, resizes
        # and evictions. Pods, VPAs and workloads are read through the shared informers.
        "vertical-pod-autoscaler": [
            rule(("list",), ("metrics.k8s.io",), ("pods",)),
            rule(("patch", "update"), ("autoscaling.k8s.io",), ("verticalpodautoscalers/status",)),
            rule(
                ("get", "list", "watch", "create", "patch", "delete"),
                ("autoscaling.k8s.io",),
                ("verticalpodautoscalercheckpoints",),
            ),
            rule(("patch",), ("",), ("pods/resize",)),
            rule(("create",), ("",), ("pods/eviction",)),
            events_rule(),
        ],
    }


def controller_roles() -> list[dict[str, Any]]:
    return [cluster_role(_PREFIX + name, rules) for name, rules in _controllers().items()]


def controller_role_bindings() -> list[dict[str, Any]]:
    return [
        cluster_role_binding(
            _PREFIX + name, [subject("ServiceAccount", name, CONTROLLER_NAMESPACE)]
        )
        for name in _controllers()
    ]
