"""OpenAPI v3 documents, shaped like kube-apiserver's `/openapi/v3`.

Why this exists: kubectl 1.32 reads `/openapi/v3` for `kubectl apply` (with default validation
it checks that the PATCH operation of the object's group-version-kind lists the `fieldValidation`
parameter, then leaves strict validation to the server) and for `kubectl explain` (it finds the
component carrying `x-kubernetes-group-version-kind` and walks its properties, following `$ref`
and `allOf`). So the shapes follow upstream's generated documents
(kubernetes/kubernetes api/openapi-spec/v3/*.json):

* The index is `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=<H>"}, …}}`
  with one entry per document: "api", "api/v1", "apis", "apis/<group>", "apis/<group>/<version>"
  and "version". `<H>` is the upper-case hex SHA-512 of the served bytes, as kube-openapi's
  handler3 computes it; the bytes are `serialize(doc)` (orjson, sorted keys, as Go's map
  marshalling sorts), so `openapi_v3_hash(doc)` is the hash of exactly what is served.
* A group-version document has `openapi: 3.0.0`, `info`, `paths` (collection: list with the
  watch parameter, create, deletecollection; item: read, replace, patch, delete; all-namespaces
  list; subresources status, resize, scale, binding, eviction, log) and `components.schemas` for
  every model reachable from the group-version's kinds. Operations carry `operationId`
  (`patchCoreV1NamespacedPod`), `x-kubernetes-action` and `x-kubernetes-group-version-kind`.
* Components are named like upstream (`io.k8s.api.core.v1.Pod`); a `$ref` with siblings
  (description, patch extensions) is wrapped in `allOf`, as upstream does since 1.27.
  Strategic-merge tags come from `inplace.api.patchmeta`. The VerticalPodAutoscaler is served
  with its CRD schema, named as kube-apiserver names CRD components (`io.k8s.autoscaling.v1.
  VerticalPodAutoscaler`).

Everything is deterministic: the same registry gives the same bytes and hashes on every start.
`openapi_v3_bytes` / `openapi_v3_index_bytes` cache the serialized documents per registry.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Iterable
from typing import Any, Final

import orjson

from inplace.api import schema as s
from inplace.api.kinds import Kind, Registry
from inplace.api.patchmeta import field_meta

__all__ = [
    "document_keys",
    "openapi_v3_bytes",
    "openapi_v3_document",
    "openapi_v3_document_for_path",
    "openapi_v3_hash",
    "openapi_v3_index",
    "openapi_v3_index_bytes",
    "serialize",
]

REF: Final = "#/components/schemas/"
_META = s.META
_STATUS = f"{_META}.Status"
_DELETE_OPTIONS = f"{_META}.DeleteOptions"
_WATCH_EVENT = f"{_META}.WatchEvent"
_PATCH = f"{_META}.Patch"

# --- serialization and hashing ------------------------------------------------------------


def serialize(doc: dict[str, Any]) -> bytes:
    """The bytes served for `doc`: compact JSON with sorted keys, like upstream's Go output."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def openapi_v3_hash(doc: dict[str, Any]) -> str:
    """Upper-case hex SHA-512 of `serialize(doc)` (kube-openapi's `%X` of `sha512.Sum512`)."""
    return hashlib.sha512(serialize(doc)).hexdigest().upper()


# --- fixed components ---------------------------------------------------------------------

_QUANTITY_DOC: Final = (
    "Quantity is a fixed-point representation of a number. It provides convenient "
    "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
    "accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= "
    '<signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the "" case in '
    "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
    "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | "
    '.<digits> <sign>            ::= "+" | "-" <signedNumber>    ::= <number> | '
    "<sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> "
    "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; "
    'See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | "" | '
    "k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the "
    'capitalization.)\n\n<decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber> '
    "```\n\nNo matter which of the three exponent forms is used, no quantity may represent a "
    "number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. "
    "Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up "
    "to 1m.) This may be extended in the future if we require larger or smaller quantities."
    "\n\nWhen a Quantity is parsed from a string, it will remember the type of suffix it had, "
    "and will use the same type again when it is serialized.\n\nBefore serializing, Quantity "
    'will be put in "canonical form". This means that Exponent/suffix will be adjusted up or '
    "down (with a corresponding increase or decrease in Mantissa) such that:\n\n- No precision "
    "is lost - No fractional digits will be emitted - The exponent (or suffix) is as large as "
    "possible.\n\nThe sign will be omitted unless the number is negative.\n\nExamples:\n\n- "
    '1.5 will be serialized as "1500m" - 1.5Gi will be serialized as "1536Mi"\n\nNote that the '
    "quantity will NEVER be internally represented by a floating point number. That is the "
    "whole point of this exercise.\n\nNon-canonical values will still parse as long as they "
    "are well formed, but will be re-emitted in their canonical form. (So always use canonical "
    "form, or don't use a form that would be in canonical form.)\n\nThis format is intended to "
    "make it difficult to use these numbers without writing some sort of special handling code "
    "in the hopes that that will cause implementors to also use a fixed point implementation."
)

_FIXED: Final[dict[str, dict[str, Any]]] = {
    s.TIME_NAME: {
        "description": "Time is a wrapper around time.Time which supports correct marshaling "
        "to YAML and JSON.  Wrappers are provided for many of the factory methods that the "
        "time package offers.",
        "format": "date-time",
        "type": "string",
    },
    s.MICRO_TIME_NAME: {
        "description": "MicroTime is version of Time with microsecond level precision.",
        "format": "date-time",
        "type": "string",
    },
    s.QUANTITY_NAME: {
        "description": _QUANTITY_DOC,
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
    s.INT_OR_STRING_NAME: {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used "
        "in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type. "
        " This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    s.RAW_EXTENSION_NAME: {
        "description": "RawExtension is used to hold extensions in external versions.",
        "type": "object",
    },
    s.FIELDS_V1_NAME: {
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in "
        "JSON format.\n\nEach key is either a '.' representing the field itself, and will "
        "always map to an empty set, or a string representing a sub-field or item. The string "
        "will follow one of these four formats: 'f:<name>', where <name> is the name of a field "
        "in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted "
        "value of a list item 'i:<index>', where <index> is position of a item in a list "
        "'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values "
        "If a key maps to an empty Fields value, the field that key represents is part of the "
        "set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
        "type": "object",
    },
    _PATCH: {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes "
        "PATCH request body.",
        "type": "object",
    },
}

_SCALARS: Final[dict[s.Tag, dict[str, Any]]] = {
    s.Tag.STRING: {"type": "string"},
    s.Tag.BYTES: {"format": "byte", "type": "string"},
    s.Tag.INT32: {"format": "int32", "type": "integer"},
    s.Tag.INT64: {"format": "int64", "type": "integer"},
    s.Tag.NUMBER: {"format": "double", "type": "number"},
    s.Tag.BOOL: {"type": "boolean"},
}
_NAMED: Final = {
    s.Tag.TIME: s.TIME_NAME,
    s.Tag.MICRO_TIME: s.MICRO_TIME_NAME,
    s.Tag.QUANTITY: s.QUANTITY_NAME,
    s.Tag.INT_OR_STRING: s.INT_OR_STRING_NAME,
}
#: List fields whose upstream `x-kubernetes-list-map-keys` is more than the patch merge key.
_LIST_MAP_KEYS: Final = {
    ("V1Container", "ports"): ["containerPort", "protocol"],
    ("V1EphemeralContainer", "ports"): ["containerPort", "protocol"],
    ("V1PodSpec", "topologySpreadConstraints"): ["topologyKey", "whenUnsatisfiable"],
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF + name}


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


# --- components ---------------------------------------------------------------------------


class _Components:
    """Collects the component schemas one document needs, walking from its roots."""

    def __init__(self, gvks: dict[str, list[dict[str, str]]]) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self.gvks = gvks
        self._pending: list[s.Struct] = []

    def add(self, struct: s.Struct) -> str:
        if struct.name not in self.schemas:
            self.schemas[struct.name] = {}
            self._pending.append(struct)
        return struct.name

    def add_fixed(self, name: str) -> str:
        if name not in self.schemas:
            self.schemas[name] = copy.deepcopy(_FIXED[name])
        return name

    def add_model(self, model: str) -> str:
        return self.add(s.model_struct(model))

    def finish(self) -> dict[str, dict[str, Any]]:
        while self._pending:
            struct = self._pending.pop()
            self.schemas[struct.name] = self.struct_schema(struct)
        return dict(sorted(self.schemas.items()))

    def struct_schema(self, struct: s.Struct) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if struct.description:
            out["description"] = struct.description
        if struct.fields:
            out["properties"] = {
                f.name: self.field_schema(struct, f) for f in struct.fields.values()
            }
        if struct.required:
            out["required"] = struct.required
        gvks = self.gvks.get(struct.name)
        if gvks:
            out["x-kubernetes-group-version-kind"] = gvks
        return out

    def field_schema(self, owner: s.Struct, f: s.Field) -> dict[str, Any]:
        out = self.type_schema(f.type)
        extensions: dict[str, Any] = {}
        meta = field_meta(owner.model, f.name) if owner.model else None
        if meta is not None and meta.strategies:
            order = ("merge", "replace", "retainKeys")
            extensions["x-kubernetes-patch-strategy"] = ",".join(
                x for x in order if x in meta.strategies
            )
            if meta.merge_key:
                extensions["x-kubernetes-patch-merge-key"] = meta.merge_key
            if f.type.tag is s.Tag.LIST and "merge" in meta.strategies:
                if meta.merge_key:
                    keys = _LIST_MAP_KEYS.get((owner.model or "", f.name), [meta.merge_key])
                    extensions["x-kubernetes-list-type"] = "map"
                    extensions["x-kubernetes-list-map-keys"] = keys
                else:
                    extensions["x-kubernetes-list-type"] = "set"
        if not f.description and not extensions:
            return out
        if "$ref" in out:
            out = {"allOf": [out]}
        if f.description:
            out["description"] = f.description
        out.update(extensions)
        return out

    def type_schema(self, t: s.Type) -> dict[str, Any]:
        tag = t.tag
        scalar = _SCALARS.get(tag)
        if scalar is not None:
            return dict(scalar)
        named = _NAMED.get(tag)
        if named is not None:
            return _ref(self.add_fixed(named))
        if tag is s.Tag.ANY:
            return _ref(self.add_fixed(t.ref)) if t.ref else {"type": "object"}
        if tag is s.Tag.LIST:
            assert t.elem is not None
            return {"items": self.type_schema(t.elem), "type": "array"}
        if tag is s.Tag.MAP:
            assert t.elem is not None
            return {"additionalProperties": self.type_schema(t.elem), "type": "object"}
        assert t.struct is not None
        if not t.struct.name:
            return self.struct_schema(t.struct)
        return _ref(self.add(t.struct))


def _crd_component(kind: Kind, components: _Components) -> str:
    """The VPA: upstream's CRD schema with `metadata` pointing at ObjectMeta, as kube-apiserver
    publishes custom resources."""
    root = s.kind_schema(kind)
    schema = copy.deepcopy(s.vpa_crd()["openAPIV3Schema"])
    components.add_model("V1ObjectMeta")
    schema["properties"]["metadata"] = {
        "allOf": [_ref(s.component_name("V1ObjectMeta"))],
        "description": s.OBJECT_META_DOC,
    }
    schema["x-kubernetes-group-version-kind"] = [_gvk(kind.group, kind.version, kind.kind)]
    components.schemas[root.name] = schema
    return root.name


# --- parameters ---------------------------------------------------------------------------


def _param(name: str, description: str, type_: str, where: str = "query") -> dict[str, Any]:
    out: dict[str, Any] = {
        "in": where,
        "name": name,
        "schema": {"type": type_, "uniqueItems": True},
    }
    if description:
        out["description"] = description
    if where == "path":
        out["required"] = True
    return out


_P: Final = {
    "allowWatchBookmarks": _param(
        "allowWatchBookmarks",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not '
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's "
        "discretion. Clients should not assume bookmarks are returned at any specific interval, "
        "nor may they assume the server will send any BOOKMARK event during a session. If this "
        "is not a watch, this field is ignored.",
        "boolean",
    ),
    "continue": _param(
        "continue",
        "The continue option should be set when retrieving more results from the server. Since "
        "this value is server defined, clients may only use the continue value from a previous "
        "query result with identical query parameters (except for the value of continue) and "
        "the server may reject a continue value it does not recognize. If the specified "
        "continue value is no longer valid whether due to expiration (generally five to fifteen "
        "minutes) or a configuration change on the server, the server will respond with a 410 "
        "ResourceExpired error together with a continue token.",
        "string",
    ),
    "fieldSelector": _param(
        "fieldSelector",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything.",
        "string",
    ),
    "labelSelector": _param(
        "labelSelector",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything.",
        "string",
    ),
    "limit": _param(
        "limit",
        "limit is a maximum number of responses to return for a list call. If more items "
        "exist, the server will set the `continue` field on the list metadata to a value that "
        "can be used with the same initial query to retrieve the next set of results. This "
        "field is not supported if watch is true.",
        "integer",
    ),
    "pretty": _param(
        "pretty",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
        "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
        "string",
    ),
    "resourceVersion": _param(
        "resourceVersion",
        "resourceVersion sets a constraint on what resource versions a request may be served "
        "from. See https://kubernetes.io/docs/reference/using-api/api-concepts/"
        "#resource-versions for details.\n\nDefaults to unset",
        "string",
    ),
    "resourceVersionMatch": _param(
        "resourceVersionMatch",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is "
        "highly recommended that resourceVersionMatch be set for list calls where "
        "resourceVersion is set See https://kubernetes.io/docs/reference/using-api/"
        "api-concepts/#resource-versions for details.\n\nDefaults to unset",
        "string",
    ),
    "timeoutSeconds": _param(
        "timeoutSeconds",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of "
        "any activity or inactivity.",
        "integer",
    ),
    "watch": _param(
        "watch",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications. Specify resourceVersion.",
        "boolean",
    ),
    "dryRun": _param(
        "dryRun",
        "When present, indicates that modifications should not be persisted. An invalid or "
        "unrecognized dryRun directive will result in an error response and no further "
        "processing of the request. Valid values are: - All: all dry run stages will be "
        "processed",
        "string",
    ),
    "fieldManager": _param(
        "fieldManager",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
        "string",
    ),
    "fieldManagerPatch": _param(
        "fieldManager",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This "
        "field is required for apply requests (application/apply-patch) but optional for "
        "non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).",
        "string",
    ),
    "fieldValidation": _param(
        "fieldValidation",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: "
        "This will ignore any unknown fields that are silently dropped from the object, and "
        "will ignore all but the last duplicate field that the decoder encounters. This is the "
        "default behavior prior to v1.23. - Warn: This will send a warning via the standard "
        "warning response header for each unknown field that is dropped from the object, and "
        "for each duplicate field that is encountered. The request will still succeed if there "
        "are no other errors, and will only persist the last of any duplicate fields. This is "
        "the default in v1.23+ - Strict: This will fail the request with a BadRequest error if "
        "any unknown fields would be dropped from the object, or if any duplicate fields are "
        "present. The error returned from the server will contain all unknown and duplicate "
        "fields encountered.",
        "string",
    ),
    "force": _param(
        "force",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
        "boolean",
    ),
    "gracePeriodSeconds": _param(
        "gracePeriodSeconds",
        "The duration in seconds before the object should be deleted. Value must be "
        "non-negative integer. The value zero indicates delete immediately. If this value is "
        "nil, the default grace period for the specified type will be used. Defaults to a per "
        "object value if not specified. zero means delete immediately.",
        "integer",
    ),
    "orphanDependents": _param(
        "orphanDependents",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. "
        'Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will '
        "be added to/removed from the object's finalizers list. Either this field or "
        "PropagationPolicy may be set, but not both.",
        "boolean",
    ),
    "propagationPolicy": _param(
        "propagationPolicy",
        "Whether and how garbage collection will be performed. Either this field or "
        "OrphanDependents may be set, but not both. The default policy is decided by the "
        "existing finalizer set in the metadata.finalizers and the resource-specific default "
        "policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow "
        "the garbage collector to delete the dependents in the background; 'Foreground' - a "
        "cascading policy that deletes all dependents in the foreground.",
        "string",
    ),
    "namespace": _param(
        "namespace", "object name and auth scope, such as for teams and projects", "string", "path"
    ),
    "container": _param(
        "container",
        "The container for which to stream logs. Defaults to only container if there is one "
        "container in the pod.",
        "string",
    ),
    "follow": _param("follow", "Follow the log stream of the pod. Defaults to false.", "boolean"),
    "limitBytes": _param(
        "limitBytes",
        "If set, the number of bytes to read from the server before terminating the log "
        "output. This may not display a complete final line of logging, and may return "
        "slightly more or slightly less than the specified limit.",
        "integer",
    ),
    "previous": _param(
        "previous", "Return previous terminated container logs. Defaults to false.", "boolean"
    ),
    "sinceSeconds": _param(
        "sinceSeconds",
        "A relative time in seconds before the current time from which to show logs. If this "
        "value precedes the time a pod was started, only logs since the pod start will be "
        "returned. If this value is in the future, no logs will be returned. Only one of "
        "sinceSeconds or sinceTime may be specified.",
        "integer",
    ),
    "tailLines": _param(
        "tailLines",
        "If set, the number of lines from the end of the logs to show. If not specified, logs "
        "are shown from the creation of the container or sinceSeconds or sinceTime",
        "integer",
    ),
    "timestamps": _param(
        "timestamps",
        "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log "
        "output. Defaults to false.",
        "boolean",
    ),
}

_LIST_PARAMS: Final = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS: Final = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS: Final = ("dryRun", "fieldManagerPatch", "fieldValidation", "force")
_DELETE_PARAMS: Final = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION_PARAMS: Final = (
    *_DELETE_PARAMS,
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
)
_LOG_PARAMS: Final = (
    "container",
    "follow",
    "limitBytes",
    "previous",
    "sinceSeconds",
    "tailLines",
    "timestamps",
)
_PATCH_TYPES: Final = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _patch_types(kind: Kind) -> tuple[str, ...]:
    """Custom resources take no strategic merge patch (415 upstream, and here): their PATCH
    must not offer it, or kubectl computes one and sends it."""
    return _PATCH_TYPES[:-1] if s.is_crd(kind) else _PATCH_TYPES


def _params(names: Iterable[str]) -> list[dict[str, Any]]:
    return [copy.deepcopy(_P[n]) for n in names]


def _name_param(kind_name: str) -> dict[str, Any]:
    return _param("name", f"name of the {kind_name}", "string", "path")


# --- operations ---------------------------------------------------------------------------


def _content(name: str, *, watch: bool = False) -> dict[str, Any]:
    types = ["application/json", "application/yaml"]
    if watch:
        types.append("application/json;stream=watch")
    return {t: {"schema": _ref(name)} for t in types}


def _responses(name: str, codes: Iterable[int], *, watch: bool = False) -> dict[str, Any]:
    words = {200: "OK", 201: "Created", 202: "Accepted"}
    out: dict[str, Any] = {
        str(code): {"content": _content(name, watch=watch), "description": words[code]}
        for code in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


def _operation(
    action: str | None,
    op_id: str,
    description: str,
    tag: str,
    gvk: dict[str, str] | None,
    responses: dict[str, Any],
    *,
    params: Iterable[str] = (),
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": description,
        "operationId": op_id,
        "responses": responses,
        "tags": [tag],
    }
    parameters = _params(params)
    if parameters:
        op["parameters"] = parameters
    if body is not None:
        op["requestBody"] = body
    if action is not None:
        op["x-kubernetes-action"] = action
    if gvk is not None:
        op["x-kubernetes-group-version-kind"] = gvk
    return op


def _body(name: str, content_types: Iterable[str] = ("*/*",)) -> dict[str, Any]:
    return {"content": {t: {"schema": _ref(name)} for t in content_types}, "required": True}


def _group_words(kind: Kind) -> tuple[str, str]:
    """("CoreV1", "core_v1") — the operationId infix and the tag, in upstream's spelling.

    Built-in groups drop ".k8s.io"; custom resources keep the whole group
    ("autoscaling.k8s.io" -> "AutoscalingK8sIo"), as kube-apiserver spells CRD operations.
    """
    group = kind.group or "core"
    if not s.is_crd(kind):
        group = group.removesuffix(".k8s.io")
    parts = [p for p in group.replace("-", ".").split(".") if p]
    camel = "".join(p[:1].upper() + p[1:] for p in parts)
    version = kind.version[:1].upper() + kind.version[1:]
    return f"{camel}{version}", f"{camel[:1].lower()}{camel[1:]}_{kind.version}"


def _prefix(group: str, version: str) -> str:
    return f"/api/{version}" if group == "" else f"/apis/{group}/{version}"


_SUB_MODELS: Final = {"scale": "V1Scale", "binding": "V1Binding", "eviction": "V1Eviction"}
_SUB_GVKS: Final = {
    "scale": _gvk("autoscaling", "v1", "Scale"),
    "binding": _gvk("", "v1", "Binding"),
    "eviction": _gvk("policy", "v1", "Eviction"),
}


def _kind_paths(kind: Kind, components: _Components) -> dict[str, dict[str, Any]]:
    """Every path of one kind, with the operations its verbs and subresources allow."""
    if s.is_crd(kind):
        obj = _crd_component(kind, components)
    else:
        obj = components.add(s.kind_schema(kind))
    listed = components.add(s.list_schema(kind))
    infix, tag = _group_words(kind)
    ns = "Namespaced" if kind.namespaced else ""
    gvk = _gvk(kind.group, kind.version, kind.kind)
    verbs = set(kind.verbs)
    prefix = _prefix(kind.group, kind.version)
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{kind.plural}"
        if kind.namespaced
        else f"{prefix}/{kind.plural}"
    )
    item = f"{collection}/{{name}}"
    scope = [copy.deepcopy(_P["namespace"])] if kind.namespaced else []
    pretty = copy.deepcopy(_P["pretty"])
    paths: dict[str, dict[str, Any]] = {}

    coll: dict[str, Any] = {}
    if "list" in verbs:
        coll["get"] = _operation(
            "list",
            f"list{infix}{ns}{kind.kind}",
            f"list or watch objects of kind {kind.kind}",
            tag,
            gvk,
            _responses(listed, (200,), watch=True),
            params=_LIST_PARAMS,
        )
    if "create" in verbs:
        coll["post"] = _operation(
            "post",
            f"create{infix}{ns}{kind.kind}",
            f"create a {kind.kind}",
            tag,
            gvk,
            _responses(obj, (200, 201, 202)),
            params=_WRITE_PARAMS,
            body=_body(obj),
        )
    if "deletecollection" in verbs:
        components.add_model("V1DeleteOptions")
        components.add_model("V1Status")
        coll["delete"] = _operation(
            "deletecollection",
            f"delete{infix}Collection{ns}{kind.kind}",
            f"delete collection of {kind.kind}",
            tag,
            gvk,
            _responses(_STATUS, (200,)),
            params=_DELETE_COLLECTION_PARAMS,
            body={"content": {"*/*": {"schema": _ref(_DELETE_OPTIONS)}}},
        )
    if coll:
        coll["parameters"] = [*copy.deepcopy(scope), copy.deepcopy(pretty)]
        paths[collection] = coll

    if kind.namespaced and "list" in verbs:
        paths[f"{prefix}/{kind.plural}"] = {
            "get": _operation(
                "list",
                f"list{infix}{kind.kind}ForAllNamespaces",
                f"list or watch objects of kind {kind.kind}",
                tag,
                gvk,
                _responses(listed, (200,), watch=True),
            ),
            "parameters": [*_params(_LIST_PARAMS), copy.deepcopy(pretty)],
        }

    one = _read_write_operations(
        verbs,
        f"{infix}{ns}{kind.kind}",
        f"the specified {kind.kind}",
        tag,
        gvk,
        obj,
        components,
        _patch_types(kind),
    )
    if "delete" in verbs:
        components.add_model("V1DeleteOptions")
        one["delete"] = _operation(
            "delete",
            f"delete{infix}{ns}{kind.kind}",
            f"delete a {kind.kind}",
            tag,
            gvk,
            _responses(obj, (200, 202)),
            params=_DELETE_PARAMS,
            body={"content": {"*/*": {"schema": _ref(_DELETE_OPTIONS)}}},
        )
    if one:
        one["parameters"] = [_name_param(kind.kind), *copy.deepcopy(scope), copy.deepcopy(pretty)]
        paths[item] = one

    for sub in kind.subresources:
        ops = _subresource(kind, sub, obj, infix, ns, tag, gvk, components)
        if ops:
            ops["parameters"] = [
                _param("name", f"name of the {_sub_kind_name(sub, kind)}", "string", "path"),
                *copy.deepcopy(scope),
                copy.deepcopy(pretty),
            ]
            paths[f"{item}/{sub}"] = ops
    return paths


def _sub_kind_name(sub: str, kind: Kind) -> str:
    return {"scale": "Scale", "binding": "Binding", "eviction": "Eviction"}.get(sub, kind.kind)


def _subresource(
    kind: Kind,
    sub: str,
    obj: str,
    infix: str,
    ns: str,
    tag: str,
    gvk: dict[str, str],
    components: _Components,
) -> dict[str, Any]:
    """Operations of `<item>/<sub>`: status/resize/scale read+replace+patch, binding and
    eviction create, log read."""
    title = sub[:1].upper() + sub[1:]
    verbs = set(kind.verbs)
    if sub in ("binding", "eviction"):
        name = components.add_model(_SUB_MODELS[sub])
        return {
            "post": _operation(
                "post",
                f"create{infix}{ns}{kind.kind}{title}",
                f"create {sub} of a {kind.kind}",
                tag,
                _SUB_GVKS[sub],
                _responses(name, (200, 201, 202)),
                params=_WRITE_PARAMS,
                body=_body(name),
            )
        }
    if sub == "log":
        return {
            "get": {
                "description": f"read log of the specified {kind.kind}",
                "operationId": f"read{infix}{ns}{kind.kind}Log",
                "parameters": _params(_LOG_PARAMS),
                "responses": {
                    "200": {
                        "content": {
                            t: {"schema": {"type": "string"}}
                            for t in ("application/json", "text/plain")
                        },
                        "description": "OK",
                    },
                    "401": {"description": "Unauthorized"},
                },
                "tags": [tag],
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
            }
        }
    target, sub_gvk = obj, gvk
    if sub in _SUB_MODELS:
        target, sub_gvk = components.add_model(_SUB_MODELS[sub]), _SUB_GVKS[sub]
    return _read_write_operations(
        verbs,
        f"{infix}{ns}{kind.kind}{title}",
        f"{sub} of the specified {kind.kind}",
        tag,
        sub_gvk,
        target,
        components,
        _patch_types(kind),
    )


def _read_write_operations(
    verbs: Iterable[str],
    operation: str,
    what: str,
    tag: str,
    gvk: dict[str, str],
    target: str,
    components: _Components,
    patch_types: tuple[str, ...],
) -> dict[str, Any]:
    """get/put/patch on one object or one subresource; `operation` is the operationId's
    suffix ("CoreV1NamespacedPod"), `what` ends the description ("the specified Pod")."""
    ops: dict[str, Any] = {}
    if "get" in verbs:
        ops["get"] = _operation(
            "get", f"read{operation}", f"read {what}", tag, gvk, _responses(target, (200,))
        )
    if "update" in verbs:
        ops["put"] = _operation(
            "put",
            f"replace{operation}",
            f"replace {what}",
            tag,
            gvk,
            _responses(target, (200, 201)),
            params=_WRITE_PARAMS,
            body=_body(target),
        )
    if "patch" in verbs:
        components.add_fixed(_PATCH)
        ops["patch"] = _operation(
            "patch",
            f"patch{operation}",
            f"partially update {what}",
            tag,
            gvk,
            _responses(target, (200, 201)),
            params=_PATCH_PARAMS,
            body=_body(_PATCH, patch_types),
        )
    return ops


# --- documents ----------------------------------------------------------------------------


def _document(paths: dict[str, Any], components: _Components) -> dict[str, Any]:
    return {
        "components": {
            "schemas": components.finish(),
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "openapi": "3.0.0",
        "paths": dict(sorted(paths.items())),
    }


def _component_gvks(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """`x-kubernetes-group-version-kind` for every component that is a kind somewhere.

    Like upstream, the shared meta kinds (DeleteOptions, WatchEvent) name every group-version
    they are served in; here, core/v1 and the document's own.
    """
    gvks: dict[str, list[dict[str, str]]] = {}
    for kind in registry.kinds:
        gvks[s.kind_schema(kind).name] = [_gvk(kind.group, kind.version, kind.kind)]
        gvks[s.list_schema(kind).name] = [_gvk(kind.group, kind.version, kind.list_kind)]
    for sub, model in _SUB_MODELS.items():
        gvks[s.component_name(model)] = [_SUB_GVKS[sub]]
    gvks[_STATUS] = [_gvk("", "v1", "Status")]
    served = [("", "v1")] + ([(group, version)] if group else [])
    for name in (_DELETE_OPTIONS, _WATCH_EVENT):
        gvks[name] = [_gvk(g, v, name.rsplit(".", 1)[1]) for g, v in served]
    gvks.update(_discovery_gvks())
    return gvks


def _discovery_gvks() -> dict[str, list[dict[str, str]]]:
    out = {}
    for model in ("V1APIResourceList", "V1APIVersions", "V1APIGroupList", "V1APIGroup"):
        name = s.component_name(model)
        out[name] = [_gvk("", "v1", name.rsplit(".", 1)[1])]
    return out


def openapi_v3_document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one served group-version (`/openapi/v3/apis/G/V`).

    Raises KeyError when the registry serves nothing in that group-version.
    """
    kinds = registry.in_group_version(group, version)
    if not kinds:
        raise KeyError(f"no kinds in {group or 'core'}/{version}")
    components = _Components(_component_gvks(registry, group, version))
    components.add_model("V1Status")
    components.add_model("V1DeleteOptions")
    components.add_model("V1WatchEvent")
    resources = components.add_model("V1APIResourceList")
    infix, tag = _group_words(kinds[0])
    prefix = _prefix(group, version)
    paths: dict[str, Any] = {
        f"{prefix}/": {
            "get": _operation(
                None,
                f"get{infix}APIResources",
                "get available resources",
                tag,
                None,
                _responses(resources, (200,)),
            )
        }
    }
    for kind in kinds:
        paths.update(_kind_paths(kind, components))
    return _document(paths, components)


def _discovery_document(
    path: str, op_id: str, description: str, tag: str, model: str
) -> dict[str, Any]:
    """A document with one discovery GET (`/api/`, `/apis/`, `/apis/<group>/`, `/version/`)."""
    components = _Components(_discovery_gvks())
    name = components.add_model(model)
    get = _operation(None, op_id, description, tag, None, _responses(name, (200,)))
    return _document({path: {"get": get}}, components)


def document_keys(registry: Registry) -> list[str]:
    """The index's keys, one per document served under `/openapi/v3/`, sorted."""
    keys = {"api", "apis", "version"}
    for group, version in registry.group_versions():
        if group == "":
            keys.add(f"api/{version}")
        else:
            keys.add(f"apis/{group}")
            keys.add(f"apis/{group}/{version}")
    return sorted(keys)


def openapi_v3_document_for_path(registry: Registry, path: str) -> dict[str, Any] | None:
    """The document served at `/openapi/v3/<path>` ("api/v1", "apis/apps", "version", …), or
    None when there is none."""
    path = path.strip("/")
    if path not in document_keys(registry):
        return None
    parts = path.split("/")
    if path == "api":
        return _discovery_document(
            "/api/", "getCoreAPIVersions", "get available API versions", "core", "V1APIVersions"
        )
    if path == "apis":
        return _discovery_document(
            "/apis/", "getAPIVersions", "get available API versions", "apis", "V1APIGroupList"
        )
    if path == "version":
        return _discovery_document(
            "/version/", "getCodeVersion", "get the code version", "version", "VersionInfo"
        )
    if parts[0] == "api":
        return openapi_v3_document(registry, "", parts[1])
    if len(parts) == 2:
        kind = registry.in_group_version(parts[1], _first_version(registry, parts[1]))[0]
        infix, tag = _group_words(kind)
        group_word = infix.removesuffix(kind.version[:1].upper() + kind.version[1:])
        return _discovery_document(
            f"/apis/{parts[1]}/",
            f"get{group_word}APIGroup",
            "get information of a group",
            tag.rsplit("_", 1)[0],
            "V1APIGroup",
        )
    return openapi_v3_document(registry, parts[1], parts[2])


def _first_version(registry: Registry, group: str) -> str:
    return next(v for g, v in registry.group_versions() if g == group)


# --- cached serving -----------------------------------------------------------------------


def openapi_v3_bytes(registry: Registry, path: str) -> tuple[bytes, str] | None:
    """(serialized document, its hash) for `/openapi/v3/<path>`, or None when there is no
    such document. Built once per registry and path; serve the bytes as they are, so the hash
    in the index is the hash of what the client receives."""
    path = path.strip("/")
    if path not in _keys(registry):
        return None  # checked first, so arbitrary request paths never grow the cache
    return _built(registry, path)


@functools.cache
def _keys(registry: Registry) -> frozenset[str]:
    return frozenset(document_keys(registry))


@functools.cache
def _built(registry: Registry, path: str) -> tuple[bytes, str]:
    doc = openapi_v3_document_for_path(registry, path)
    assert doc is not None
    data = serialize(doc)
    return data, hashlib.sha512(data).hexdigest().upper()


def openapi_v3_index(registry: Registry) -> dict[str, Any]:
    """`/openapi/v3`: every document's key and `serverRelativeURL` with its content hash."""
    paths: dict[str, Any] = {}
    for key in document_keys(registry):
        served = openapi_v3_bytes(registry, key)
        assert served is not None
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={served[1]}"}
    return {"paths": paths}


@functools.cache
def openapi_v3_index_bytes(registry: Registry) -> bytes:
    """The serialized index, built once per registry."""
    return serialize(openapi_v3_index(registry))
