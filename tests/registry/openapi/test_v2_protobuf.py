"""gnostic's protobuf of the Swagger 2.0 document: bytes pinned to OpenAPIv2.proto's field
numbers, and every definition decoded back to the JSON it came from."""

from __future__ import annotations

import struct
from typing import Any

import orjson
import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.openapi.v2 import openapi_v2_bytes, openapi_v2_document
from inplace.registry.openapi.v2_protobuf import encode_document, encode_schema
from inplace.registry.protobuf import iter_fields


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # Schema.type (22) → TypeItem.value (1)
        ({"type": "string"}, b"\xb2\x01\x08\x0a\x06string"),
        # Schema._ref (1), Schema.description (4)
        ({"$ref": "#/definitions/A", "description": "d"}, b"\x0a\x0f#/definitions/A\x22\x01d"),
        # Schema.additional_properties (21) → AdditionalPropertiesItem.boolean (2), even false
        ({"additionalProperties": False}, b"\xaa\x01\x02\x10\x00"),
        # Schema.required (19, repeated), Schema.read_only (27)
        ({"required": ["a", "b"], "readOnly": True}, b"\x9a\x01\x01a\x9a\x01\x01b\xd8\x01\x01"),
        # Schema.minimum (9, double), Schema.max_length (11, int64)
        ({"minimum": -1, "maxLength": 3}, b"\x49" + struct.pack("<d", -1.0) + b"\x58\x03"),
        # Schema.enum (20) → Any.yaml (2); vendor_extension (31) → NamedAny{name, Any}
        (
            {"enum": ["x"], "x-kubernetes-list-type": "atomic"},
            b'\xa2\x01\x05\x12\x03"x"'
            b'\xfa\x01\x24\x0a\x16x-kubernetes-list-type\x12\x0a\x12\x08"atomic"',
        ),
    ],
)
def test_schema_bytes_follow_the_proto(schema: dict[str, Any], expected: bytes) -> None:
    assert encode_schema(schema) == expected


def test_an_unknown_key_is_refused_not_dropped() -> None:
    with pytest.raises(ValueError, match="oneOf"):
        encode_schema({"oneOf": [{"type": "string"}]})


def message(data: bytes) -> dict[int, list[Any]]:
    fields: dict[int, list[Any]] = {}
    for number, _, value in iter_fields(data):
        fields.setdefault(number, []).append(value)
    return fields


def text(value: Any) -> str:
    assert isinstance(value, bytes)
    return value.decode()


def decode_schema(data: bytes) -> dict[str, Any]:
    """The subset of openapi.v2.Schema the served definitions use, back to JSON."""
    f = message(data)
    out: dict[str, Any] = {}
    for number, key in ((1, "$ref"), (2, "format"), (4, "description"), (13, "pattern")):
        if number in f:
            out[key] = text(f[number][0])
    if 5 in f:
        out["default"] = orjson.loads(message(f[5][0])[2][0])
    if 9 in f:
        out["minimum"] = struct.unpack("<d", f[9][0].to_bytes(8, "little"))[0]
    for number, key in ((11, "maxLength"), (12, "minLength")):
        if number in f:
            out[key] = f[number][0]
    if 16 in f:
        out["uniqueItems"] = bool(f[16][0])
    if 27 in f:
        out["readOnly"] = bool(f[27][0])
    if 19 in f:
        out["required"] = [text(v) for v in f[19]]
    if 20 in f:
        out["enum"] = [orjson.loads(message(v)[2][0]) for v in f[20]]
    if 21 in f:
        extra = message(f[21][0])
        out["additionalProperties"] = (
            decode_schema(extra[1][0]) if 1 in extra else bool(extra[2][0])
        )
    if 22 in f:
        types = [text(v) for v in message(f[22][0]).get(1, [])]
        out["type"] = types[0] if len(types) == 1 else types
    if 23 in f:
        items = [decode_schema(v) for v in message(f[23][0]).get(1, [])]
        out["items"] = items[0] if len(items) == 1 else items
    if 24 in f:
        out["allOf"] = [decode_schema(v) for v in f[24]]
    if 25 in f:
        out["properties"] = {}
        for named in message(f[25][0]).get(1, []):
            entry = message(named)
            out["properties"][text(entry[1][0])] = decode_schema(entry[2][0])
    for named in f.get(31, []):
        entry = message(named)
        out[text(entry[1][0])] = orjson.loads(message(entry[2][0])[2][0])
    return out


_NUMBERS = {"minimum", "maximum", "multipleOf", "maxLength", "minLength", "maxItems", "minItems"}


def representable(schema: Any, parent: str = "") -> Any:
    """`schema` less what proto3 cannot carry: a number that is zero has no presence, so
    gnostic's protobuf (upstream's too) has no `minimum: 0`."""
    if isinstance(schema, list):
        return [representable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: representable(value, key)
        for key, value in schema.items()
        if parent == "properties" or key not in _NUMBERS or value != 0
    }


def test_the_served_protobuf_carries_every_definition_unchanged() -> None:
    doc = openapi_v2_document(REGISTRY)
    data, _ = openapi_v2_bytes(REGISTRY, protobuf=True)
    top = message(data)
    assert text(top[1][0]) == "2.0"
    info = message(top[2][0])
    assert text(info[1][0]) == "Kubernetes"
    definitions = {}
    for named in message(top[9][0])[1]:
        entry = message(named)
        definitions[text(entry[1][0])] = decode_schema(entry[2][0])
    expected = {name: representable(schema) for name, schema in doc["definitions"].items()}
    assert definitions == expected
    paths = [text(message(p)[1][0]) for p in message(top[8][0])[2]]
    assert paths == list(doc["paths"])


def test_operations_keep_their_parameters_and_kind() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "v"},
        "paths": {
            "/p/{name}": {
                "patch": {
                    "operationId": "patchP",
                    "consumes": ["application/merge-patch+json"],
                    "parameters": [
                        {
                            "name": "body",
                            "in": "body",
                            "required": True,
                            "schema": {"type": "object"},
                        },
                        {"name": "dryRun", "in": "query", "type": "string", "uniqueItems": True},
                    ],
                    "responses": {"200": {"description": "OK", "schema": {"type": "object"}}},
                    "x-kubernetes-action": "patch",
                },
                "parameters": [{"name": "name", "in": "path", "required": True, "type": "string"}],
            }
        },
        "definitions": {},
    }
    item = message(message(message(encode_document(doc))[8][0])[2][0])
    path_item = message(item[2][0])
    op = message(path_item[8][0])  # PathItem.patch
    assert text(op[5][0]) == "patchP" and text(op[7][0]) == "application/merge-patch+json"
    body = message(message(message(op[8][0])[1][0])[1][0])  # ParametersItem → Parameter → Body
    assert (text(body[2][0]), text(body[3][0]), body[4][0]) == ("body", "body", 1)
    query = message(message(message(message(op[8][1])[1][0])[2][0])[3][0])  # → NonBody → Query
    assert (text(query[4][0]), text(query[6][0]), query[20][0]) == ("dryRun", "string", 1)
    path = message(message(message(message(path_item[9][0])[1][0])[2][0])[4][0])  # → Path
    assert (query[2][0], path[1][0], text(path[4][0]), text(path[5][0])) == (
        b"query",
        1,
        "name",
        "string",
    )
    response = message(message(message(op[9][0])[1][0])[2][0])  # Responses → Named → Value
    assert text(message(response[1][0])[1][0]) == "OK"
    action = message(op[13][0])
    assert (text(action[1][0]), message(action[2][0])[2][0]) == ("x-kubernetes-action", b'"patch"')
