"""Nodes: the Node authorizer and the NodeRestriction rules.

Upstream authorizes a node agent (``system:node:<name>`` in ``system:nodes``) in two steps,
and so does this server:

* the **Node authorizer** (``plugin/pkg/auth/authorizer/node``) allows what upstream's
  ``NodeRules()`` allow, except that secrets, config maps, persistent volume claims and
  service account tokens are allowed only when a pod bound to that node uses them (one by
  name: a list or watch must select a single object with ``metadata.name``);
* **NodeRestriction** (``plugin/pkg/admission/noderestriction``) then looks at the objects
  of a write: a node may write only its own Node and Lease, the pods bound to it (status,
  deletion, evictions) and events.

The simulator (``system:node-simulator``) serves every simulated node from one process: it
gets the same rules, scoped to nodes labelled simulated instead of one node name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from inplace.apiserver.auth import SIMULATED_LABEL, SIMULATOR_USER, User
from inplace.apiserver.authz.policy import node_rules
from inplace.apiserver.authz.rbac import Decision
from inplace.apiserver.authz.rules import Attributes, PolicyRule, rules_allow
from inplace.apiserver.cache import WatchCache
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry

__all__ = ["NodeAuthorizer", "is_node_identity", "pod_references"]

_NODE_RULES: Final = tuple(PolicyRule.from_json(rule) for rule in node_rules())
_READ_VERBS: Final = frozenset({"get", "list", "watch"})
#: Resources a node may read only when one of its pods uses them (the graph of upstream's
#: Node authorizer), by the reference that names them in a pod.
_GRAPH_RESOURCES: Final = frozenset({"secrets", "configmaps", "persistentvolumeclaims"})


def is_node_identity(user: User) -> bool:
    return user.node_name is not None or user.name == SIMULATOR_USER


def _volume_refs(volume: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if not isinstance(volume, Mapping):
        return
    secret = volume.get("secret")
    if isinstance(secret, Mapping) and secret.get("secretName"):
        yield "secrets", str(secret["secretName"])
    config_map = volume.get("configMap")
    if isinstance(config_map, Mapping) and config_map.get("name"):
        yield "configmaps", str(config_map["name"])
    claim = volume.get("persistentVolumeClaim")
    if isinstance(claim, Mapping) and claim.get("claimName"):
        yield "persistentvolumeclaims", str(claim["claimName"])
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        for source in projected.get("sources") or []:
            if not isinstance(source, Mapping):
                continue
            for key, resource in (("secret", "secrets"), ("configMap", "configmaps")):
                ref = source.get(key)
                if isinstance(ref, Mapping) and ref.get("name"):
                    yield resource, str(ref["name"])


def _container_refs(container: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if not isinstance(container, Mapping):
        return
    for env in container.get("env") or []:
        source = env.get("valueFrom") if isinstance(env, Mapping) else None
        if not isinstance(source, Mapping):
            continue
        for key, resource in (("secretKeyRef", "secrets"), ("configMapKeyRef", "configmaps")):
            ref = source.get(key)
            if isinstance(ref, Mapping) and ref.get("name"):
                yield resource, str(ref["name"])
    for env_from in container.get("envFrom") or []:
        if not isinstance(env_from, Mapping):
            continue
        for key, resource in (("secretRef", "secrets"), ("configMapRef", "configmaps")):
            ref = env_from.get(key)
            if isinstance(ref, Mapping) and ref.get("name"):
                yield resource, str(ref["name"])


def pod_references(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(resource, name) of every secret, config map, claim and service account a pod uses:
    the edges upstream's node graph draws from a pod."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return set()
    refs: set[tuple[str, str]] = set()
    for volume in spec.get("volumes") or []:
        refs.update(_volume_refs(volume))
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            refs.update(_container_refs(container))
    for pull in spec.get("imagePullSecrets") or []:
        if isinstance(pull, Mapping) and pull.get("name"):
            refs.add(("secrets", str(pull["name"])))
    # The ServiceAccount admission plugin defaults the name; "default" if it has not run.
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    if isinstance(account, str):
        refs.add(("serviceaccounts", account))
    return refs


class NodeAuthorizer:
    """Decides for node identities only; everyone else gets no opinion."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self.cache = cache
        pods, nodes = registry.by_kind("", "Pod"), registry.by_kind("", "Node")
        if pods is None or nodes is None:
            raise ValueError("the registry serves no pods or nodes")
        self._pods: Kind = pods
        self._nodes: Kind = nodes

    # -- the Node authorizer -----------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> Decision | None:
        """None for a user that is not a node; else allowed, or no opinion with the reason."""
        user = attrs.user
        if not is_node_identity(user):
            return None
        if not attrs.resource_request:
            return Decision(False, "")
        if attrs.api_group == "" and attrs.resource in _GRAPH_RESOURCES:
            return self._graph(attrs, attrs.resource)
        if attrs.api_group == "" and attrs.resource == "serviceaccounts":
            if attrs.subresource == "token" and attrs.verb == "create":
                return self._graph(attrs, "serviceaccounts")
            return Decision(
                False, f"no relationship found between node '{_node_label(user)}' and this object"
            )
        if rules_allow(attrs, _NODE_RULES):
            return Decision(True, "")
        return Decision(False, "")

    def _graph(self, attrs: Attributes, resource: str) -> Decision:
        node = _node_label(attrs.user)
        if not rules_allow(attrs, _NODE_RULES) and resource != "serviceaccounts":
            return Decision(False, "")
        if not attrs.name:
            return Decision(False, "can only get individual resources of this type")
        if attrs.subresource and resource != "serviceaccounts":
            return Decision(False, "cannot get subresource " + attrs.subresource)
        for pod in self.pods_of(attrs.user, attrs.namespace):
            if (resource, attrs.name) in pod_references(pod):
                return Decision(True, "")
        return Decision(False, f"no relationship found between node '{node}' and this object")

    def pods_of(self, user: User, namespace: str | None = None) -> Iterator[Mapping[str, Any]]:
        """The pods bound to `user`'s node (every simulated node's, for the simulator)."""
        node = user.node_name
        for pod in self.cache.iter_values(self._pods, namespace or None):
            bound = pod.get("spec", {}).get("nodeName")
            if not bound:
                continue
            if (node is not None and bound == node) or (
                user.name == SIMULATOR_USER and self.is_simulated_node(bound)
            ):
                yield pod

    def is_simulated_node(self, name: str) -> bool:
        entry = self.cache.get(self._nodes, self._nodes.storage_key(name), None)
        return entry is not None and _is_simulated(entry.value)

    # -- NodeRestriction ------------------------------------------------------------------

    def restrict(
        self,
        user: User,
        attrs: Attributes,
        *,
        new: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
    ) -> str | None:
        """None if a node's write passes NodeRestriction, else why not (for the 403)."""
        if attrs.verb in _READ_VERBS or not is_node_identity(user):
            return None
        node = user.node_name
        simulator = user.name == SIMULATOR_USER
        resource = attrs.resource
        if attrs.api_group == "" and resource == "events":
            return None
        if attrs.api_group == "" and resource == "nodes":
            if simulator:
                target = old if old is not None else new
                simulated = target is not None and _is_simulated(target)
                return None if simulated else "the simulator may only write simulated nodes"
            name = attrs.name or _name_of(new)
            return None if name == node else f'node "{node}" can only modify its own Node object'
        if attrs.api_group == "coordination.k8s.io" and resource == "leases":
            if attrs.namespace != "kube-node-lease":
                return "nodes may only write leases in namespace kube-node-lease"
            if simulator or (attrs.name or _name_of(new)) == node:
                return None
            return f'node "{node}" can only modify its own Lease'
        if (
            attrs.api_group == ""
            and resource == "pods"
            and attrs.subresource
            in (
                "",
                "status",
                "eviction",
            )
        ):
            if attrs.verb == "create" and not attrs.subresource:
                return "no rule grants this to a node"
            if old is None and attrs.verb == "delete" and not attrs.subresource:
                # Upstream's NodeRestriction reads the pod first and returns its NotFound: a
                # node confirming a deletion someone else finished gets a 404, not a 403 it
                # retries forever (found by the chaos storm).
                return None
            bound = (old or {}).get("spec", {}).get("nodeName")
            if simulator:
                simulated = bool(bound) and self.is_simulated_node(str(bound))
                return None if simulated else "the simulator may only write simulated pods"
            if bound == node:
                return None
            return f'node "{node}" can only update pods bound to it'
        if attrs.api_group == "" and resource == "serviceaccounts" and attrs.subresource == "token":
            return self._token_request(user, attrs.namespace, new)
        return "no rule grants this to a node"

    def _token_request(
        self, user: User, namespace: str, request: Mapping[str, Any] | None
    ) -> str | None:
        """Upstream ``admitServiceAccount``: a node's token must be bound, by uid, to a pod
        scheduled on that node."""
        ref = ((request or {}).get("spec") or {}).get("boundObjectRef")
        if (
            not isinstance(ref, Mapping)
            or ref.get("apiVersion") != "v1"
            or ref.get("kind") != "Pod"
            or not ref.get("name")
        ):
            return "node requested token not bound to a pod"
        if not ref.get("uid"):
            return "node requested token with a pod binding without a uid"
        entry = self.cache.get(
            self._pods, self._pods.storage_key(str(ref["name"]), namespace), namespace
        )
        if entry is None:
            return None  # the token request answers pods "x" not found itself
        pod = entry.value
        if pod["metadata"].get("uid") != ref["uid"]:
            return (
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                "in record. The object might have been deleted and then recreated"
            )
        bound = (pod.get("spec") or {}).get("nodeName")
        if user.name == SIMULATOR_USER:
            ok = bool(bound) and self.is_simulated_node(str(bound))
        else:
            ok = bound == user.node_name
        if not ok:
            return "node requested token bound to a pod scheduled on a different node"
        return None


def _node_label(user: User) -> str:
    return user.node_name or user.name


def _is_simulated(obj: Mapping[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(SIMULATED_LABEL) == "true"


def _name_of(obj: Mapping[str, Any] | None) -> str | None:
    if obj is None:
        return None
    name = obj.get("metadata", {}).get("name")
    return name if isinstance(name, str) else None
