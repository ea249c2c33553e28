"""ConfigMaps, Secrets and ServiceAccounts: upstream's rules and messages."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from inplace.api.validation.config import MAX_DATA_BYTES, config_key_errors
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create, validate_update
from tests.api.validation.builders import create_messages, messages, mutate

CONFIG_MAP = REGISTRY.by_kind("", "ConfigMap")
SECRET = REGISTRY.by_kind("", "Secret")
SERVICE_ACCOUNT = REGISTRY.by_kind("", "ServiceAccount")
assert CONFIG_MAP is not None and SECRET is not None and SERVICE_ACCOUNT is not None

KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key_name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def config_map(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "app", "namespace": "default"}, "data": {"a": "1"}, **fields}


def secret(**fields: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": "app", "namespace": "default"}, "data": {"a": b64("1")}}
    obj.update(fields)
    return apply_defaults(SECRET, obj)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", []),
        ("key.name", []),
        ("KEY_NAME-1", []),
        (".hidden", []),
        ("a/b", [KEY_MSG]),
        ("", [KEY_MSG]),
        (".", ["must not be '.'"]),
        ("..", ["must not be '..'"]),
        ("..x", ["must not start with '..'"]),
        ("a" * 254, ["must be no more than 253 characters"]),
    ],
)
def test_config_keys(key: str, expected: list[str]) -> None:
    assert config_key_errors(key) == expected


VALID: list[tuple[Kind, dict[str, Any]]] = [
    (CONFIG_MAP, config_map()),
    (CONFIG_MAP, config_map(binaryData={"b": b64(b"\x00\xff")}, immutable=True)),
    (CONFIG_MAP, config_map(data={"k": "x" * MAX_DATA_BYTES})),
    (SECRET, secret()),
    (SECRET, secret(type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")})),
    (SECRET, secret(type="kubernetes.io/basic-auth", data={"password": ""})),
    (SECRET, secret(type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": b64("{}")})),
    (SECRET, secret(type="example.com/custom")),
    (SERVICE_ACCOUNT, {"metadata": {"name": "robot", "namespace": "default"}}),
]


@pytest.mark.parametrize(("k", "obj"), VALID, ids=lambda v: getattr(v, "kind", ""))
def test_valid(k: Kind, obj: dict[str, Any]) -> None:
    validate_create(k, obj)


INVALID: list[tuple[str, Kind, dict[str, Any], list[str]]] = [
    (
        "bad config map key",
        CONFIG_MAP,
        config_map(data={"a/b": "1"}),
        [f'data[a/b]: Invalid value: "a/b": {KEY_MSG}'],
    ),
    (
        "a key in both bags",
        CONFIG_MAP,
        config_map(data={"k": "1"}, binaryData={"k": b64("1")}),
        ['data[k]: Invalid value: "k": duplicate of key present in binaryData'],
    ),
    (
        "config map over 1 MiB (text and binary together)",
        CONFIG_MAP,
        config_map(data={"k": "x" * (MAX_DATA_BYTES - 1)}, binaryData={"b": b64("yy")}),
        ["[]: Too long: may not be more than 1048576 bytes"],
    ),
    (
        "secret over 1 MiB, counted decoded",
        SECRET,
        secret(data={"k": b64(b"x" * (MAX_DATA_BYTES + 1))}),
        ["data: Too long: may not be more than 1048576 bytes"],
    ),
    (
        "tls secret needs both keys",
        SECRET,
        secret(type="kubernetes.io/tls", data={}),
        ["data[tls.crt]: Required value", "data[tls.key]: Required value"],
    ),
    (
        "basic auth needs a username or a password",
        SECRET,
        secret(type="kubernetes.io/basic-auth", data={}),
        ["data[username]: Required value", "data[password]: Required value"],
    ),
    (
        "ssh auth needs a private key",
        SECRET,
        secret(type="kubernetes.io/ssh-auth", data={}),
        ["data[ssh-privatekey]: Required value"],
    ),
    (
        "docker config must be JSON",
        SECRET,
        secret(type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": b64("nope")}),
        [
            'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid '
            "character 'n' looking for beginning of value"
        ],
    ),
    (
        "service account token secrets name their account",
        SECRET,
        secret(type="kubernetes.io/service-account-token"),
        ["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
    ),
    (
        "service account name is a DNS subdomain",
        SERVICE_ACCOUNT,
        {"metadata": {"name": "Robot", "namespace": "default"}},
        [
            'metadata.name: Invalid value: "Robot": a lowercase RFC 1123 subdomain must consist '
            "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
    ),
]


@pytest.mark.parametrize(
    ("k", "obj", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid(k: Kind, obj: dict[str, Any], expected: list[str]) -> None:
    assert create_messages(k, obj) == expected


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    return mutate(obj, lambda o: o["metadata"].update(uid="u1", creationTimestamp="t"))


def test_immutable_config_map_keeps_its_data() -> None:
    old = stored(config_map(immutable=True))
    validate_update(CONFIG_MAP, mutate(old, lambda o: o["metadata"].update(labels={"a": "b"})), old)
    changed = mutate(old, lambda o: o.update(data={"a": "2"}, immutable=False))
    assert messages(lambda: validate_update(CONFIG_MAP, changed, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
    mutable = stored(config_map())
    validate_update(CONFIG_MAP, mutate(mutable, lambda o: o.update(data={"b": "2"})), mutable)


def test_secret_type_never_changes_and_immutable_data_stays() -> None:
    old = stored(secret(immutable=True))
    changed = mutate(old, lambda o: o.update(type="example.com/other"))
    assert messages(lambda: validate_update(SECRET, changed, old)) == [
        'type: Invalid value: "example.com/other": field is immutable'
    ]
    new_data = mutate(old, lambda o: o["data"].update(b=b64("2")))
    assert messages(lambda: validate_update(SECRET, new_data, old)) == [
        "data: Forbidden: field is immutable when `immutable` is set"
    ]


def test_string_data_is_merged_into_data_and_wins() -> None:
    obj = apply_defaults(
        SECRET,
        {
            "metadata": {"name": "s"},
            "data": {"user": b64("old"), "kept": b64("k")},
            "stringData": {"user": "new", "password": "pä55"},
        },
    )
    assert obj == {
        "metadata": {"name": "s"},
        "type": "Opaque",
        "data": {"user": b64("new"), "kept": b64("k"), "password": b64("pä55")},
    }
