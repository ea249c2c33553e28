"""Defaulting: the values upstream fills in before an object is validated and stored.

The API server calls them (:func:`inplace.registry.strategy.apply_defaults`) on every object
it decodes (create and update, as upstream's scheme defaulting runs on every decode), then
validates. What a client reads
back is therefore what a real API server would have stored: ``kubectl get -o yaml`` shows
``restartPolicy: Always``, ``imagePullPolicy: IfNotPresent`` and the 300 s not-ready
tolerations whether or not the manifest had them.

Sources, so the behaviour can be checked against them:

* ``pkg/apis/core/v1/defaults.go``: ``SetDefaults_PodSpec``, ``SetDefaults_Container``,
  ``SetDefaults_Pod`` (requests from limits, ``enableServiceLinks``, host-network ports),
  probes, volumes, ``SetDefaults_NamespaceStatus``, ``SetDefaults_NodeStatus``,
  ``SetDefaults_ResourceList`` (round up to milli precision).
* ``pkg/apis/apps/v1/defaults.go`` and ``pkg/apis/batch/v1/defaults.go``.
* Things upstream does outside the defaulting functions but which a stored object always
  shows, done here too because this is the one place that shapes new objects: the
  ``DefaultTolerationSeconds`` and ``Priority`` admission plugins (pods, on create only), the
  namespace strategy's ``spec.finalizers: [kubernetes]`` and the job strategy's generated
  selector (needs ``metadata.uid``, so the API server must assign the uid first).

Not defaulted, as in v1.33: ``resizePolicy`` (upstream removed its explicit defaulting in
v1.33; an absent policy means ``NotRequired``), and what admission decides with the store at
hand: a pod's ``serviceAccountName`` (``default`` unless named, the ServiceAccount admission
step) and its ``priority`` when it names a ``priorityClassName``. The deprecated
``serviceAccount`` field mirrors ``serviceAccountName`` as upstream's v1 conversion makes it.

Every function tolerates malformed input (wrong JSON types anywhere): it defaults what it
can and leaves the rest for validation to reject, so defaulting can never turn bad input
into a 500.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.validation.services import externally_accessible

__all__ = [
    "default_cron_job",
    "default_daemon_set",
    "default_deployment",
    "default_endpoint_slice",
    "default_endpoints",
    "default_job",
    "default_namespace",
    "default_node",
    "default_pod",
    "default_priority_class",
    "default_replica_set",
    "default_role_binding",
    "default_secret",
    "default_service",
    "default_stateful_set",
    "image_pull_policy",
]

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: Final = 30
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
TERMINATION_MESSAGE_PATH_DEFAULT: Final = "/dev/termination-log"
#: DefaultTolerationSeconds admission: how long a pod stays bound to a not-ready/unreachable
#: node before it is evicted.
DEFAULT_TOLERATION_SECONDS: Final = 300
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
#: Volume sources' defaultMode (0644).
DEFAULT_VOLUME_MODE: Final = 0o644
#: Labels the job strategy generates (batch/v1 types.go).
JOB_CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_JOB_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
#: apps/v1's form of a DaemonSet's internal ``spec.templateGeneration`` (upstream's
#: ``appsv1.DeprecatedTemplateGeneration``): the server counts template changes in it and the
#: DaemonSet controller labels pods ``pod-template-generation`` with it.
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"

_MAX_INT32: Final = 2**31 - 1
_VOLUME_SOURCES: Final = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)


def image_pull_policy(image: object) -> str:
    """``Always`` for ``:latest`` or an untagged image (which means latest), else ``IfNotPresent``.

    Mirrors ``parsers.ParseImageName``: a digest without a tag is not "latest".
    """
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        tag = last.rsplit(":", 1)[1]
    elif digest:
        tag = ""
    else:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


# -- helpers -----------------------------------------------------------------------------------


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """`parent[key]` if it is a dict; created empty if absent; None if it is something else."""
    value = parent.get(key)
    if value is None:
        value = {}
        parent[key] = value
    return value if isinstance(value, dict) else None


def _existing_dict(parent: object, key: str) -> dict[str, Any] | None:
    if not isinstance(parent, dict):
        return None
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _dicts(parent: object, key: str) -> list[dict[str, Any]]:
    """The dict elements of the list `parent[key]` (anything else is left for validation)."""
    if not isinstance(parent, dict):
        return []
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _setdefault(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set `key` when absent or null, as Go's zero-value checks (``== ""``, ``== nil``) do."""
    current = obj.get(key)
    if current is None or current == "":
        obj[key] = value


# -- resource lists ----------------------------------------------------------------------------


def _round_resource_list(resources: object) -> None:
    """``SetDefaults_ResourceList``: values finer than a milli-unit round up to one."""
    if not isinstance(resources, dict):
        return
    for key, raw in list(resources.items()):
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            continue
        try:
            quantity = Quantity.from_json(raw)
        except (QuantityError, ValueError, OverflowError):
            continue
        if quantity.nanos % 1_000_000:
            rounded = Quantity.from_milli(quantity.milli_value(), quantity.format)
            resources[key] = str(rounded)


def _parses(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    try:
        Quantity.from_json(value)
    except (QuantityError, ValueError, OverflowError):
        return False
    return True


def _container_resources(container: dict[str, Any], *, requests_from_limits: bool) -> None:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return
    limits = resources.get("limits")
    _round_resource_list(limits)
    _round_resource_list(resources.get("requests"))
    if requests_from_limits and isinstance(limits, dict) and limits:
        requests = resources.get("requests")
        if requests is None:
            requests = {}
            resources["requests"] = requests
        if isinstance(requests, dict):
            for name, value in limits.items():
                # A limit that does not parse is reported once, at the limit.
                if name not in requests and _parses(value):
                    requests[name] = value


# -- pods and pod templates --------------------------------------------------------------------


def _probe(probe: object) -> None:
    if not isinstance(probe, dict):
        return
    _setdefault(probe, "timeoutSeconds", 1)
    _setdefault(probe, "periodSeconds", 10)
    _setdefault(probe, "successThreshold", 1)
    _setdefault(probe, "failureThreshold", 3)
    _http_get(probe.get("httpGet"))


def _http_get(action: object) -> None:
    if isinstance(action, dict):
        _setdefault(action, "path", "/")
        _setdefault(action, "scheme", "HTTP")


def _container(container: dict[str, Any], *, is_pod: bool) -> None:
    """``SetDefaults_Container`` plus the nested declarative defaults (ports, probes, env)."""
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(container.get("image"))
    _setdefault(container, "terminationMessagePath", TERMINATION_MESSAGE_PATH_DEFAULT)
    _setdefault(container, "terminationMessagePolicy", "File")
    for port in _dicts(container, "ports"):
        _setdefault(port, "protocol", "TCP")
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(name))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            handler = lifecycle.get(hook)
            if isinstance(handler, dict):
                _http_get(handler.get("httpGet"))
    for env in _dicts(container, "env"):
        value_from = _existing_dict(env, "valueFrom")
        field_ref = _existing_dict(value_from, "fieldRef")
        if field_ref is not None:
            _setdefault(field_ref, "apiVersion", "v1")
    _container_resources(container, requests_from_limits=is_pod)


def _volume(volume: dict[str, Any]) -> None:
    if not any(volume.get(source) is not None for source in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        body = volume.get(source)
        if isinstance(body, dict):
            _setdefault(body, "defaultMode", DEFAULT_VOLUME_MODE)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        _setdefault(host_path, "type", "")


def _pod_spec(spec: dict[str, Any], *, is_pod: bool) -> None:
    """``SetDefaults_PodSpec`` (pods and templates) and, for pods, ``SetDefaults_Pod``."""
    _setdefault(spec, "dnsPolicy", "ClusterFirst")
    _setdefault(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    _setdefault(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
    # v1 conversion: serviceAccount is the deprecated alias of serviceAccountName.
    if not spec.get("serviceAccountName") and isinstance(spec.get("serviceAccount"), str):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if isinstance(spec.get("serviceAccountName"), str) and spec["serviceAccountName"]:
        spec["serviceAccount"] = spec["serviceAccountName"]
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _dicts(spec, key):
            _container(container, is_pod=is_pod and key != "ephemeralContainers")
    for volume in _dicts(spec, "volumes"):
        _volume(volume)
    overhead = spec.get("overhead")
    _round_resource_list(overhead)
    if is_pod:
        if spec.get("enableServiceLinks") is None:
            spec["enableServiceLinks"] = True
        if spec.get("hostNetwork") is True:
            for key in ("containers", "initContainers"):
                for container in _dicts(spec, key):
                    for port in _dicts(container, "ports"):
                        if not port.get("hostPort"):
                            port["hostPort"] = port.get("containerPort")


def _default_tolerations(spec: dict[str, Any]) -> None:
    """The ``DefaultTolerationSeconds`` admission plugin: tolerate a not-ready or unreachable
    node for 300 s, unless the pod already tolerates that taint with ``NoExecute``."""
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return
    tolerates = {NOT_READY_TAINT: False, UNREACHABLE_TAINT: False}
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        key = toleration.get("key") or ""
        effect = toleration.get("effect") or ""
        if effect not in ("", "NoExecute"):
            continue
        for taint in tolerates:
            if key in ("", taint):
                tolerates[taint] = True
    added = [
        {
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }
        for taint, tolerated in tolerates.items()
        if not tolerated
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _template(owner_spec: object) -> None:
    template = _existing_dict(owner_spec, "template")
    spec = _existing_dict(template, "spec")
    if spec is not None:
        _pod_spec(spec, is_pod=False)


def default_pod(obj: dict[str, Any], on_create: bool) -> None:
    """Pods: the pod spec's defaults; on create, the default tolerations and priority 0 when
    no class is named."""
    spec = _existing_dict(obj, "spec")
    if spec is None:
        return
    _pod_spec(spec, is_pod=True)
    if on_create:
        _default_tolerations(spec)
        if spec.get("priority") is None and not spec.get("priorityClassName"):
            spec["priority"] = 0


def default_deployment(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_Deployment``: replicas, a 25%/25% rolling update, history, deadline."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _dict(spec, "strategy")
    if strategy is not None:
        _setdefault(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = "25%"
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _template(spec)


def default_replica_set(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_ReplicaSet``: one replica, and the template's pod spec."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template(spec)


def default_job(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_Job``, then (on create) the job strategy's generated selector."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = _MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template = _existing_dict(spec, "template")
    metadata = obj.get("metadata")
    template_meta = _existing_dict(template, "metadata")
    template_labels = _existing_dict(template_meta, "labels")
    if template_labels is not None and isinstance(metadata, dict) and not metadata.get("labels"):
        metadata["labels"] = dict(template_labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("podReplacementPolicy") is None:
        failure_policy = spec.get("podFailurePolicy")
        spec["podReplacementPolicy"] = (
            "Failed" if failure_policy is not None else "TerminatingOrFailed"
        )
    _pod_failure_policy(spec.get("podFailurePolicy"))
    _template(spec)
    if on_create and spec.get("manualSelector") is not True:
        _generate_job_selector(obj, spec)


def default_stateful_set(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_StatefulSet``: ``OrderedReady`` pods, a rolling update from partition 0
    (``maxUnavailable`` stays unset: the ``MaxUnavailableStatefulSet`` gate is off in v1.36),
    claims retained, one replica, ten revisions; the claim templates' defaults as claims'."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _setdefault(spec, "podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
        rolling = _existing_dict(strategy, "rollingUpdate")
        if (
            strategy.get("type") == "RollingUpdate"
            and rolling is not None
            and rolling.get("partition") is None
        ):
            rolling["partition"] = 0
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _setdefault(retention, "whenDeleted", "Retain")
        _setdefault(retention, "whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template(spec)
    for claim in _dicts(spec, "volumeClaimTemplates"):
        default_persistent_volume_claim(claim, on_create)


def default_daemon_set(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_DaemonSet``: a rolling update one pod at a time without surge, ten
    revisions."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        _setdefault(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = 1
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template(spec)
    _template_generation_annotation(obj)


def _template_generation_annotation(obj: dict[str, Any]) -> None:
    """apps/v1's conversion always writes the annotation (the internal
    ``templateGeneration``, 0 until the strategy sets it), so a writer's managedFields own
    it as upstream's do."""
    metadata = _dict(obj, "metadata")
    annotations = _dict(metadata, "annotations") if metadata is not None else None
    if annotations is not None and annotations.get(TEMPLATE_GENERATION_ANNOTATION) is None:
        annotations[TEMPLATE_GENERATION_ANNOTATION] = "0"


def default_cron_job(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_CronJob`` and the generated defaults of its job template: the pod
    template's and the failure policy's, not ``SetDefaults_Job`` (which takes a Job, not a
    template: a CronJob's template has no completions, backoff limit or selector until the
    controller makes a Job of it)."""
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _setdefault(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_spec = _existing_dict(_existing_dict(spec, "jobTemplate"), "spec")
    if job_spec is not None:
        _pod_failure_policy(job_spec.get("podFailurePolicy"))
        _template(job_spec)


def _pod_failure_policy(policy: object) -> None:
    for rule in _dicts(policy, "rules"):
        for pattern in _dicts(rule, "onPodConditions"):
            _setdefault(pattern, "status", "True")


def _generate_job_selector(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """The job strategy's ``generateSelector``: label the template with the job's name and
    uid and select on the uid, so a job's pods can belong to no other job."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return
    uid, name = metadata.get("uid"), metadata.get("name")
    if not isinstance(uid, str) or not uid or not isinstance(name, str):
        return
    template = _dict(spec, "template")
    template_meta = _dict(template, "metadata") if template is not None else None
    labels = _dict(template_meta, "labels") if template_meta is not None else None
    if labels is None:
        return
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_JOB_CONTROLLER_UID_LABEL, JOB_CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    selector = _dict(spec, "selector")
    if selector is None:
        return
    match_labels = _dict(selector, "matchLabels")
    if match_labels is not None:
        match_labels.setdefault(JOB_CONTROLLER_UID_LABEL, uid)


def default_priority_class(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_PriorityClass``: ``PreemptLowerPriority``."""
    _setdefault(obj, "preemptionPolicy", "PreemptLowerPriority")


def default_namespace(obj: dict[str, Any], on_create: bool) -> None:
    """The name label, an ``Active`` phase, and (the namespace strategy, on create) the
    ``kubernetes`` finalizer."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        name = metadata.get("name")
        if isinstance(name, str) and name:
            labels = _dict(metadata, "labels")
            if labels is not None:
                labels["kubernetes.io/metadata.name"] = name
    status = _dict(obj, "status")
    if status is not None:
        _setdefault(status, "phase", "Active")
    if on_create:
        spec = _dict(obj, "spec")
        if spec is not None and spec.get("finalizers") is None:
            spec["finalizers"] = ["kubernetes"]


def default_node(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_NodeStatus``: allocatable is the capacity unless reported."""
    status = _existing_dict(obj, "status")
    if status is None:
        return
    capacity = status.get("capacity")
    if status.get("allocatable") is None and isinstance(capacity, dict):
        status["allocatable"] = dict(capacity)
    _round_resource_list(status.get("capacity"))
    _round_resource_list(status.get("allocatable"))


_RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def default_role_binding(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_RoleBinding`` / ``SetDefaults_ClusterRoleBinding`` and
    ``SetDefaults_Subject``: the roleRef's group is RBAC's, and so is a User's or Group's."""
    ref = _existing_dict(obj, "roleRef")
    if ref is not None:
        _setdefault(ref, "apiGroup", _RBAC_GROUP)
    for subject in _dicts(obj, "subjects"):
        if subject.get("kind") in ("User", "Group"):
            _setdefault(subject, "apiGroup", _RBAC_GROUP)


# -- configuration and services ------------------------------------------------------------------


def default_secret(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_Secret`` (type ``Opaque``) and the v1 conversion of ``stringData``: each
    entry overwrites ``data`` (base64-encoded) and the field itself is not stored."""
    _setdefault(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = obj["data"] = {}
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()


def default_service(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_Service``: no session affinity (ClientIP's 3-hour timeout when asked
    for), ``ClusterIP``, TCP ports whose target is their own port, ``Cluster`` traffic
    policies, node ports for load balancers."""
    spec = _existing_dict(obj, "spec")
    if spec is None:
        return
    _setdefault(spec, "sessionAffinity", "None")
    if spec.get("sessionAffinity") == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec.get("sessionAffinity") == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    _setdefault(spec, "type", "ClusterIP")
    for port in _dicts(spec, "ports"):
        _setdefault(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if externally_accessible(spec):
        _setdefault(spec, "externalTrafficPolicy", "Cluster")
    if spec.get("internalTrafficPolicy") is None and spec.get("type") in (
        "NodePort",
        "LoadBalancer",
        "ClusterIP",
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def default_endpoints(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_EndpointPort``: TCP."""
    for subset in _dicts(obj, "subsets"):
        for port in _dicts(subset, "ports"):
            _setdefault(port, "protocol", "TCP")


def default_endpoint_slice(obj: dict[str, Any], on_create: bool) -> None:
    """discovery ``SetDefaults_EndpointPort``: an unnamed TCP port."""
    for port in _dicts(obj, "ports"):
        if port.get("name") is None:
            port["name"] = ""
        _setdefault(port, "protocol", "TCP")


# -- storage -----------------------------------------------------------------------------------


def default_persistent_volume(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_PersistentVolume``: ``Retain``, ``Filesystem``, and ``Pending`` until the
    controller says otherwise; a ``hostPath`` source gets its empty type."""
    spec = _dict(obj, "spec")
    if spec is not None:
        _setdefault(spec, "persistentVolumeReclaimPolicy", "Retain")
        _setdefault(spec, "volumeMode", "Filesystem")
        host_path = _existing_dict(spec, "hostPath")
        if host_path is not None and host_path.get("type") is None:
            host_path["type"] = ""
        _round_resource_list(spec.get("capacity"))
    status = _dict(obj, "status")
    if status is not None:
        _setdefault(status, "phase", "Pending")


def default_persistent_volume_claim(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_PersistentVolumeClaim(Spec)``: ``Filesystem``, and ``Pending``."""
    spec = _dict(obj, "spec")
    if spec is not None:
        _setdefault(spec, "volumeMode", "Filesystem")
        resources = _existing_dict(spec, "resources")
        if resources is not None:
            _round_resource_list(resources.get("requests"))
            _round_resource_list(resources.get("limits"))
    status = _dict(obj, "status")
    if status is not None:
        _setdefault(status, "phase", "Pending")


def default_storage_class(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_StorageClass``: ``Delete`` and ``Immediate``."""
    _setdefault(obj, "reclaimPolicy", "Delete")
    _setdefault(obj, "volumeBindingMode", "Immediate")
