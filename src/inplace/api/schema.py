"""The server's knowledge of every kind's fields, and the unknown-field / wrong-type check.

One type graph serves two readers: `check_fields` (run on every write, so it must be cheap) and
the OpenAPI documents (`inplace.api.openapi`, which is what `kubectl explain` and `kubectl apply`
read). Built-in kinds get their graph from the official `kubernetes` client's models (field names,
types, descriptions, required-ness); the VerticalPodAutoscaler gets it from upstream's CRD schema
(`vpa_schema.json`, transcribed from kubernetes/autoscaler); the metrics.k8s.io kinds are written
here by hand. Graphs are built once per model and shared (`functools.cache`).

What the client models cannot say, small tables below supply: which `str` / `Dict[str, str]`
fields are `resource.Quantity`, which `datetime` fields are `MicroTime`, which ints are int64,
and the upstream package of each model (`V1PodSpec` -> `io.k8s.api.core.v1.PodSpec`).

Error wording follows the API server, so the API server can pass these strings through:

* Unknown fields are paths in the format of upstream's strict decoder: dotted JSON field names
  from the object root, no leading dot, list indices in brackets, e.g.
  `spec.template.spec.containers[1].imagePullPolicyy`. Upstream turns them into
  ``Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field
  "spec.containers[0].imagePullPolicyy", unknown field "…"`` (400 BadRequest) under
  `fieldValidation=Strict`, and into one ``Warning: unknown field "…"`` header each under `Warn`
  (see `strict_decoding_error` and `unknown_field_warnings`). A field that is unknown is reported
  once; what is inside it is not examined.
* Type errors of built-in kinds use encoding/json's wording, which upstream returns as a 400
  (``json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.
  containerPort of type int32``): the Go struct that holds the field, then the field's path
  without list indices. For the VerticalPodAutoscaler (a CRD upstream) they use the CRD
  validator's wording, which upstream returns as a 422 Invalid (``spec.updatePolicy.minReplicas:
  Invalid value: "string": spec.updatePolicy.minReplicas in body must be of type integer:
  "string"``).
* `null` is accepted anywhere (it decodes to the zero value upstream); int-or-string fields take
  ints and strings; quantities take strings and numbers; free-form fields (RawExtension,
  FieldsV1, CRD `x-kubernetes-preserve-unknown-fields`) take anything. Whether a quantity string
  parses, enums, and required fields are validation's business, not this module's.
"""

from __future__ import annotations

import enum
import functools
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

from inplace.api.godecode import base64_error
from inplace.api.kinds import REGISTRY, Kind
from inplace.api.models import dict_value, is_model, list_element, model_class, model_fields

__all__ = [
    "META",
    "Field",
    "FieldReport",
    "Struct",
    "Tag",
    "Type",
    "check_fields",
    "component_name",
    "crd",
    "is_crd",
    "kind_schema",
    "list_schema",
    "model_struct",
    "strict_decoding_error",
    "unknown_field_warnings",
    "vpa_crd",
]

META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
QUANTITY_NAME: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_NAME: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION_NAME: Final = "io.k8s.apimachinery.pkg.runtime.RawExtension"
FIELDS_V1_NAME: Final = f"{META}.FieldsV1"
TIME_NAME: Final = f"{META}.Time"
MICRO_TIME_NAME: Final = f"{META}.MicroTime"
METRICS: Final = "io.k8s.metrics.pkg.apis.metrics.v1beta1"


class Tag(enum.IntEnum):
    """What a JSON value must be. Scalars first; LIST, MAP and STRUCT have children."""

    STRING = 1
    BYTES = 2
    INT32 = 3
    INT64 = 4
    NUMBER = 5
    BOOL = 6
    TIME = 7
    MICRO_TIME = 8
    QUANTITY = 9
    INT_OR_STRING = 10
    ANY = 11
    LIST = 12
    MAP = 13
    STRUCT = 14


@dataclass(frozen=True, eq=False)
class Type:
    """A field's type. `elem` for LIST/MAP, `struct` for STRUCT; `ref` names a free-form type."""

    tag: Tag
    elem: Type | None = None
    struct: Struct | None = None
    #: For ANY: the upstream component it stands for (RawExtension, FieldsV1), if any.
    ref: str | None = None


@dataclass(eq=False)
class Field:
    name: str
    type: Type
    description: str = ""
    required: bool = False


@dataclass(eq=False)
class Struct:
    """An object type: a client model, a hand-written metrics type, or a CRD's inline object."""

    #: Upstream component name ("io.k8s.api.core.v1.PodSpec"); "" for a CRD's inline objects.
    name: str
    #: The Go type name upstream's messages use ("PodSpec").
    go_name: str
    description: str
    fields: dict[str, Field] = field(default_factory=dict)
    #: The `kubernetes` client model class name, for patch metadata; None when hand-written.
    model: str | None = None
    #: True for structs transcribed from a CRD schema (the VPA): CRD-style error wording.
    crd: bool = False
    #: The check's per-field table, built on first use (see `_table`).
    table: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def required(self) -> list[str]:
        return [f.name for f in self.fields.values() if f.required]


# --- scalar singletons --------------------------------------------------------------------

STRING: Final = Type(Tag.STRING)
BYTES: Final = Type(Tag.BYTES)
INT32: Final = Type(Tag.INT32)
INT64: Final = Type(Tag.INT64)
NUMBER: Final = Type(Tag.NUMBER)
BOOL: Final = Type(Tag.BOOL)
TIME: Final = Type(Tag.TIME)
MICRO_TIME: Final = Type(Tag.MICRO_TIME)
QUANTITY: Final = Type(Tag.QUANTITY)
INT_OR_STRING: Final = Type(Tag.INT_OR_STRING)
ANY: Final = Type(Tag.ANY)
RAW_EXTENSION: Final = Type(Tag.ANY, ref=RAW_EXTENSION_NAME)
FIELDS_V1: Final = Type(Tag.ANY, ref=FIELDS_V1_NAME)

# --- what the client models do not say ----------------------------------------------------

#: `Dict[str, str]` fields that are ResourceLists (map of Quantity) upstream.
_QUANTITY_MAPS: Final = frozenset(
    {"limits", "requests", "overhead", "allocatedResources", "capacity", "allocatable"}
)
#: `str` fields that are a single Quantity upstream.
_QUANTITY_FIELDS: Final = frozenset(
    {
        ("V1EmptyDirVolumeSource", "sizeLimit"),
        ("V1ResourceFieldSelector", "divisor"),
        ("V1NodeAllocatableMappedResources", "quantity"),
        ("V1NodeAllocatableOverheadResources", "perContainer"),
        ("V1NodeAllocatableOverheadResources", "perPod"),
    }
)
#: `datetime` fields that are MicroTime (RFC 3339 with microseconds) upstream.
_MICRO_TIME_FIELDS: Final = frozenset(
    {
        ("V1LeaseSpec", "acquireTime"),
        ("V1LeaseSpec", "renewTime"),
        ("CoreV1Event", "eventTime"),
        ("CoreV1EventSeries", "lastObservedTime"),
    }
)
#: `int` fields that are int64 upstream (the rest are int32).
_INT64_FIELDS: Final = frozenset(
    {
        "activeDeadlineSeconds",
        "capacity",
        "deletionGracePeriodSeconds",
        "expirationSeconds",
        "fsGroup",
        "generation",
        "gid",
        "gracePeriodSeconds",
        "observedGeneration",
        "remainingItemCount",
        "runAsGroup",
        "runAsUser",
        "seconds",
        "sizeBytes",
        "supplementalGroups",
        "terminationGracePeriodSeconds",
        "uid",
    }
)
#: Free-form `object` fields that name an upstream component.
_ANY_REFS: Final = {
    ("V1WatchEvent", "object"): RAW_EXTENSION,
    ("V1ManagedFieldsEntry", "fieldsV1"): FIELDS_V1,
}

#: Models of apimachinery's meta/v1 package (the rest are found by walking from the kinds).
_META_MODELS: Final = frozenset(
    {
        "V1APIGroup",
        "V1APIGroupList",
        "V1APIResource",
        "V1APIResourceList",
        "V1APIVersions",
        "V1Condition",
        "V1DeleteOptions",
        "V1GroupVersionForDiscovery",
        "V1LabelSelector",
        "V1LabelSelectorRequirement",
        "V1ListMeta",
        "V1ManagedFieldsEntry",
        "V1ObjectMeta",
        "V1OwnerReference",
        "V1Preconditions",
        "V1ServerAddressByClientCIDR",
        "V1Status",
        "V1StatusCause",
        "V1StatusDetails",
        "V1WatchEvent",
    }
)
#: Models whose package is fixed whatever refers to them.
_FIXED_PACKAGES: Final = {
    "VersionInfo": "io.k8s.apimachinery.pkg.version.Info",
    "V1Scale": "io.k8s.api.autoscaling.v1.Scale",
    "V1ScaleSpec": "io.k8s.api.autoscaling.v1.ScaleSpec",
    "V1ScaleStatus": "io.k8s.api.autoscaling.v1.ScaleStatus",
    "V1Eviction": "io.k8s.api.policy.v1.Eviction",
    "AuthenticationV1TokenRequest": "io.k8s.api.authentication.v1.TokenRequest",
    "V1TokenRequestSpec": "io.k8s.api.authentication.v1.TokenRequestSpec",
    "V1TokenRequestStatus": "io.k8s.api.authentication.v1.TokenRequestStatus",
    "V1BoundObjectReference": "io.k8s.api.authentication.v1.BoundObjectReference",
}
#: Core (group "") models that no core kind reaches but other groups embed.
_CORE_SEEDS: Final = ("V1Binding", "V1PodTemplateSpec")
#: Pre-release models the client carries for newer API fields; their package is a best guess.
_PRERELEASE_PACKAGES: Final = {"V1alpha3": "io.k8s.api.scheduling.v1alpha3"}

_MODEL_NAME = re.compile(r"^([A-Z][a-z]*)?(V\d+(?:alpha\d+|beta\d+)?)(?=[A-Z])(.+)$")


def _split_model_name(model: str) -> tuple[str, str, str]:
    """Split a client model name: "CoreV1Event" -> ("Core", "V1", "Event")."""
    match = _MODEL_NAME.match(model)
    if match is None:
        return ("", "", model)
    return (match.group(1) or "", match.group(2), match.group(3))


def _model_children(model: str) -> list[str]:
    children = []
    for type_ in model_fields(model).values():
        inner = list_element(type_) or dict_value(type_) or type_
        inner = list_element(inner) or dict_value(inner) or inner
        if is_model(inner):
            children.append(inner)
    return children


@functools.cache
def _packages() -> dict[str, str]:
    """Client model name -> upstream package, found by walking the graph from each kind.

    A model belongs to the package of the first kind that reaches it without passing through
    a model already placed: core kinds are walked first, so `V1Container` is core even though
    Deployments reach it too, and `V1DeploymentSpec` is apps.
    """
    placed: dict[str, str] = {m: META for m in _META_MODELS}
    for model, name in _FIXED_PACKAGES.items():
        placed[model] = name.rsplit(".", 1)[0]

    def claim(root: str, package: str) -> None:
        stack = [root]
        while stack:
            model = stack.pop()
            if model in placed or not is_model(model):
                continue
            prefix, version, _ = _split_model_name(model)
            if prefix != "Core" and version.lower() != package.rsplit(".", 1)[1]:
                placed[model] = _PRERELEASE_PACKAGES.get(version, package)
            else:
                placed[model] = package
            stack.extend(_model_children(model))

    kinds = sorted(REGISTRY.kinds, key=lambda k: k.group != "")
    for kind in kinds:
        if kind.model is None:
            continue
        package = f"io.k8s.api.{kind.group.split('.')[0] or 'core'}.{kind.version}"
        claim(kind.model, package)
        claim(_list_model(kind.model), package)
        if kind.group == "":
            for seed in _CORE_SEEDS:
                claim(seed, package)
    return placed


def _list_model(model: str) -> str:
    return f"{model}List"


def component_name(model: str) -> str:
    """The upstream OpenAPI component name of a client model ("V1Pod" -> "io.k8s.api.core.v1.Pod").

    Models not reachable from a served kind fall back to the core package.
    """
    if model in _FIXED_PACKAGES:
        return _FIXED_PACKAGES[model]
    package = _packages().get(model)
    _, version, short = _split_model_name(model)
    if package is None:
        package = f"io.k8s.api.core.{version.lower() or 'v1'}"
    return f"{package}.{short}"


# --- building structs from client models --------------------------------------------------

_structs: dict[str, Struct] = {}


def _class_description(cls: Any) -> str:
    doc = (cls.__doc__ or "").split("Attributes:", 1)[0]
    return " ".join(line.strip() for line in doc.strip().splitlines()).strip()


def _field_infos(cls: Any) -> dict[str, Any]:
    """JSON field name -> the pydantic FieldInfo (which holds description and required-ness)."""
    infos: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        infos[info.serialization_alias or name] = info
    return infos


def _is_int_or_string(info: Any) -> bool:
    """Whether a client `object` field is IntOrString: its annotation is a union of int and str
    (free-form fields are `Dict[str, Any]`)."""
    found: set[Any] = set()
    stack = [getattr(info, "annotation", None)]
    while stack:
        annotation = stack.pop()
        origin = typing.get_origin(annotation)
        if origin is typing.Union or origin is types.UnionType:
            stack.extend(typing.get_args(annotation))
        elif origin is typing.Annotated:
            stack.append(typing.get_args(annotation)[0])
        else:
            found.add(annotation)
    return int in found and str in found


def model_struct(model: str) -> Struct:
    """The Struct for a client model, built once; cycles are fine (the struct is registered
    before its fields are filled in)."""
    existing = _structs.get(model)
    if existing is not None:
        return existing
    cls = model_class(model)
    if cls is None:
        raise KeyError(f"no client model {model!r}")
    name = component_name(model)
    struct = Struct(
        name=name,
        go_name=name.rsplit(".", 1)[1],
        description=_class_description(cls),
        model=model,
    )
    _structs[model] = struct
    infos = _field_infos(cls)
    for json_name, type_str in model_fields(model).items():
        info = infos.get(json_name)
        description = (getattr(info, "description", None) or "") if info else ""
        if not description and json_name == "metadata" and type_str in _META_FIELD_DOCS:
            description = _META_FIELD_DOCS[type_str]
        struct.fields[json_name] = Field(
            name=json_name,
            type=_model_type(model, json_name, type_str, info),
            description=description,
            required=bool(info is not None and info.is_required()),
        )
    return struct


def _model_type(model: str, name: str, type_str: str, info: Any) -> Type:
    elem = list_element(type_str)
    if elem is not None:
        return Type(Tag.LIST, elem=_model_type(model, name, elem, None))
    value = dict_value(type_str)
    if value is not None:
        if value == "str" and name in _QUANTITY_MAPS:
            return Type(Tag.MAP, elem=QUANTITY)
        return Type(Tag.MAP, elem=_model_type(model, name, value, None))
    if type_str == "str":
        return QUANTITY if (model, name) in _QUANTITY_FIELDS else STRING
    if type_str == "int":
        return INT64 if name in _INT64_FIELDS else INT32
    if type_str == "bool":
        return BOOL
    if type_str == "float":
        return NUMBER
    if type_str == "bytes":
        return BYTES
    if type_str in ("datetime", "date"):
        return MICRO_TIME if (model, name) in _MICRO_TIME_FIELDS else TIME
    if type_str == "object":
        if info is not None and _is_int_or_string(info):
            return INT_OR_STRING
        return _ANY_REFS.get((model, name), ANY)
    if is_model(type_str):
        return Type(Tag.STRUCT, struct=model_struct(type_str))
    return ANY


# --- the autoscaling.k8s.io CRDs -----------------------------------------------------------

#: Kinds served from upstream's CRD schemas, and the file holding each (transcribed from
#: kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml).
CRD_FILES: Final = {
    "VerticalPodAutoscaler": "vpa_schema.json",
    "VerticalPodAutoscalerCheckpoint": "vpa_checkpoint_schema.json",
}


@functools.cache
def crd(kind: str) -> dict[str, Any]:
    """Upstream's CRD (v1) of ``kind``: names, printer columns and `openAPIV3Schema`."""
    try:
        name = CRD_FILES[kind]
    except KeyError:
        raise KeyError(f"no CRD schema for {kind}") from None
    text = resources.files("inplace.api").joinpath(name).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def vpa_crd() -> dict[str, Any]:
    """Upstream's VPA CRD (v1): names, printer columns and `openAPIV3Schema`, as stored."""
    return crd("VerticalPodAutoscaler")


def is_crd(kind: Kind) -> bool:
    """Kinds served from a CRD schema upstream (stored, but no built-in model)."""
    return kind.model is None and kind.stored


#: The pattern controller-gen writes for a ``resource.Quantity`` field of a CRD.
_CRD_QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _crd_type(node: Mapping[str, Any], go_name: str) -> Type:
    if node.get("x-kubernetes-int-or-string"):
        # A Go resource.Quantity in the CRD's type: int-or-string with the quantity pattern.
        is_quantity = node.get("pattern") == _CRD_QUANTITY_PATTERN
        return Type(Tag.INT_OR_STRING, ref=QUANTITY_NAME if is_quantity else None)
    type_ = node.get("type")
    if type_ == "object":
        if "properties" in node:
            return Type(Tag.STRUCT, struct=_crd_struct(node, go_name))
        if "additionalProperties" in node:
            return Type(Tag.MAP, elem=_crd_type(node["additionalProperties"], go_name))
        return Type(Tag.ANY)
    if type_ == "array":
        return Type(Tag.LIST, elem=_crd_type(node.get("items", {}), go_name))
    if type_ == "string":
        return Type(Tag.TIME if node.get("format") == "date-time" else Tag.STRING)
    if type_ == "integer":
        return Type(Tag.INT32 if node.get("format") == "int32" else Tag.INT64)
    if type_ == "number":
        return Type(Tag.NUMBER)
    if type_ == "boolean":
        return Type(Tag.BOOL)
    return Type(Tag.ANY)


def _crd_struct(node: Mapping[str, Any], go_name: str) -> Struct:
    struct = Struct(name="", go_name=go_name, description=node.get("description", ""), crd=True)
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        struct.fields[name] = Field(
            name=name,
            type=_crd_type(child, go_name),
            description=child.get("description", ""),
            required=name in required,
        )
    return struct


@functools.cache
def _crd_root(kind_name: str) -> Struct:
    data = crd(kind_name)
    kind = data["names"]["kind"]
    struct = _crd_struct(data["openAPIV3Schema"], kind)
    group = ".".join(reversed(data["group"].split(".")))
    struct.name = f"{group}.{data['version']}.{kind}"
    meta = struct.fields["metadata"]
    struct.fields["metadata"] = Field(
        "metadata",
        Type(Tag.STRUCT, struct=model_struct("V1ObjectMeta")),
        meta.description,
        meta.required,
    )
    return struct


# --- metrics.k8s.io/v1beta1, by hand ------------------------------------------------------

_API_VERSION_DOC: Final = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC: Final = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
OBJECT_META_DOC: Final = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_LIST_META_DOC: Final = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
#: The client drops the description of fields whose type is another model; `metadata` has
#: the same text on every kind upstream, so it is restored here.
_META_FIELD_DOCS: Final = {"V1ObjectMeta": OBJECT_META_DOC, "V1ListMeta": _LIST_META_DOC}
_TIMESTAMP_DOC: Final = (
    "The following fields define time interval from which metrics were collected from the "
    "interval [Timestamp-Window, Timestamp]."
)


def _type_meta_fields() -> dict[str, Field]:
    return {
        "apiVersion": Field("apiVersion", STRING, _API_VERSION_DOC),
        "kind": Field("kind", STRING, _KIND_DOC),
    }


def _metric_fields(extra: dict[str, Field]) -> dict[str, Field]:
    fields = _type_meta_fields()
    fields["metadata"] = Field(
        "metadata", Type(Tag.STRUCT, struct=model_struct("V1ObjectMeta")), OBJECT_META_DOC
    )
    fields["timestamp"] = Field("timestamp", TIME, _TIMESTAMP_DOC, required=True)
    fields["window"] = Field("window", STRING, "", required=True)
    fields.update(extra)
    return fields


@functools.cache
def _metrics_structs() -> dict[str, Struct]:
    usage = Type(Tag.MAP, elem=QUANTITY)
    container = Struct(
        f"{METRICS}.ContainerMetrics",
        "ContainerMetrics",
        "ContainerMetrics sets resource usage metrics of a container.",
        {
            "name": Field(
                "name",
                STRING,
                "Container name corresponding to the one from pod.spec.containers.",
                required=True,
            ),
            "usage": Field(
                "usage", usage, "The memory usage is the memory working set.", required=True
            ),
        },
    )
    pod = Struct(
        f"{METRICS}.PodMetrics",
        "PodMetrics",
        "PodMetrics sets resource usage metrics of a pod.",
        _metric_fields(
            {
                "containers": Field(
                    "containers",
                    Type(Tag.LIST, elem=Type(Tag.STRUCT, struct=container)),
                    "Metrics for all containers are collected within the same time window.",
                    required=True,
                )
            }
        ),
    )
    node = Struct(
        f"{METRICS}.NodeMetrics",
        "NodeMetrics",
        "NodeMetrics sets resource usage metrics of a node.",
        _metric_fields(
            {
                "usage": Field(
                    "usage", usage, "The memory usage is the memory working set.", required=True
                )
            }
        ),
    )
    return {"PodMetrics": pod, "NodeMetrics": node, "ContainerMetrics": container}


# --- per-kind roots -----------------------------------------------------------------------


@functools.cache
def kind_schema(kind: Kind) -> Struct:
    """The root Struct of a served kind (its `metadata` is always ObjectMeta)."""
    if kind.model is not None:
        return model_struct(kind.model)
    if is_crd(kind):
        if kind.kind not in CRD_FILES:
            raise KeyError(f"no schema for {kind.api_version} {kind.kind}")
        return _crd_root(kind.kind)
    structs = _metrics_structs()
    if kind.kind not in structs:
        raise KeyError(f"no schema for {kind.api_version} {kind.kind}")
    return structs[kind.kind]


@functools.cache
def list_schema(kind: Kind) -> Struct:
    """The Struct of `<Kind>List`: the client's list model, or one made like upstream's."""
    if kind.model is not None:
        return model_struct(_list_model(kind.model))
    root = kind_schema(kind)
    fields = _type_meta_fields()
    fields["items"] = Field(
        "items",
        Type(Tag.LIST, elem=Type(Tag.STRUCT, struct=root)),
        f"List of {kind.plural}. More info: "
        "https://git.k8s.io/community/contributors/devel/api-conventions.md",
        required=True,
    )
    fields["metadata"] = Field(
        "metadata", Type(Tag.STRUCT, struct=model_struct("V1ListMeta")), _LIST_META_DOC
    )
    return Struct(
        name=f"{root.name}List",
        go_name=kind.list_kind,
        description=f"{kind.list_kind} is a list of {kind.kind}",
        fields=fields,
        crd=root.crd,
    )


# --- the check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldReport:
    """What `check_fields` found: unknown field paths and wrong-type messages, in object order."""

    unknown: list[str]
    type_errors: list[str]

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.type_errors


#: Python type of a decoded JSON value -> the word encoding/json uses for it.
_GO_VALUE: Final = {
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    list: "array",
    dict: "object",
}
#: ... and the word the CRD validator uses.
_CRD_VALUE: Final = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}
_ACCEPTS: Final[dict[Tag, frozenset[type]]] = {
    Tag.STRING: frozenset({str}),
    Tag.BYTES: frozenset({str}),
    Tag.INT32: frozenset({int}),
    Tag.INT64: frozenset({int}),
    Tag.NUMBER: frozenset({int, float}),
    Tag.BOOL: frozenset({bool}),
    Tag.TIME: frozenset({str}),
    Tag.MICRO_TIME: frozenset({str}),
    Tag.QUANTITY: frozenset({str, int, float}),
    Tag.INT_OR_STRING: frozenset({str, int}),
}
_CRD_TYPE_WORD: Final = {
    Tag.STRING: "string",
    Tag.TIME: "string",
    Tag.INT32: "integer",
    Tag.INT64: "integer",
    Tag.NUMBER: "number",
    Tag.BOOL: "boolean",
    Tag.INT_OR_STRING: "integer or string",
    Tag.LIST: "array",
    Tag.MAP: "object",
    Tag.STRUCT: "object",
}


def _json_type(value: Any) -> type:
    """The plain JSON type of a decoded value (subclasses folded; bool kept apart from int)."""
    t = type(value)
    if t in _GO_VALUE:
        return t
    for base in (bool, str, int, float, list, dict):
        if isinstance(value, base):
            return base
    if isinstance(value, Mapping):
        return dict
    return list


def go_type(t: Type) -> str:
    """The Go type name upstream's decode errors print for `t` ("[]v1.Container")."""
    tag = t.tag
    if tag is Tag.STRUCT:
        assert t.struct is not None
        package = t.struct.name.rsplit(".", 2)
        return f"{package[-2]}.{t.struct.go_name}" if len(package) == 3 else t.struct.go_name
    if tag is Tag.LIST:
        assert t.elem is not None
        return f"[]{go_type(t.elem)}"
    if tag is Tag.MAP:
        assert t.elem is not None
        if t.elem.tag is Tag.QUANTITY:
            return "v1.ResourceList"
        return f"map[string]{go_type(t.elem)}"
    return _GO_SCALARS[tag]


_GO_SCALARS: Final = {
    Tag.STRING: "string",
    Tag.BYTES: "[]uint8",
    Tag.INT32: "int32",
    Tag.INT64: "int64",
    Tag.NUMBER: "float64",
    Tag.BOOL: "bool",
    Tag.TIME: "v1.Time",
    Tag.MICRO_TIME: "v1.MicroTime",
    Tag.QUANTITY: "resource.Quantity",
    Tag.INT_OR_STRING: "intstr.IntOrString",
    Tag.ANY: "runtime.RawExtension",
}


#: How a field is checked: a scalar against a set of Python types, or a container walk.
_SCALAR, _STRUCT, _LIST, _MAP, _ANY = range(5)
#: (accepted Python types or None, walk code, type, int limit or 0, element entry or None)
_Entry = tuple[frozenset[type] | None, int, Type, int, Any]
_INT_LIMIT: Final = {Tag.INT32: 2**31, Tag.INT64: 2**63}


def _entry(t: Type) -> _Entry:
    """Precomputed check of one type, so the walk decides the common case without a call."""
    tag = t.tag
    if tag is Tag.STRUCT:
        return (None, _STRUCT, t, 0, None)
    if tag is Tag.LIST or tag is Tag.MAP:
        assert t.elem is not None
        return (None, _LIST if tag is Tag.LIST else _MAP, t, 0, _entry(t.elem))
    if tag is Tag.ANY:
        return (None, _ANY, t, 0, None)
    if tag is Tag.BYTES:  # every value takes the slow path: base64 is checked there
        return (frozenset(), _SCALAR, t, 0, None)
    return (_ACCEPTS[tag], _SCALAR, t, _INT_LIMIT.get(tag, 0), None)


def _table(st: Struct) -> dict[str, _Entry]:
    if st.table is None:
        st.table = {name: _entry(f.type) for name, f in st.fields.items()}
    return st.table


class _Checker:
    """One walk over one object. `path` is the strict-decoding path (with indices) ending in
    '.', or ''; `gopath` is the same without indices, for encoding/json's messages. The common
    case (a scalar of the right type) is decided inline, without a call."""

    __slots__ = ("crd", "errors", "unknown")

    def __init__(self, crd: bool) -> None:
        self.crd = crd
        self.unknown: list[str] = []
        self.errors: list[str] = []

    def struct(self, st: Struct, obj: Mapping[str, Any], path: str, gopath: str) -> None:
        table = st.table or _table(st)
        for key, value in obj.items():
            entry = table.get(key)
            if entry is None:
                self.unknown.append(path + key)
                continue
            if value is None:
                continue
            accepts, code, t, limit, sub = entry
            if accepts is not None:
                vt = type(value)
                if vt in accepts and (vt is not int or not limit or -limit <= value < limit):
                    continue
                self.scalar(entry, value, st, path + key, gopath + key)
            elif code == _STRUCT:
                if type(value) is dict or _is_map(value):
                    assert t.struct is not None
                    self.struct(t.struct, value, f"{path}{key}.", f"{gopath}{key}.")
                else:
                    self.wrong(t, value, st, path + key, gopath + key)
            elif code == _LIST:
                self.list(t, sub, value, st, path + key, gopath + key)
            elif code == _MAP:
                self.map(t, sub, value, st, path + key, gopath + key)

    def list(
        self, t: Type, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str
    ) -> None:
        if type(value) is not list and not isinstance(value, list | tuple):
            self.wrong(t, value, holder, path, gopath)
            return
        accepts, code, elem, limit, _ = entry
        if code == _STRUCT:
            assert elem.struct is not None
            sub = elem.struct
            for i, item in enumerate(value):
                if type(item) is dict or _is_map(item):
                    self.struct(sub, item, f"{path}[{i}].", gopath + ".")
                elif item is not None:
                    self.wrong(elem, item, holder, f"{path}[{i}]", gopath)
        elif accepts is not None:
            for i, item in enumerate(value):
                vt = type(item)
                if item is None or (
                    vt in accepts and (vt is not int or not limit or -limit <= item < limit)
                ):
                    continue
                self.scalar(entry, item, holder, f"{path}[{i}]", gopath)
        elif code != _ANY:
            for i, item in enumerate(value):
                if item is not None:
                    self.nested(entry, item, holder, f"{path}[{i}]", gopath)

    def map(
        self, t: Type, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str
    ) -> None:
        if type(value) is not dict and not _is_map(value):
            self.wrong(t, value, holder, path, gopath)
            return
        accepts, code, _, limit, _ = entry
        if code == _ANY:
            return
        for key, item in value.items():
            if item is None:
                continue
            if accepts is not None:
                vt = type(item)
                if vt in accepts and (vt is not int or not limit or -limit <= item < limit):
                    continue
                self.scalar(entry, item, holder, f"{path}.{key}", gopath)
            else:
                self.nested(entry, item, holder, f"{path}.{key}", gopath)

    def nested(self, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str) -> None:
        """A list or map element that is itself a container."""
        _, code, t, _, sub = entry
        if code == _STRUCT:
            if type(value) is dict or _is_map(value):
                assert t.struct is not None
                self.struct(t.struct, value, path + ".", gopath + ".")
            else:
                self.wrong(t, value, holder, path, gopath)
        elif code == _LIST:
            self.list(t, sub, value, holder, path, gopath)
        elif code == _MAP:
            self.map(t, sub, value, holder, path, gopath)

    def scalar(self, entry: _Entry, value: Any, holder: Struct, path: str, gopath: str) -> None:
        """The slow path for a scalar: subclasses of the JSON types, out-of-range ints, errors."""
        accepts, _, t, limit, _ = entry
        assert accepts is not None
        kind = _json_type(value)
        if t.tag is Tag.BYTES and kind is str:
            problem = base64_error(value)
            if problem is not None:
                self.errors.append(problem)
            return
        accepts = accepts or _ACCEPTS[t.tag]
        if kind not in accepts:
            self.wrong(t, value, holder, path, gopath)
        elif kind is int and limit and not -limit <= value < limit:
            self.wrong(t, value, holder, path, gopath, number=True)

    def wrong(
        self,
        t: Type,
        value: Any,
        holder: Struct,
        path: str,
        gopath: str,
        *,
        number: bool = False,
    ) -> None:
        kind = _json_type(value)
        if self.crd:
            got = _CRD_VALUE[kind]
            want = _CRD_TYPE_WORD.get(t.tag, "object")
            self.errors.append(
                f'{path}: Invalid value: "{got}": {path} in body must be of type {want}: "{got}"'
            )
            return
        what = _GO_VALUE[kind]
        if number or (kind is float and t.tag in (Tag.INT32, Tag.INT64, Tag.INT_OR_STRING)):
            what = f"number {json.dumps(value)}"
        self.errors.append(
            f"json: cannot unmarshal {what} into Go struct field "
            f"{holder.go_name}.{gopath} of type {go_type(t)}"
        )


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def check_fields(kind: Kind, obj: Mapping[str, Any]) -> FieldReport:
    """Every unknown field path and every wrongly-typed value in `obj`, an object of `kind`.

    `apiVersion` and `kind` are always allowed; `metadata` is checked as ObjectMeta.
    Unknown paths are upstream's strict-decoding format, `spec.containers[0].imagePullPolicyy`
    (no leading dot), which upstream reports as 400 ``<Kind> in version "<v>" cannot be handled
    as a <Kind>: strict decoding error: unknown field "<path>", …`` under Strict and as
    ``Warning: unknown field "<path>"`` under Warn (`strict_decoding_error`,
    `unknown_field_warnings`). Type errors are complete messages (see the module docstring).
    """
    root = kind_schema(kind)
    checker = _Checker(root.crd)
    if isinstance(obj, Mapping):
        checker.struct(root, obj, "", "")
    else:
        what = _GO_VALUE[_json_type(obj)]
        checker.errors.append(
            f"json: cannot unmarshal {what} into Go value of type "
            f"{go_type(Type(Tag.STRUCT, struct=root))}"
        )
    return FieldReport(checker.unknown, checker.errors)


def strict_decoding_error(kind: Kind, report: FieldReport) -> str:
    """Upstream's 400 message for a body that fails decoding under fieldValidation=Strict.

    A type error wins over unknown fields, as upstream's decoder stops at the first one.
    CRD type errors are upstream 422s, not decode errors; callers wanting that split can use
    `is_crd(kind)`.
    """
    prefix = f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
    if report.type_errors:
        return prefix + report.type_errors[0]
    unknown = ", ".join(f'unknown field "{path}"' for path in report.unknown)
    return f"{prefix}strict decoding error: {unknown}"


def unknown_field_warnings(report: FieldReport) -> list[str]:
    """One warning text per unknown field, for `Warning` headers under fieldValidation=Warn."""
    return [f'unknown field "{path}"' for path in report.unknown]
