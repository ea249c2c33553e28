"""The Swagger 2.0 document in gnostic's protobuf (`openapi.v2.Document`), as kubectl reads it.

kubectl asks for `/openapi/v2` only as
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and decodes it with gnostic's
generated Go types (github.com/google/gnostic-models, `openapiv2/OpenAPIv2.proto`); the field
numbers below are that file's. Written by hand rather than with a protobuf library: the
encoding is a few dozen lines, the messages are fixed, and no `.proto` compiler is needed.

As gnostic does, values it keeps as free-form YAML (`default`, `enum`, `example`, and every
`x-…` vendor extension) are `Any{yaml: "…"}`; JSON text is YAML, so they are written as JSON.
Fields are written in field-number order and zero values are left out, as Go's proto.Marshal
does. A key this encoder does not know raises `ValueError`, so nothing is silently dropped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

__all__ = ["encode_document", "encode_schema"]

_VARINT: Final = 0
_FIXED64: Final = 1
_BYTES: Final = 2


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 as two's complement, ten bytes, like Go's proto
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _message(number: int, payload: bytes) -> bytes:
    """A sub-message, written even when empty (its presence matters)."""
    return _key(number, _BYTES) + _varint(len(payload)) + payload


def _string(number: int, value: Any) -> bytes:
    if not value:
        return b""
    if not isinstance(value, str):
        raise ValueError(f"field {number}: expected a string, got {value!r}")
    data = value.encode()
    return _key(number, _BYTES) + _varint(len(data)) + data


def _strings(number: int, values: Iterable[Any]) -> bytes:
    return b"".join(_message(number, str(v).encode()) for v in values)


def _bool(number: int, value: Any) -> bytes:
    return _key(number, _VARINT) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _key(number, _VARINT) + _varint(int(value)) if value else b""


def _double(number: int, value: Any) -> bytes:
    return _key(number, _FIXED64) + struct.pack("<d", float(value)) if value else b""


def _any(value: Any) -> bytes:
    """gnostic's `Any`: the value as YAML text (field 2)."""
    return _string(2, orjson.dumps(value).decode())


def _named_any(name: str, value: Any) -> bytes:
    return _string(1, name) + _message(2, _any(value))


def _extensions(number: int, obj: dict[str, Any]) -> bytes:
    return b"".join(
        _message(number, _named_any(k, v)) for k, v in obj.items() if k.startswith("x-")
    )


def _check(obj: dict[str, Any], known: Iterable[str], what: str) -> None:
    unknown = [k for k in obj if k not in known and not k.startswith("x-")]
    if unknown:
        raise ValueError(f"{what}: no protobuf field for {unknown}")


# --- Schema -------------------------------------------------------------------------------

_SCHEMA_SCALARS: Final[dict[str, tuple[int, Callable[[int, Any], bytes]]]] = {
    "$ref": (1, _string),
    "format": (2, _string),
    "title": (3, _string),
    "description": (4, _string),
    "multipleOf": (6, _double),
    "maximum": (7, _double),
    "exclusiveMaximum": (8, _bool),
    "minimum": (9, _double),
    "exclusiveMinimum": (10, _bool),
    "maxLength": (11, _int),
    "minLength": (12, _int),
    "pattern": (13, _string),
    "maxItems": (14, _int),
    "minItems": (15, _int),
    "uniqueItems": (16, _bool),
    "maxProperties": (17, _int),
    "minProperties": (18, _int),
    "discriminator": (26, _string),
    "readOnly": (27, _bool),
}
_SCHEMA_KEYS: Final = frozenset(
    {*_SCHEMA_SCALARS, "default", "required", "enum", "additionalProperties", "type"}
    | {"items", "allOf", "properties", "example"}
)


def encode_schema(schema: dict[str, Any]) -> bytes:
    """`openapi.v2.Schema`."""
    _check(schema, _SCHEMA_KEYS, "schema")
    fields: list[tuple[int, bytes]] = []
    for key, (number, encode) in _SCHEMA_SCALARS.items():
        if key in schema:
            fields.append((number, encode(number, schema[key])))
    if "default" in schema:
        fields.append((5, _message(5, _any(schema["default"]))))
    fields.append((19, _strings(19, schema.get("required", ()))))
    fields.append((20, b"".join(_message(20, _any(v)) for v in schema.get("enum", ()))))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        fields.append((21, _message(21, _message(1, encode_schema(extra)))))
    elif isinstance(extra, bool):  # a oneof member: written even when false
        fields.append((21, _message(21, _key(2, _VARINT) + _varint(int(extra)))))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        fields.append((22, _message(22, _strings(1, types))))
    if "items" in schema:
        items = schema["items"] if isinstance(schema["items"], list) else [schema["items"]]
        fields.append((23, _message(23, b"".join(_message(1, encode_schema(i)) for i in items))))
    fields.append((24, b"".join(_message(24, encode_schema(s)) for s in schema.get("allOf", ()))))
    if "properties" in schema:
        named = b"".join(
            _message(1, _string(1, name) + _message(2, encode_schema(sub)))
            for name, sub in schema["properties"].items()
        )
        fields.append((25, _message(25, named)))
    if "example" in schema:
        fields.append((30, _message(30, _any(schema["example"]))))
    fields.append((31, _extensions(31, schema)))
    return b"".join(data for _, data in sorted(fields, key=lambda f: f[0]))


# --- paths --------------------------------------------------------------------------------

#: Field numbers of a non-body parameter's sub-schema: (required, in, description, name,
#: allowEmptyValue or None, type, format, uniqueItems). Query parameters have one more field
#: (allowEmptyValue) than path and header parameters, which shifts the rest by one.
_NON_BODY: Final = {
    "query": (3, (1, 2, 3, 4, 5, 6, 7, 20)),
    "path": (4, (1, 2, 3, 4, None, 5, 6, 19)),
    "header": (1, (1, 2, 3, 4, None, 5, 6, 19)),
}
_PARAM_KEYS: Final = frozenset(
    {"name", "in", "description", "required", "type", "format", "uniqueItems", "schema"}
    | {"allowEmptyValue"}
)


def _parameter(param: dict[str, Any]) -> bytes:
    """`ParametersItem{parameter: Parameter{body_parameter | non_body_parameter}}`."""
    _check(param, _PARAM_KEYS, f"parameter {param.get('name')!r}")
    where = param.get("in")
    if where == "body":
        body = (
            _string(1, param.get("description"))
            + _string(2, param.get("name"))
            + _string(3, where)
            + _bool(4, param.get("required"))
            + _message(5, encode_schema(param.get("schema") or {}))
            + _extensions(6, param)
        )
        return _message(1, _message(1, body))
    if where not in _NON_BODY:
        raise ValueError(f"parameter {param.get('name')!r}: unsupported location {where!r}")
    which, (required, in_, description, name, allow_empty, type_, format_, unique) = _NON_BODY[
        where
    ]
    fields = [
        (required, _bool(required, param.get("required"))),
        (in_, _string(in_, where)),
        (description, _string(description, param.get("description"))),
        (name, _string(name, param.get("name"))),
        (type_, _string(type_, param.get("type"))),
        (format_, _string(format_, param.get("format"))),
        (unique, _bool(unique, param.get("uniqueItems"))),
    ]
    if allow_empty is not None:
        fields.append((allow_empty, _bool(allow_empty, param.get("allowEmptyValue"))))
    sub = b"".join(data for _, data in sorted(fields, key=lambda f: f[0]))
    return _message(1, _message(2, _message(which, sub)))


def _responses(responses: dict[str, Any]) -> bytes:
    """`Responses{response_code: NamedResponseValue{name, ResponseValue{response}}}`."""
    out = b""
    for code, response in responses.items():
        _check(response, {"description", "schema"}, f"response {code}")
        body = _string(1, response.get("description"))
        if "schema" in response:
            body += _message(2, _message(1, encode_schema(response["schema"])))
        out += _message(1, _string(1, code) + _message(2, _message(1, body)))
    return out


_OPERATION_KEYS: Final = frozenset(
    {"tags", "summary", "description", "operationId", "produces", "consumes", "parameters"}
    | {"responses", "schemes", "deprecated"}
)


def _operation(op: dict[str, Any]) -> bytes:
    """`openapi.v2.Operation`."""
    _check(op, _OPERATION_KEYS, f"operation {op.get('operationId')!r}")
    return (
        _strings(1, op.get("tags", ()))
        + _string(2, op.get("summary"))
        + _string(3, op.get("description"))
        + _string(5, op.get("operationId"))
        + _strings(6, op.get("produces", ()))
        + _strings(7, op.get("consumes", ()))
        + b"".join(_message(8, _parameter(p)) for p in op.get("parameters", ()))
        + _message(9, _responses(op.get("responses") or {}))
        + _strings(10, op.get("schemes", ()))
        + _bool(11, op.get("deprecated"))
        + _extensions(13, op)
    )


_PATH_ITEM_FIELDS: Final = {
    "get": 2,
    "put": 3,
    "post": 4,
    "delete": 5,
    "options": 6,
    "head": 7,
    "patch": 8,
}


def _path_item(item: dict[str, Any]) -> bytes:
    """`openapi.v2.PathItem`."""
    _check(item, {*_PATH_ITEM_FIELDS, "parameters"}, "path item")
    out = b""
    for method, number in _PATH_ITEM_FIELDS.items():
        if method in item:
            out += _message(number, _operation(item[method]))
    out += b"".join(_message(9, _parameter(p)) for p in item.get("parameters", ()))
    return out + _extensions(10, item)


# --- Document -----------------------------------------------------------------------------

_DOCUMENT_KEYS: Final = frozenset(
    {"swagger", "info", "paths", "definitions", "security", "securityDefinitions"}
)


def _security_definition(scheme: dict[str, Any]) -> bytes:
    """`SecurityDefinitionsItem`: only API keys (the bearer token) are served."""
    if scheme.get("type") != "apiKey":
        raise ValueError(f"security scheme type {scheme.get('type')!r} is not encoded")
    _check(scheme, {"type", "name", "in", "description"}, "security scheme")
    api_key = (
        _string(1, scheme.get("type"))
        + _string(2, scheme.get("name"))
        + _string(3, scheme.get("in"))
        + _string(4, scheme.get("description"))
    )
    return _message(2, api_key)


def encode_document(doc: dict[str, Any]) -> bytes:
    """`openapi.v2.Document`, the body of `/openapi/v2` in protobuf."""
    _check(doc, _DOCUMENT_KEYS, "document")
    info = doc.get("info") or {}
    _check(info, {"title", "version", "description"}, "info")
    paths = b"".join(
        _message(2, _string(1, name) + _message(2, _path_item(item)))
        for name, item in (doc.get("paths") or {}).items()
    )
    definitions = b"".join(
        _message(1, _string(1, name) + _message(2, encode_schema(schema)))
        for name, schema in (doc.get("definitions") or {}).items()
    )
    security = b"".join(
        _message(
            12,
            b"".join(
                _message(1, _string(1, name) + _message(2, _strings(1, scopes)))
                for name, scopes in requirement.items()
            ),
        )
        for requirement in doc.get("security", ())
    )
    schemes = b"".join(
        _message(1, _string(1, name) + _message(2, _security_definition(scheme)))
        for name, scheme in (doc.get("securityDefinitions") or {}).items()
    )
    return (
        _string(1, doc.get("swagger"))
        + _message(
            2,
            _string(1, info.get("title"))
            + _string(2, info.get("version"))
            + _string(3, info.get("description")),
        )
        + _message(8, paths)
        + _message(9, definitions)
        + security
        + (_message(13, schemes) if schemes else b"")
    )
