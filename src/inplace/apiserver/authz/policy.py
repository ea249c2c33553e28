"""The default roles and bindings, as upstream's bootstrap policy creates them.

Transcribed from upstream's ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``
(``policy.go``, ``namespace_policy.go``; the per-controller roles are in
:mod:`.controller_policy`) as of v1.33, feature-gated roles left out. Every object carries
upstream's ``kubernetes.io/bootstrapping: rbac-defaults`` label and the
``rbac.authorization.kubernetes.io/autoupdate: "true"`` annotation, which lets the API server
add back at start whatever a default lost (:mod:`.reconcile`).

A few roles are this project's own and say so in their names (``system:inplace:...``): the
resize arbiter inside the scheduler evicts pods, which upstream's scheduler never does, and the
dashboard reads what it shows and resizes pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from inplace.apiserver.auth import DASHBOARD_USER

__all__ = [
    "AUTOUPDATE_ANNOTATION",
    "BOOTSTRAP_LABEL",
    "DASHBOARD_USER",
    "READ",
    "READ_WRITE",
    "WRITE",
    "cluster_role",
    "cluster_role_bindings",
    "cluster_roles",
    "events_rule",
    "namespace_role_bindings",
    "namespace_roles",
    "rule",
    "subject",
]

BOOTSTRAP_LABEL: Final = ("kubernetes.io/bootstrapping", "rbac-defaults")
AUTOUPDATE_ANNOTATION: Final = "rbac.authorization.kubernetes.io/autoupdate"
RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"

READ: Final = ("get", "list", "watch")
WRITE: Final = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE: Final = READ + WRITE
READ_UPDATE: Final = ("get", "list", "watch", "update", "patch")


_LEGACY: Final = ""
_APPS: Final = "apps"
_AUTHN: Final = "authentication.k8s.io"
_AUTHZ: Final = "authorization.k8s.io"
_AUTOSCALING: Final = "autoscaling"
_BATCH: Final = "batch"
_CERTIFICATES: Final = "certificates.k8s.io"
_COORDINATION: Final = "coordination.k8s.io"
_DISCOVERY: Final = "discovery.k8s.io"
_EXTENSIONS: Final = "extensions"
_POLICY: Final = "policy"
_STORAGE: Final = "storage.k8s.io"
_NETWORKING: Final = "networking.k8s.io"
_EVENTS: Final = "events.k8s.io"


def rule(
    verbs: Iterable[str],
    groups: Iterable[str] = (),
    resources: Iterable[str] = (),
    *,
    names: Iterable[str] = (),
    urls: Iterable[str] = (),
) -> dict[str, Any]:
    """A policy rule with every list sorted, as upstream's ``NewRule(...).RuleOrDie()``."""
    out: dict[str, Any] = {}
    if groups or resources:
        out["apiGroups"] = sorted(set(groups))
        out["resources"] = sorted(set(resources))
    if names:
        out["resourceNames"] = sorted(set(names))
    if urls:
        out["nonResourceURLs"] = sorted(set(urls))
    out["verbs"] = sorted(set(verbs))
    return out


def events_rule() -> dict[str, Any]:
    """Upstream ``eventsRule()``: write events in both event APIs."""
    return rule(("create", "update", "patch"), (_LEGACY, _EVENTS), ("events",))


def _meta(name: str, namespace: str | None, labels: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1], **(labels or {})},
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def cluster_role(
    name: str,
    rules: Iterable[dict[str, Any]] = (),
    *,
    labels: dict[str, str] | None = None,
    aggregate: str | None = None,
) -> dict[str, Any]:
    """A default ClusterRole; `aggregate` names the ``aggregate-to-X`` label it gathers."""
    role: dict[str, Any] = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": _meta(name, None, labels),
        "rules": list(rules),
    }
    if aggregate is not None:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [
                {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{aggregate}": "true"}}
            ]
        }
        role["rules"] = []
    return role


def role(name: str, namespace: str, rules: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": _meta(name, namespace, None),
        "rules": list(rules),
    }


def subject(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """A binding subject with upstream's defaulted ``apiGroup``."""
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace or ""}
    return {"apiGroup": RBAC_GROUP, "kind": kind, "name": name}


def cluster_role_binding(
    name: str, subjects: Iterable[dict[str, Any]], role_name: str | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name, None, None),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name or name},
        "subjects": list(subjects),
    }


def role_binding(
    name: str, namespace: str, subjects: Iterable[dict[str, Any]], role_name: str | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace, None),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name or name},
        "subjects": list(subjects),
    }


def node_rules() -> list[dict[str, Any]]:
    """Upstream ``NodeRules()``: what the Node authorizer lets a node do before the
    per-object checks (its own Node, its pods, objects its pods reference)."""
    return [
        rule(("create",), (_AUTHN,), ("tokenreviews",)),
        rule(("create",), (_AUTHZ,), ("subjectaccessreviews", "localsubjectaccessreviews")),
        rule(READ, (_LEGACY,), ("services",)),
        rule(("create", "get", "list", "watch"), (_LEGACY,), ("nodes",)),
        rule(("update", "patch"), (_LEGACY,), ("nodes/status",)),
        rule(("update", "patch"), (_LEGACY,), ("nodes",)),
        rule(("create", "update", "patch"), (_LEGACY,), ("events",)),
        rule(READ, (_LEGACY,), ("pods",)),
        rule(("create", "delete"), (_LEGACY,), ("pods",)),
        rule(("update", "patch"), (_LEGACY,), ("pods/status",)),
        rule(("create",), (_LEGACY,), ("pods/eviction",)),
        rule(READ, (_LEGACY,), ("secrets", "configmaps")),
        rule(("get",), (_LEGACY,), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("get",), (_LEGACY,), ("endpoints",)),
        rule(("create", "get", "list", "watch"), (_CERTIFICATES,), ("certificatesigningrequests",)),
        rule(("get", "create", "update", "patch", "delete"), (_COORDINATION,), ("leases",)),
        rule(("get",), (_STORAGE,), ("volumeattachments",)),
        rule(("create",), (_LEGACY,), ("serviceaccounts/token",)),
        rule(("get", "update", "patch"), (_LEGACY,), ("persistentvolumeclaims/status",)),
        rule(READ, (_STORAGE,), ("csidrivers",)),
        rule(("get", "create", "update", "patch", "delete"), (_STORAGE,), ("csinodes",)),
        rule(READ, ("node.k8s.io",), ("runtimeclasses",)),
    ]


def _aggregate_to_edit() -> list[dict[str, Any]]:
    return [
        rule(
            READ,
            (_LEGACY,),
            (
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ),
        ),
        rule(("impersonate",), (_LEGACY,), ("serviceaccounts",)),
        rule(
            WRITE,
            (_LEGACY,),
            ("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
        ),
        rule(("create",), (_LEGACY,), ("pods/eviction",)),
        rule(
            WRITE,
            (_LEGACY,),
            (
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ),
        ),
        rule(("create",), (_LEGACY,), ("serviceaccounts/token",)),
        rule(
            WRITE,
            (_APPS,),
            (
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ),
        ),
        rule(WRITE, (_AUTOSCALING,), ("horizontalpodautoscalers",)),
        rule(WRITE, (_BATCH,), ("jobs", "cronjobs")),
        rule(
            WRITE,
            (_EXTENSIONS,),
            (
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ),
        ),
        rule(WRITE, (_POLICY,), ("poddisruptionbudgets",)),
        rule(WRITE, (_NETWORKING,), ("networkpolicies", "ingresses")),
        rule(READ_WRITE, (_COORDINATION,), ("leases",)),
    ]


def _aggregate_to_view() -> list[dict[str, Any]]:
    return [
        rule(
            READ,
            (_LEGACY,),
            (
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ),
        ),
        rule(
            READ,
            (_LEGACY,),
            (
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ),
        ),
        rule(READ, (_LEGACY,), ("namespaces",)),
        rule(READ, (_DISCOVERY,), ("endpointslices",)),
        rule(
            READ,
            (_APPS,),
            (
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ),
        ),
        rule(
            READ, (_AUTOSCALING,), ("horizontalpodautoscalers", "horizontalpodautoscalers/status")
        ),
        rule(READ, (_BATCH,), ("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
        rule(
            READ,
            (_EXTENSIONS,),
            (
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ),
        ),
        rule(READ, (_POLICY,), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
        rule(READ, (_NETWORKING,), ("ingresses", "ingresses/status", "networkpolicies")),
    ]


def _kube_scheduler() -> list[dict[str, Any]]:
    return [
        events_rule(),
        rule(("create",), (_COORDINATION,), ("leases",)),
        rule(("get", "update"), (_COORDINATION,), ("leases",), names=("kube-scheduler",)),
        rule(READ, (_LEGACY,), ("nodes",)),
        rule(("get", "list", "watch", "delete"), (_LEGACY,), ("pods",)),
        rule(("create",), (_LEGACY,), ("pods/binding", "bindings")),
        rule(("patch", "update"), (_LEGACY,), ("pods/status",)),
        rule(READ, (_LEGACY,), ("replicationcontrollers", "services")),
        rule(READ, (_APPS, _EXTENSIONS), ("replicasets",)),
        rule(READ, (_APPS,), ("statefulsets",)),
        rule(READ, (_POLICY,), ("poddisruptionbudgets",)),
        rule(READ, (_LEGACY,), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("create",), (_AUTHN,), ("tokenreviews",)),
        rule(("create",), (_AUTHZ,), ("subjectaccessreviews",)),
        rule(READ, (_STORAGE,), ("csinodes",)),
        rule(READ, (_LEGACY,), ("namespaces",)),
        rule(READ, (_STORAGE,), ("csidrivers",)),
        rule(READ, (_STORAGE,), ("csistoragecapacities",)),
    ]


def _kube_controller_manager() -> list[dict[str, Any]]:
    return [
        events_rule(),
        rule(("create",), (_COORDINATION,), ("leases",)),
        rule(("get", "update"), (_COORDINATION,), ("leases",), names=("kube-controller-manager",)),
        rule(("create",), (_LEGACY,), ("secrets", "serviceaccounts")),
        rule(("delete",), (_LEGACY,), ("secrets",)),
        rule(("get",), (_LEGACY,), ("configmaps", "namespaces", "secrets", "serviceaccounts")),
        rule(("update",), (_LEGACY,), ("secrets", "serviceaccounts")),
        rule(("create",), (_AUTHN,), ("tokenreviews",)),
        rule(("create",), (_AUTHZ,), ("subjectaccessreviews",)),
        rule(("list", "watch"), ("*",), ("*",)),
        rule(("create",), (_LEGACY,), ("serviceaccounts/token",)),
    ]


def _dashboard() -> list[dict[str, Any]]:
    """What `inplace`'s dashboard shows (pods, nodes, their events and owners, VPAs, usage)
    and the one thing it changes: a pod's size through ``pods/resize``."""
    return [
        rule(READ, (_LEGACY,), ("pods", "nodes", "events", "namespaces", "pods/log")),
        rule(READ, (_APPS,), ("deployments", "replicasets")),
        rule(READ, (_BATCH,), ("jobs",)),
        rule(READ, ("autoscaling.k8s.io",), ("verticalpodautoscalers",)),
        rule(("get", "list"), ("metrics.k8s.io",), ("pods", "nodes")),
        rule(("get", "patch"), (_LEGACY,), ("pods/resize",)),
    ]


def cluster_roles() -> list[dict[str, Any]]:
    """Upstream's ``ClusterRoles()``, then this project's own."""
    discovery_urls = (
        "/livez",
        "/readyz",
        "/healthz",
        "/version",
        "/version/",
        "/openapi",
        "/openapi/*",
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
    )
    return [
        cluster_role("cluster-admin", [rule(("*",), ("*",), ("*",)), rule(("*",), urls=("*",))]),
        cluster_role("system:discovery", [rule(("get",), urls=discovery_urls)]),
        cluster_role(
            "system:monitoring",
            [
                rule(
                    ("get",),
                    urls=(
                        "/metrics",
                        "/metrics/slis",
                        "/livez",
                        "/readyz",
                        "/healthz",
                        "/livez/*",
                        "/readyz/*",
                        "/healthz/*",
                    ),
                )
            ],
        ),
        cluster_role(
            "system:basic-user",
            [
                rule(
                    ("create",), (_AUTHZ,), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")
                ),
                rule(("create",), (_AUTHN,), ("selfsubjectreviews",)),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            [rule(("get",), urls=("/livez", "/readyz", "/healthz", "/version", "/version/"))],
        ),
        cluster_role("admin", aggregate="admin"),
        cluster_role(
            "edit",
            labels={"rbac.authorization.k8s.io/aggregate-to-admin": "true"},
            aggregate="edit",
        ),
        cluster_role(
            "view", labels={"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, aggregate="view"
        ),
        cluster_role(
            "system:aggregate-to-admin",
            [
                rule(("create",), (_AUTHZ,), ("localsubjectaccessreviews",)),
                rule(READ_WRITE, (RBAC_GROUP,), ("roles", "rolebindings")),
            ],
            labels={"rbac.authorization.k8s.io/aggregate-to-admin": "true"},
        ),
        cluster_role(
            "system:aggregate-to-edit",
            _aggregate_to_edit(),
            labels={"rbac.authorization.k8s.io/aggregate-to-edit": "true"},
        ),
        cluster_role(
            "system:aggregate-to-view",
            _aggregate_to_view(),
            labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"},
        ),
        cluster_role(
            "system:heapster",
            [
                rule(READ, (_LEGACY,), ("events", "pods", "nodes", "namespaces")),
                rule(READ, (_EXTENSIONS,), ("deployments",)),
            ],
        ),
        cluster_role("system:node", node_rules()),
        cluster_role(
            "system:node-problem-detector",
            [
                rule(("get",), (_LEGACY,), ("nodes",)),
                rule(("patch",), (_LEGACY,), ("nodes/status",)),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            [
                rule(READ, (_LEGACY,), ("nodes",)),
                rule(("proxy",), (_LEGACY,), ("nodes",)),
                rule(
                    ("*",),
                    (_LEGACY,),
                    ("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
                ),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            [
                rule(
                    ("create", "get", "list", "watch"),
                    (_CERTIFICATES,),
                    ("certificatesigningrequests",),
                )
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            [
                rule(("create",), (_AUTHN,), ("tokenreviews",)),
                rule(("create",), (_AUTHZ,), ("subjectaccessreviews",)),
            ],
        ),
        cluster_role("system:kube-aggregator", [rule(READ, (_LEGACY,), ("services", "endpoints"))]),
        cluster_role("system:kube-controller-manager", _kube_controller_manager()),
        cluster_role(
            "system:kube-dns", [rule(("list", "watch"), (_LEGACY,), ("endpoints", "services"))]
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            [
                rule(
                    ("get", "list", "watch", "create", "delete"), (_LEGACY,), ("persistentvolumes",)
                ),
                rule(("get", "list", "watch", "update"), (_LEGACY,), ("persistentvolumeclaims",)),
                rule(READ, (_STORAGE,), ("storageclasses",)),
                rule(("watch",), (_LEGACY,), ("events",)),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:node-proxier",
            [
                rule(("list", "watch"), (_LEGACY,), ("services", "endpoints")),
                rule(READ, (_LEGACY,), ("nodes",)),
                events_rule(),
                rule(("list", "watch"), (_DISCOVERY,), ("endpointslices",)),
            ],
        ),
        cluster_role("system:kube-scheduler", _kube_scheduler()),
        cluster_role(
            "system:volume-scheduler",
            [
                rule(READ_UPDATE, (_LEGACY,), ("persistentvolumes",)),
                rule(READ, (_STORAGE,), ("storageclasses",)),
                rule(READ_UPDATE, (_LEGACY,), ("persistentvolumeclaims",)),
            ],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            [rule(("get",), urls=("/.well-known/openid-configuration", "/openid/v1/jwks"))],
        ),
        cluster_role(
            "system:inplace:resize-arbiter",
            [rule(("create",), (_LEGACY,), ("pods/eviction",))],
        ),
        cluster_role(DASHBOARD_USER, _dashboard()),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    """Upstream's ``ClusterRoleBindings()``, then this project's own."""
    authenticated = subject("Group", "system:authenticated")
    return [
        cluster_role_binding("cluster-admin", [subject("Group", "system:masters")]),
        cluster_role_binding("system:monitoring", [subject("Group", "system:monitoring")]),
        cluster_role_binding("system:discovery", [authenticated]),
        cluster_role_binding("system:basic-user", [authenticated]),
        cluster_role_binding(
            "system:public-info-viewer",
            [authenticated, subject("Group", "system:unauthenticated")],
        ),
        cluster_role_binding("system:node-proxier", [subject("User", "system:kube-proxy")]),
        cluster_role_binding(
            "system:kube-controller-manager", [subject("User", "system:kube-controller-manager")]
        ),
        cluster_role_binding(
            "system:kube-dns", [subject("ServiceAccount", "kube-dns", "kube-system")]
        ),
        cluster_role_binding("system:kube-scheduler", [subject("User", "system:kube-scheduler")]),
        cluster_role_binding("system:volume-scheduler", [subject("User", "system:kube-scheduler")]),
        # Upstream binds system:node to nobody: the Node authorizer decides for nodes.
        cluster_role_binding("system:node", []),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            [subject("Group", "system:serviceaccounts")],
        ),
        cluster_role_binding(
            "system:inplace:resize-arbiter", [subject("User", "system:kube-scheduler")]
        ),
        cluster_role_binding(DASHBOARD_USER, [subject("User", DASHBOARD_USER)]),
    ]


def namespace_roles() -> list[dict[str, Any]]:
    """Upstream ``NamespaceRoles()`` (kube-system and kube-public)."""
    leader_locking = [
        rule(("watch", "list", "get", "create", "update"), (_COORDINATION,), ("leases",)),
        rule(("watch", "list", "get", "create", "update"), (_COORDINATION,), ("leasecandidates",)),
    ]
    return [
        role(
            "extension-apiserver-authentication-reader",
            "kube-system",
            [
                rule(
                    READ, (_LEGACY,), ("configmaps",), names=("extension-apiserver-authentication",)
                )
            ],
        ),
        role("system::leader-locking-kube-controller-manager", "kube-system", leader_locking),
        role("system::leader-locking-kube-scheduler", "kube-system", leader_locking),
        role(
            "system:controller:bootstrap-signer",
            "kube-system",
            [rule(READ, (_LEGACY,), ("secrets",))],
        ),
        role(
            "system:controller:cloud-provider",
            "kube-system",
            [rule(("create", "get", "list", "watch"), (_LEGACY,), ("configmaps",))],
        ),
        role(
            "system:controller:token-cleaner",
            "kube-system",
            [rule(("delete", "get", "list", "watch"), (_LEGACY,), ("secrets",)), events_rule()],
        ),
        role(
            "system:controller:bootstrap-signer",
            "kube-public",
            [
                rule(READ, (_LEGACY,), ("configmaps",)),
                rule(("update",), (_LEGACY,), ("configmaps",), names=("cluster-info",)),
                events_rule(),
            ],
        ),
    ]


def namespace_role_bindings() -> list[dict[str, Any]]:
    """Upstream ``NamespaceRoleBindings()``."""
    controller_manager = subject("User", "system:kube-controller-manager")
    scheduler = subject("User", "system:kube-scheduler")

    def sa(name: str) -> dict[str, Any]:
        return subject("ServiceAccount", name, "kube-system")

    return [
        role_binding(
            "system::extension-apiserver-authentication-reader",
            "kube-system",
            [controller_manager, scheduler],
            "extension-apiserver-authentication-reader",
        ),
        role_binding(
            "system::leader-locking-kube-controller-manager",
            "kube-system",
            [controller_manager, sa("kube-controller-manager"), sa("leader-election-controller")],
        ),
        role_binding(
            "system::leader-locking-kube-scheduler",
            "kube-system",
            [scheduler, sa("kube-scheduler")],
        ),
        role_binding("system:controller:bootstrap-signer", "kube-system", [sa("bootstrap-signer")]),
        role_binding("system:controller:cloud-provider", "kube-system", [sa("cloud-provider")]),
        role_binding("system:controller:token-cleaner", "kube-system", [sa("token-cleaner")]),
        role_binding("system:controller:bootstrap-signer", "kube-public", [sa("bootstrap-signer")]),
    ]
