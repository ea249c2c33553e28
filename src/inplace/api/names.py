"""Upstream's name and label rules (apimachinery ``util/validation``), with its exact messages.

Object validation and selector parsing both need them, and both must answer what a real API
server answers, so they live once, here.
"""

from __future__ import annotations

import random
import re
from typing import Final

__all__ = [
    "MAX_GENERATED_NAME_LENGTH",
    "byte_len",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "generated_name",
    "label_value_errors",
    "max_len_error",
    "qualified_name_errors",
    "random_suffix",
    "regex_error",
]

MAX_GENERATED_NAME_LENGTH: Final = 58
"""Upstream's ``maxGeneratedNameLength``: a 63-character label minus the random suffix."""
_SUFFIX_CHARS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""Upstream's ``utilrand`` alphabet: no vowels (no words) and no look-alikes (0/o, 1/l)."""
_SUFFIX_LENGTH: Final = 5
_RANDOM: Final = random.Random()

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT: Final = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_QNAME_CHAR_FMT: Final = "[A-Za-z0-9]"
_QNAME_EXT_CHAR_FMT: Final = "[-A-Za-z0-9_.]"
_QNAME_FMT: Final = f"({_QNAME_CHAR_FMT}{_QNAME_EXT_CHAR_FMT}*)?{_QNAME_CHAR_FMT}"
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT: Final = f"({_QNAME_FMT})?"
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QNAME_RE: Final = re.compile(_QNAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)


def random_suffix() -> str:
    """Upstream's ``utilrand.String(5)``. A name, not a secret, so not from the system's entropy
    (a syscall per character, a quarter of a millisecond per pod under load)."""
    return "".join(_RANDOM.choices(_SUFFIX_CHARS, k=_SUFFIX_LENGTH))


def generated_name(base: str) -> str:
    """Upstream's ``SimpleNameGenerator``: ``base`` (cut to 58 characters) and a random suffix.

    The API server names objects created with ``generateName`` this way; a controller that must
    create exactly once names its objects itself the same way, so that a create retried after a
    lost answer is refused as a duplicate instead of making a second object."""
    return base[:MAX_GENERATED_NAME_LENGTH] + random_suffix()


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream ``RegexError``, double spaces before "or" included."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def byte_len(text: str) -> int:
    """Length in bytes, as Go's ``len`` counts."""
    return len(text.encode("utf-8", "surrogatepass"))


def dns1123_label_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1123Label``."""
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1035Label`` (Service names)."""
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1123Subdomain``."""
    errs = []
    if byte_len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """Upstream ``IsQualifiedName`` (label keys, annotation keys, resource names)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif byte_len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Upstream ``IsValidLabelValue``."""
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
