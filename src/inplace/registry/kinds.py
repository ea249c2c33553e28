"""The registry of every kind the API server serves: the one place a kind is defined.

One table drives routing, discovery, OpenAPI, storage keys, REST, field selectors and the
table printers. Each entry says where a kind lives in the API (names, plurals, short names and
subresources are upstream's) and names its :class:`~inplace.registry.strategy.Strategy`:
defaulting, validation, admission, the Table printer, field selectors, generation and
graceful deletion. Adding a kind is one entry here plus its rules in the modules they belong
to (``validation/``, ``defaults.py``, ``tables/``, ``selectors.py``); see "Adding a kind" in
docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inplace.api import defaults, selectors
from inplace.api.validation import config, pods, resize
from inplace.api.validation import services as service_rules
from inplace.registry import admissionregistration as webhook_defaults
from inplace.registry import lifecycle, services, tables
from inplace.registry.resize import prepare_pod_resize
from inplace.registry.served import Registry
from inplace.registry.strategy import Strategy, SubresourceUpdate
from inplace.registry.tables import admissionregistration as webhook_tables
from inplace.registry.validation import (
    admissionregistration,
    apps,
    autoscaling,
    batch,
    cluster,
    rbac,
    workloads,
)
from inplace.registry.validation import storage as storage_rules

if TYPE_CHECKING:
    from inplace.registry.schema.custom import CustomResource


@dataclass(frozen=True)
class Kind:
    """A served kind: where it lives in the API and how it is addressed."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: Kinds whose objects are kept in the store; the metrics kinds are computed on read.
    stored: bool = True
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    #: The model class in the official `kubernetes` client package, for schemas; None for CRDs.
    model: str | None = None
    #: What the server does with the kind's objects (not part of a kind's identity).
    strategy: Strategy = field(default_factory=Strategy, compare=False, repr=False)
    #: A kind served from a CustomResourceDefinition: its version's schema, names, printer
    #: columns and scale paths (`inplace.registry.schema.custom`); None for every built-in kind.
    crd: CustomResource | None = field(default=None, compare=False, repr=False)
    #: Which definition the kind was made from (a CRD's uid and generation): part of its
    #: identity, so what is cached per kind (schemas, field types) is rebuilt when it changes.
    revision: str = ""

    @property
    def singular(self) -> str:
        return self.crd.singular if self.crd is not None else self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_api_version(self) -> str:
        """The apiVersion objects are stored in: a custom resource's storage version."""
        if self.crd is not None and self.crd.storage_version:
            return f"{self.group}/{self.crd.storage_version}"
        return self.api_version

    @property
    def list_kind(self) -> str:
        return self.crd.list_kind if self.crd is not None else f"{self.kind}List"

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)

    def storage_prefix(self, namespace: str | None = None) -> str:
        """Store key prefix: `/<group>/<plural>/` then `<namespace>/` for namespaced kinds."""
        base = f"/{self.group or 'core'}/{self.plural}/"
        if self.namespaced and namespace:
            return f"{base}{namespace}/"
        return base

    def storage_key(self, name: str, namespace: str | None = None) -> str:
        return f"{self.storage_prefix(namespace)}{name}"


_READ_ONLY = ("get", "list")
#: Reviews are created and answered, never stored (authorization.k8s.io, authentication.k8s.io).
_CREATE_ONLY = ("create",)
_REVIEW = Strategy(bumps_generation=False)

_POD = Strategy(
    defaults=defaults.default_pod,
    admit=lifecycle.admit_pod,
    prepare_for_create=lifecycle.prepare_pod_for_create,
    validate=pods.validate_pod_create,
    validate_update=pods.validate_pod_update,
    validate_status_update=pods.validate_pod_status_update,
    prepare_for_status_update=lifecycle.prepare_pod_status_update,
    subresources={"resize": SubresourceUpdate(prepare_pod_resize, resize.validate_pod_resize)},
    table=tables.POD_TABLE,
    selectable_fields=selectors.POD_FIELDS,
    grace_period=lifecycle.pod_grace_period,
)

KINDS: tuple[Kind, ...] = (
    Kind(
        "",
        "v1",
        "Namespace",
        "namespaces",
        False,
        ("ns",),
        ("status",),
        model="V1Namespace",
        strategy=Strategy(
            defaults=defaults.default_namespace,
            validate=cluster.validate_namespace,
            validate_status_update=cluster.validate_namespace_status_update,
            table=tables.NAMESPACE_TABLE,
            selectable_fields=selectors.NAMESPACE_FIELDS,
        ),
    ),
    Kind(
        "",
        "v1",
        "Node",
        "nodes",
        False,
        ("no",),
        ("status",),
        model="V1Node",
        strategy=Strategy(
            defaults=defaults.default_node,
            validate=cluster.validate_node,
            validate_status_update=cluster.validate_node_status_update,
            table=tables.NODE_TABLE,
            selectable_fields=selectors.NODE_FIELDS,
        ),
    ),
    Kind(
        "",
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "resize", "binding", "eviction", "log", "exec", "attach"),
        ("all",),
        model="V1Pod",
        strategy=_POD,
    ),
    Kind(
        "",
        "v1",
        "Event",
        "events",
        True,
        ("ev",),
        model="CoreV1Event",
        strategy=Strategy(
            validate=cluster.validate_event,
            table=tables.EVENT_TABLE,
            selectable_fields=selectors.EVENT_FIELDS,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        True,
        ("cm",),
        model="V1ConfigMap",
        strategy=Strategy(
            validate=config.validate_config_map,
            validate_update=config.validate_config_map_update,
            table=tables.CONFIG_MAP_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "Secret",
        "secrets",
        True,
        model="V1Secret",
        strategy=Strategy(
            defaults=defaults.default_secret,
            validate=config.validate_secret,
            validate_update=config.validate_secret_update,
            table=tables.SECRET_TABLE,
            selectable_fields=selectors.SECRET_FIELDS,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        True,
        ("sa",),
        ("token",),
        model="V1ServiceAccount",
        strategy=Strategy(
            validate=config.validate_service_account,
            validate_update=config.validate_service_account_update,
            table=tables.SERVICE_ACCOUNT_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        False,
        ("pv",),
        ("status",),
        model="V1PersistentVolume",
        strategy=Strategy(
            defaults=defaults.default_persistent_volume,
            admit=lifecycle.admit_persistent_volume,
            validate=storage_rules.validate_persistent_volume,
            validate_update=storage_rules.validate_persistent_volume_update,
            table=tables.PERSISTENT_VOLUME_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        True,
        ("pvc",),
        ("status",),
        model="V1PersistentVolumeClaim",
        strategy=Strategy(
            defaults=defaults.default_persistent_volume_claim,
            admit=lifecycle.admit_persistent_volume_claim,
            admit_update=lifecycle.admit_persistent_volume_claim_resize,
            validate=storage_rules.validate_persistent_volume_claim,
            validate_update=storage_rules.validate_persistent_volume_claim_update,
            table=tables.PERSISTENT_VOLUME_CLAIM_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "Service",
        "services",
        True,
        ("svc",),
        ("status",),
        ("all",),
        model="V1Service",
        strategy=Strategy(
            defaults=defaults.default_service,
            prepare_for_update=services.prepare_service_for_update,
            allocate=services.allocate_service,
            validate=service_rules.validate_service,
            validate_update=service_rules.validate_service_update,
            validate_status_update=service_rules.validate_service_status_update,
            table=tables.SERVICE_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        True,
        ("ep",),
        model="V1Endpoints",
        strategy=Strategy(
            defaults=defaults.default_endpoints,
            validate=service_rules.validate_endpoints,
            table=tables.ENDPOINTS_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        True,
        model="V1EndpointSlice",
        strategy=Strategy(
            defaults=defaults.default_endpoint_slice,
            validate=service_rules.validate_endpoint_slice,
            validate_update=service_rules.validate_endpoint_slice_update,
            table=tables.ENDPOINT_SLICE_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        True,
        ("deploy",),
        ("status", "scale"),
        ("all",),
        model="V1Deployment",
        strategy=Strategy(
            defaults=defaults.default_deployment,
            validate=workloads.validate_deployment,
            validate_update=workloads.validate_deployment_update,
            validate_status_update=workloads.validate_deployment_status_update,
            table=tables.DEPLOYMENT_TABLE,
        ),
    ),
    Kind(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        True,
        ("rs",),
        ("status", "scale"),
        ("all",),
        model="V1ReplicaSet",
        strategy=Strategy(
            defaults=defaults.default_replica_set,
            validate=workloads.validate_replica_set,
            validate_update=workloads.validate_replica_set_update,
            validate_status_update=workloads.validate_deployment_status_update,
            table=tables.REPLICA_SET_TABLE,
            selectable_fields=selectors.REPLICA_SET_FIELDS,
        ),
    ),
    Kind(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        True,
        ("sts",),
        ("status", "scale"),
        ("all",),
        model="V1StatefulSet",
        strategy=Strategy(
            defaults=defaults.default_stateful_set,
            prepare_for_create=lifecycle.prepare_stateful_set_for_create,
            prepare_for_update=lifecycle.prepare_stateful_set_for_update,
            validate=apps.validate_stateful_set,
            validate_update=apps.validate_stateful_set_update,
            validate_status_update=apps.validate_stateful_set_status_update,
            table=tables.STATEFUL_SET_TABLE,
        ),
    ),
    Kind(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        True,
        ("ds",),
        ("status",),
        ("all",),
        model="V1DaemonSet",
        strategy=Strategy(
            defaults=defaults.default_daemon_set,
            prepare_for_create=lifecycle.prepare_daemon_set_for_create,
            finish_update=lifecycle.finish_daemon_set_update,
            prepare_for_status_update=lifecycle.prepare_daemon_set_status_update,
            validate=apps.validate_daemon_set,
            validate_update=apps.validate_daemon_set_update,
            validate_status_update=apps.validate_daemon_set_status_update,
            table=tables.DAEMON_SET_TABLE,
        ),
    ),
    Kind(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        True,
        model="V1ControllerRevision",
        strategy=Strategy(
            validate=apps.validate_controller_revision,
            validate_update=apps.validate_controller_revision_update,
            table=tables.CONTROLLER_REVISION_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "batch",
        "v1",
        "Job",
        "jobs",
        True,
        (),
        ("status",),
        ("all",),
        model="V1Job",
        strategy=Strategy(
            defaults=defaults.default_job,
            validate=workloads.validate_job,
            validate_update=workloads.validate_job_update,
            validate_status_update=workloads.validate_job_status_update,
            table=tables.JOB_TABLE,
            selectable_fields=selectors.JOB_FIELDS,
        ),
    ),
    Kind(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        True,
        ("cj",),
        ("status",),
        ("all",),
        model="V1CronJob",
        strategy=Strategy(
            defaults=defaults.default_cron_job,
            prepare_for_create=lifecycle.prepare_cron_job_for_create,
            validate=batch.validate_cron_job,
            validate_update=batch.validate_cron_job_update,
            validate_status_update=batch.validate_cron_job_status_update,
            table=tables.CRON_JOB_TABLE,
        ),
    ),
    Kind(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        True,
        ("pdb",),
        ("status",),
        model="V1PodDisruptionBudget",
        strategy=Strategy(
            validate=workloads.validate_pdb,
            validate_status_update=workloads.validate_pdb_status_update,
            table=tables.PDB_TABLE,
        ),
    ),
    Kind(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        False,
        ("pc",),
        model="V1PriorityClass",
        strategy=Strategy(
            defaults=defaults.default_priority_class,
            validate=cluster.validate_priority_class,
            validate_update=cluster.validate_priority_class_update,
            table=tables.PRIORITY_CLASS_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        False,
        ("sc",),
        model="V1StorageClass",
        strategy=Strategy(
            defaults=defaults.default_storage_class,
            validate=storage_rules.validate_storage_class,
            validate_update=storage_rules.validate_storage_class_update,
            table=tables.STORAGE_CLASS_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        True,
        model="V1Lease",
        strategy=Strategy(validate=cluster.validate_lease, table=tables.LEASE_TABLE),
    ),
    Kind(
        "autoscaling.k8s.io",
        "v1",
        "VerticalPodAutoscaler",
        "verticalpodautoscalers",
        True,
        ("vpa",),
        ("status",),
        strategy=Strategy(validate=autoscaling.validate_vpa, table=tables.VPA_TABLE),
    ),
    Kind(
        "autoscaling.k8s.io",
        "v1",
        "VerticalPodAutoscalerCheckpoint",
        "verticalpodautoscalercheckpoints",
        True,
        ("vpacheckpoint",),
        strategy=Strategy(validate=autoscaling.validate_vpa_checkpoint),
    ),
    Kind(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        False,
        model="V1ClusterRole",
        strategy=Strategy(
            validate=rbac.validate_cluster_role,
            table=tables.CLUSTER_ROLE_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        False,
        model="V1ClusterRoleBinding",
        strategy=Strategy(
            defaults=defaults.default_role_binding,
            validate=rbac.validate_cluster_role_binding,
            validate_update=rbac.validate_cluster_role_binding_update,
            table=tables.CLUSTER_ROLE_BINDING_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        True,
        model="V1Role",
        strategy=Strategy(
            validate=rbac.validate_role, table=tables.ROLE_TABLE, bumps_generation=False
        ),
    ),
    Kind(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        True,
        model="V1RoleBinding",
        strategy=Strategy(
            defaults=defaults.default_role_binding,
            validate=rbac.validate_role_binding,
            validate_update=rbac.validate_role_binding_update,
            table=tables.ROLE_BINDING_TABLE,
            bumps_generation=False,
        ),
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
        categories=("api-extensions",),
        model="V1MutatingWebhookConfiguration",
        strategy=Strategy(
            defaults=webhook_defaults.default_mutating_webhook_configuration,
            finish_update=webhook_defaults.bump_generation_on_webhook_change,
            validate=admissionregistration.validate_mutating_webhook_configuration,
            validate_update=admissionregistration.validate_mutating_webhook_configuration_update,
            table=webhook_tables.MUTATING_WEBHOOK_CONFIGURATION_TABLE,
        ),
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
        categories=("api-extensions",),
        model="V1ValidatingWebhookConfiguration",
        strategy=Strategy(
            defaults=webhook_defaults.default_validating_webhook_configuration,
            finish_update=webhook_defaults.bump_generation_on_webhook_change,
            validate=admissionregistration.validate_validating_webhook_configuration,
            validate_update=admissionregistration.validate_validating_webhook_configuration_update,
            table=webhook_tables.VALIDATING_WEBHOOK_CONFIGURATION_TABLE,
        ),
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        False,
        subresources=("status",),
        categories=("api-extensions",),
        model="V1ValidatingAdmissionPolicy",
        strategy=Strategy(
            defaults=webhook_defaults.default_validating_admission_policy,
            validate=admissionregistration.validate_validating_admission_policy,
            validate_update=admissionregistration.validate_validating_admission_policy_update,
            table=webhook_tables.VALIDATING_ADMISSION_POLICY_TABLE,
        ),
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
        categories=("api-extensions",),
        model="V1ValidatingAdmissionPolicyBinding",
        strategy=Strategy(
            defaults=webhook_defaults.default_validating_admission_policy_binding,
            validate=admissionregistration.validate_validating_admission_policy_binding,
            validate_update=(
                admissionregistration.validate_validating_admission_policy_binding_update
            ),
            table=webhook_tables.VALIDATING_ADMISSION_POLICY_BINDING_TABLE,
        ),
    ),
    Kind(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1SelfSubjectAccessReview",
        strategy=_REVIEW,
    ),
    Kind(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        False,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1SubjectAccessReview",
        strategy=_REVIEW,
    ),
    Kind(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        True,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1LocalSubjectAccessReview",
        strategy=_REVIEW,
    ),
    Kind(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        False,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1SelfSubjectRulesReview",
        strategy=_REVIEW,
    ),
    Kind(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        False,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1TokenReview",
        strategy=_REVIEW,
    ),
    Kind(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        stored=False,
        verbs=_CREATE_ONLY,
        model="V1SelfSubjectReview",
        strategy=_REVIEW,
    ),
    Kind(
        "metrics.k8s.io",
        "v1beta1",
        "PodMetrics",
        "pods",
        True,
        stored=False,
        verbs=_READ_ONLY,
        strategy=Strategy(bumps_generation=False),
    ),
    Kind(
        "metrics.k8s.io",
        "v1beta1",
        "NodeMetrics",
        "nodes",
        False,
        stored=False,
        verbs=_READ_ONLY,
        strategy=Strategy(bumps_generation=False),
    ),
)


REGISTRY = Registry(KINDS)
