"""The operations (paths) of each kind and subresource: operation ids, actions, parameters,
request bodies and responses, as upstream's generated documents have them."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

from inplace.registry import schema as s
from inplace.registry.kinds import Kind
from inplace.registry.openapi.components import (
    DELETE_OPTIONS,
    PATCH,
    STATUS,
    Components,
    crd_component,
    gvk_of,
    ref,
)
from inplace.registry.openapi.parameters import (
    DELETE_COLLECTION_PARAMS,
    DELETE_PARAMS,
    LIST_PARAMS,
    LOG_PARAMS,
    PARAMETERS,
    PATCH_PARAMS,
    PATCH_TYPES,
    WRITE_PARAMS,
    name_param,
    param,
    parameters_named,
)
from inplace.registry.patchmeta import schema_for_kind

# --- operations ---------------------------------------------------------------------------


def _content(name: str, *, watch: bool = False) -> dict[str, Any]:
    types = ["application/json", "application/yaml"]
    if watch:
        types.append("application/json;stream=watch")
    return {t: {"schema": ref(name)} for t in types}


def build_responses(name: str, codes: Iterable[int], *, watch: bool = False) -> dict[str, Any]:
    words = {200: "OK", 201: "Created", 202: "Accepted"}
    out: dict[str, Any] = {
        str(code): {"content": _content(name, watch=watch), "description": words[code]}
        for code in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


def build_operation(
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
    parameters = parameters_named(params)
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
    return {"content": {t: {"schema": ref(name)} for t in content_types}, "required": True}


def group_words(kind: Kind) -> tuple[str, str]:
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


def patch_types_of(kind: Kind) -> tuple[str, ...]:
    """The patch media types the server takes for `kind`: no strategic merge patch for a kind
    without a client model (a custom resource), which the server answers with 415 as upstream
    does. The PATCH operation must not offer it, or kubectl computes one and sends it."""
    if schema_for_kind(kind) is None:
        return tuple(t for t in PATCH_TYPES if t != "application/strategic-merge-patch+json")
    return PATCH_TYPES


def path_prefix(group: str, version: str) -> str:
    return f"/api/{version}" if group == "" else f"/apis/{group}/{version}"


SUB_MODELS: Final = {
    "scale": "V1Scale",
    "binding": "V1Binding",
    "eviction": "V1Eviction",
    "token": "AuthenticationV1TokenRequest",
}
SUB_GVKS: Final = {
    "scale": gvk_of("autoscaling", "v1", "Scale"),
    "binding": gvk_of("", "v1", "Binding"),
    "eviction": gvk_of("policy", "v1", "Eviction"),
    "token": gvk_of("authentication.k8s.io", "v1", "TokenRequest"),
}
#: Subresources that are only created (POST).
CREATE_SUBRESOURCES: Final = ("binding", "eviction", "token")


def kind_paths(kind: Kind, components: Components) -> dict[str, dict[str, Any]]:
    """Every path of one kind, with the operations its verbs and subresources allow."""
    obj = crd_component(kind, components) if s.is_crd(kind) else components.add(s.kind_schema(kind))
    verbs = set(kind.verbs)
    # Create-only kinds (the reviews) have no list type upstream.
    listed = components.add(s.list_schema(kind)) if "list" in verbs else ""
    infix, tag = group_words(kind)
    ns = "Namespaced" if kind.namespaced else ""
    gvk = gvk_of(kind.group, kind.version, kind.kind)
    prefix = path_prefix(kind.group, kind.version)
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{kind.plural}"
        if kind.namespaced
        else f"{prefix}/{kind.plural}"
    )
    item = f"{collection}/{{name}}"
    scope = [copy.deepcopy(PARAMETERS["namespace"])] if kind.namespaced else []
    pretty = copy.deepcopy(PARAMETERS["pretty"])
    paths: dict[str, dict[str, Any]] = {}

    coll: dict[str, Any] = {}
    if "list" in verbs:
        coll["get"] = build_operation(
            "list",
            f"list{infix}{ns}{kind.kind}",
            f"list or watch objects of kind {kind.kind}",
            tag,
            gvk,
            build_responses(listed, (200,), watch=True),
            params=LIST_PARAMS,
        )
    if "create" in verbs:
        coll["post"] = build_operation(
            "post",
            f"create{infix}{ns}{kind.kind}",
            f"create a {kind.kind}",
            tag,
            gvk,
            build_responses(obj, (200, 201, 202)),
            params=WRITE_PARAMS,
            body=_body(obj),
        )
    if "deletecollection" in verbs:
        components.add_model("V1DeleteOptions")
        components.add_model("V1Status")
        coll["delete"] = build_operation(
            "deletecollection",
            f"delete{infix}Collection{ns}{kind.kind}",
            f"delete collection of {kind.kind}",
            tag,
            gvk,
            build_responses(STATUS, (200,)),
            params=DELETE_COLLECTION_PARAMS,
            body={"content": {"*/*": {"schema": ref(DELETE_OPTIONS)}}},
        )
    if coll:
        coll["parameters"] = [*copy.deepcopy(scope), copy.deepcopy(pretty)]
        paths[collection] = coll

    if kind.namespaced and "list" in verbs:
        paths[f"{prefix}/{kind.plural}"] = {
            "get": build_operation(
                "list",
                f"list{infix}{kind.kind}ForAllNamespaces",
                f"list or watch objects of kind {kind.kind}",
                tag,
                gvk,
                build_responses(listed, (200,), watch=True),
            ),
            "parameters": [*parameters_named(LIST_PARAMS), copy.deepcopy(pretty)],
        }

    one = _read_write_operations(
        verbs,
        f"{infix}{ns}{kind.kind}",
        f"the specified {kind.kind}",
        tag,
        gvk,
        obj,
        components,
        patch_types_of(kind),
    )
    if "delete" in verbs:
        components.add_model("V1DeleteOptions")
        one["delete"] = build_operation(
            "delete",
            f"delete{infix}{ns}{kind.kind}",
            f"delete a {kind.kind}",
            tag,
            gvk,
            build_responses(obj, (200, 202)),
            params=DELETE_PARAMS,
            body={"content": {"*/*": {"schema": ref(DELETE_OPTIONS)}}},
        )
    if one:
        one["parameters"] = [name_param(kind.kind), *copy.deepcopy(scope), copy.deepcopy(pretty)]
        paths[item] = one

    for sub in kind.subresources:
        ops = _subresource(kind, sub, obj, infix, ns, tag, gvk, components)
        if ops:
            name = param("name", f"name of the {_sub_kind_name(sub, kind)}", "string", "path")
            if "parameters" in ops:  # a connect subresource: its query, no `pretty`
                ops["parameters"] = sorted(
                    [*ops["parameters"], name, *copy.deepcopy(scope)], key=lambda p: p["name"]
                )
            else:
                ops["parameters"] = [name, *copy.deepcopy(scope), copy.deepcopy(pretty)]
            paths[f"{item}/{sub}"] = ops
    return paths


def _sub_kind_name(sub: str, kind: Kind) -> str:
    return {
        "scale": "Scale",
        "binding": "Binding",
        "eviction": "Eviction",
        "token": "TokenRequest",
        "exec": "PodExecOptions",
        "attach": "PodAttachOptions",
    }.get(sub, kind.kind)


EXEC_PARAMS: Final = (
    param(
        "command",
        "Command is the remote command to execute. argv array. Not executed within a shell.",
        "string",
    ),
    param(
        "container",
        "Container in which to execute the command. Defaults to only container if there is "
        "only one container in the pod.",
        "string",
    ),
    param("stderr", "Redirect the standard error stream of the pod for this call.", "boolean"),
    param(
        "stdin",
        "Redirect the standard input stream of the pod for this call. Defaults to false.",
        "boolean",
    ),
    param("stdout", "Redirect the standard output stream of the pod for this call.", "boolean"),
    param(
        "tty",
        "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.",
        "boolean",
    ),
)
"""The query of ``pods/exec`` (upstream's ``PodExecOptions``)."""
ATTACH_PARAMS: Final = (
    param(
        "container",
        "The container in which to execute the command. Defaults to only container if there "
        "is only one container in the pod.",
        "string",
    ),
    param(
        "stderr",
        "Stderr if true indicates that stderr is to be redirected for the attach call. "
        "Defaults to true.",
        "boolean",
    ),
    param(
        "stdin",
        "Stdin if true, redirects the standard input stream of the pod for this call. "
        "Defaults to false.",
        "boolean",
    ),
    param(
        "stdout",
        "Stdout if true indicates that stdout is to be redirected for the attach call. "
        "Defaults to true.",
        "boolean",
    ),
    param(
        "tty",
        "TTY if true indicates that a tty will be allocated for the attach call. This is "
        "passed through the container runtime so the tty is allocated on the worker node by "
        "the container runtime. Defaults to false.",
        "boolean",
    ),
)
"""The query of ``pods/attach`` (upstream's ``PodAttachOptions``)."""


def _connect(kind: Kind, sub: str, infix: str, ns: str, tag: str) -> dict[str, Any]:
    """``connect`` GET and POST of a streaming subresource (an upgrade, answered by a node)."""
    title = sub[:1].upper() + sub[1:]
    gvk = gvk_of(kind.group, kind.version, _sub_kind_name(sub, kind))
    ops: dict[str, Any] = {}
    for method in ("get", "post"):
        ops[method] = {
            "description": f"connect {method.upper()} requests to {sub} of {kind.kind}",
            "operationId": f"connect{infix}{method.title()}{ns}{kind.kind}{title}",
            "responses": {
                "200": {"content": {"*/*": {"schema": {"type": "string"}}}, "description": "OK"},
                "401": {"description": "Unauthorized"},
            },
            "tags": [tag],
            "x-kubernetes-action": "connect",
            "x-kubernetes-group-version-kind": gvk,
        }
    table = EXEC_PARAMS if sub == "exec" else ATTACH_PARAMS
    ops["parameters"] = [copy.deepcopy(p) for p in table]
    return ops


def _subresource(
    kind: Kind,
    sub: str,
    obj: str,
    infix: str,
    ns: str,
    tag: str,
    gvk: dict[str, str],
    components: Components,
) -> dict[str, Any]:
    """Operations of `<item>/<sub>`: status/resize/scale read+replace+patch, binding,
    eviction and token create, log read."""
    title = sub[:1].upper() + sub[1:]
    verbs = set(kind.verbs)
    if sub in ("exec", "attach"):
        return _connect(kind, sub, infix, ns, tag)
    if sub in CREATE_SUBRESOURCES:
        name = components.add_model(SUB_MODELS[sub])
        return {
            "post": build_operation(
                "post",
                f"create{infix}{ns}{kind.kind}{title}",
                f"create {sub} of a {kind.kind}",
                tag,
                SUB_GVKS[sub],
                build_responses(name, (200, 201, 202)),
                params=WRITE_PARAMS,
                body=_body(name),
            )
        }
    if sub == "log":
        return {
            "get": {
                "description": f"read log of the specified {kind.kind}",
                "operationId": f"read{infix}{ns}{kind.kind}Log",
                "parameters": parameters_named(LOG_PARAMS),
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
    if sub in SUB_MODELS:
        target, sub_gvk = components.add_model(SUB_MODELS[sub]), SUB_GVKS[sub]
    return _read_write_operations(
        verbs,
        f"{infix}{ns}{kind.kind}{title}",
        f"{sub} of the specified {kind.kind}",
        tag,
        sub_gvk,
        target,
        components,
        patch_types_of(kind),
    )


def _read_write_operations(
    verbs: Iterable[str],
    operation: str,
    what: str,
    tag: str,
    gvk: dict[str, str],
    target: str,
    components: Components,
    patch_types: tuple[str, ...],
) -> dict[str, Any]:
    """get/put/patch on one object or one subresource; `operation` is the operationId's
    suffix ("CoreV1NamespacedPod"), `what` ends the description ("the specified Pod")."""
    ops: dict[str, Any] = {}
    if "get" in verbs:
        ops["get"] = build_operation(
            "get", f"read{operation}", f"read {what}", tag, gvk, build_responses(target, (200,))
        )
    if "update" in verbs:
        ops["put"] = build_operation(
            "put",
            f"replace{operation}",
            f"replace {what}",
            tag,
            gvk,
            build_responses(target, (200, 201)),
            params=WRITE_PARAMS,
            body=_body(target),
        )
    if "patch" in verbs:
        components.add_fixed(PATCH)
        ops["patch"] = build_operation(
            "patch",
            f"patch{operation}",
            f"partially update {what}",
            tag,
            gvk,
            build_responses(target, (200, 201)),
            params=PATCH_PARAMS,
            body=_body(PATCH, patch_types),
        )
    return ops
