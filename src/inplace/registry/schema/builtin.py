"""Built-in kinds' structs, read from the official `kubernetes` client's models.

The models give field names, types, descriptions and required-ness; what they cannot say,
small tables here supply: which `str` / `Dict[str, str]` fields are `resource.Quantity`, which
`datetime` fields are `MicroTime`, which ints are int64, and the upstream package of each model
(`V1PodSpec` -> `io.k8s.api.core.v1.PodSpec`), found by walking the graph from the served
kinds. Structs are built once per model and shared; cycles are fine.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from typing import Any, Final

from inplace.registry.kinds import REGISTRY
from inplace.registry.models import dict_value, is_model, list_element, model_class, model_fields
from inplace.registry.schema.types import (
    ANY,
    BOOL,
    BYTES,
    FIELDS_V1,
    INT32,
    INT64,
    INT_OR_STRING,
    LIST_META_DOC,
    META,
    MICRO_TIME,
    NUMBER,
    OBJECT_META_DOC,
    QUANTITY,
    RAW_EXTENSION,
    STRING,
    TIME,
    Field,
    Struct,
    Tag,
    Type,
)

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

#: The client drops the description of fields whose type is another model; `metadata` has
#: the same text on every kind upstream, so it is restored here.
_META_FIELD_DOCS: Final = {"V1ObjectMeta": OBJECT_META_DOC, "V1ListMeta": LIST_META_DOC}

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
        claim(list_model(kind.model), package)
        if kind.group == "":
            for seed in _CORE_SEEDS:
                claim(seed, package)
    return placed


def list_model(model: str) -> str:
    """The client model of a kind's list ("V1Pod" -> "V1PodList")."""
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
