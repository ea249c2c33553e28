"""Generate src/inplace/registry/protobuf_schema.json from a kubectl binary.

Usage: python tools/gen_protobuf_schema.py [path/to/kubectl]   (default: kubectl on PATH)

Every Kubernetes Go binary embeds, gzipped, the FileDescriptorProto of each
``k8s.io/.../generated.proto`` it links (gogo registers them), with the gogoproto options
intact: ``(gogoproto.nullable) = false`` marks a non-pointer Go field. It also holds the Go
struct tags (``json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"``) as
reflection data, which is where ``omitempty`` lives. Those two facts are what decide how
``encoding/json`` prints a field, so the table carries them as a mode per field (see
``inplace.registry.protobuf``).

The descriptors are read with inplace's own wire reader. Only messages reachable from the
kinds we serve (ROOTS) are written. Rerun after a kubectl upgrade; the test suite checks every
field's JSON name against the official ``kubernetes`` Python client's models.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inplace.registry.protobuf import LEN, iter_fields, read_varint

OUT = Path(__file__).resolve().parent.parent / "src/inplace/registry/protobuf_schema.json"

#: (apiVersion, kind, message) a request body may carry.
ROOTS = [
    ("v1", "Namespace", "core.v1.Namespace"),
    ("v1", "Node", "core.v1.Node"),
    ("v1", "Pod", "core.v1.Pod"),
    ("v1", "Event", "core.v1.Event"),
    ("v1", "Binding", "core.v1.Binding"),
    ("v1", "ConfigMap", "core.v1.ConfigMap"),
    ("v1", "Secret", "core.v1.Secret"),
    ("v1", "ServiceAccount", "core.v1.ServiceAccount"),
    ("v1", "Service", "core.v1.Service"),
    ("v1", "Endpoints", "core.v1.Endpoints"),
    ("discovery.k8s.io/v1", "EndpointSlice", "discovery.v1.EndpointSlice"),
    ("apps/v1", "Deployment", "apps.v1.Deployment"),
    ("apps/v1", "ReplicaSet", "apps.v1.ReplicaSet"),
    ("apps/v1", "StatefulSet", "apps.v1.StatefulSet"),
    ("apps/v1", "DaemonSet", "apps.v1.DaemonSet"),
    ("apps/v1", "ControllerRevision", "apps.v1.ControllerRevision"),
    ("autoscaling/v1", "Scale", "autoscaling.v1.Scale"),
    ("batch/v1", "Job", "batch.v1.Job"),
    ("batch/v1", "CronJob", "batch.v1.CronJob"),
    ("policy/v1", "PodDisruptionBudget", "policy.v1.PodDisruptionBudget"),
    ("policy/v1", "Eviction", "policy.v1.Eviction"),
    ("scheduling.k8s.io/v1", "PriorityClass", "scheduling.v1.PriorityClass"),
    ("coordination.k8s.io/v1", "Lease", "coordination.v1.Lease"),
    ("meta.k8s.io/v1", "DeleteOptions", "meta.v1.DeleteOptions"),
    ("rbac.authorization.k8s.io/v1", "Role", "rbac.v1.Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "rbac.v1.ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rbac.v1.RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "rbac.v1.ClusterRoleBinding"),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        "authorization.v1.SelfSubjectAccessReview",
    ),
    ("authorization.k8s.io/v1", "SubjectAccessReview", "authorization.v1.SubjectAccessReview"),
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        "authorization.v1.LocalSubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        "authorization.v1.SelfSubjectRulesReview",
    ),
    ("authentication.k8s.io/v1", "SelfSubjectReview", "authentication.v1.SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenRequest", "authentication.v1.TokenRequest"),
    ("authentication.k8s.io/v1", "TokenReview", "authentication.v1.TokenReview"),
]

#: Messages decoded by hand in inplace.registry.protobuf (their fields are not needed).
SPECIAL = {
    "meta.v1.Time",
    "meta.v1.MicroTime",
    "meta.v1.Duration",
    "meta.v1.FieldsV1",
    "runtime.RawExtension",
    "resource.Quantity",
    "intstr.IntOrString",
    "authentication.v1.ExtraValue",
    "authorization.v1.ExtraValue",
}

_PREFIXES = (
    ("k8s.io.apimachinery.pkg.apis.", ""),
    ("k8s.io.apimachinery.pkg.api.", ""),
    ("k8s.io.apimachinery.pkg.util.", ""),
    ("k8s.io.apimachinery.pkg.", ""),
    ("k8s.io.api.", ""),
)

_SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    14: "enum",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}
_MESSAGE = 11
_REPEATED = 3
_NULLABLE = 65001  # gogoproto.nullable
_CUSTOMNAME = 65004  # gogoproto.customname
_CASTTYPE = 65007  # gogoproto.casttype


def short(name: str) -> str:
    name = name.lstrip(".")
    for prefix, repl in _PREFIXES:
        if name.startswith(prefix):
            return repl + name[len(prefix) :]
    return name


@dataclass
class ProtoField:
    name: str
    number: int
    repeated: bool
    type: str  # scalar name or short message name
    json_name: str
    nullable: bool = True
    go_name: str = ""
    casttype: str = ""


@dataclass
class ProtoMessage:
    name: str
    fields: list[ProtoField]
    map_entry: bool = False


def _text(value: int | bytes) -> str:
    assert isinstance(value, bytes)
    return value.decode()


def _parse_field(data: bytes) -> ProtoField:
    f = ProtoField("", 0, False, "", "")
    kind = 0
    type_name = ""
    for n, w, v in iter_fields(data):
        if n == 1:
            f.name = _text(v)
        elif n == 3:
            assert isinstance(v, int)
            f.number = v
        elif n == 4:
            f.repeated = v == _REPEATED
        elif n == 5:
            assert isinstance(v, int)
            kind = v
        elif n == 6:
            type_name = short(_text(v))
        elif n == 10:
            f.json_name = _text(v)
        elif n == 8 and w == LEN:
            assert isinstance(v, bytes)
            for on, _ow, ov in iter_fields(v):
                if on == _NULLABLE:
                    f.nullable = bool(ov)
                elif on == _CUSTOMNAME:
                    f.go_name = _text(ov)
                elif on == _CASTTYPE:
                    f.casttype = _text(ov)
    f.type = type_name if kind == _MESSAGE else _SCALARS[kind]
    if not f.go_name:
        f.go_name = f.name[:1].upper() + f.name[1:]
    return f


def _parse_message(data: bytes, scope: str, out: dict[str, ProtoMessage]) -> None:
    name = ""
    fields: list[ProtoField] = []
    nested: list[bytes] = []
    map_entry = False
    for n, _w, v in iter_fields(data):
        if n == 1:
            name = _text(v)
        elif n == 2:
            assert isinstance(v, bytes)
            fields.append(_parse_field(v))
        elif n == 3:
            assert isinstance(v, bytes)
            nested.append(v)
        elif n == 7:
            assert isinstance(v, bytes)
            map_entry = any(on == 7 and ov for on, _ow, ov in iter_fields(v))
    full = f"{scope}.{name}"
    out[full] = ProtoMessage(full, fields, map_entry)
    for sub in nested:
        _parse_message(sub, full, out)


def descriptors(binary: bytes) -> dict[str, ProtoMessage]:
    """Every message of every embedded k8s.io FileDescriptorProto, by short name."""
    messages: dict[str, ProtoMessage] = {}
    for match in re.finditer(rb"\x1f\x8b\x08", binary):
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(
                binary[match.start() : match.start() + 4_000_000]
            )
        except zlib.error:
            continue
        if not data.startswith(b"\n") or b"k8s.io" not in data[:80]:
            continue
        package = ""
        bodies: list[bytes] = []
        try:
            for n, _w, v in iter_fields(data):
                if n == 2:
                    package = short(_text(v))
                elif n == 4:
                    assert isinstance(v, bytes)
                    bodies.append(v)
        except ValueError:
            continue
        for body in bodies:
            _parse_message(body, package, messages)
    return messages


@dataclass
class GoField:
    go_name: str
    json_name: str
    omitempty: bool
    number: int  # 0 when the field has no protobuf tag (e.g. inline TypeMeta)
    proto_name: str
    kind: int  # reflect.Kind of the field's Go type
    inline: bool = False  # json:",inline"


_KIND_PTR = 22
_KIND_STRUCT = 25
_JSON_TAG = re.compile(rb'json:"([^"]*)"')
_PROTO_TAG = re.compile(rb'protobuf:"([^"]*)"')


class Elf:
    """Virtual address <-> file offset for a static little-endian ELF64 binary."""

    def __init__(self, binary: bytes) -> None:
        self.binary = binary
        phoff = struct.unpack_from("<Q", binary, 0x20)[0]
        size, count = struct.unpack_from("<HH", binary, 0x36)
        self.loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        for i in range(count):
            kind, _flags, offset, vaddr, _p, filesz = struct.unpack_from(
                "<IIQQQQ", binary, phoff + i * size
            )
            if kind == 1:
                self.loads.append((vaddr, offset, filesz))

    def vaddr(self, offset: int) -> int:
        for vaddr, start, size in self.loads:
            if start <= offset < start + size:
                return vaddr + offset - start
        return -1

    def offset(self, vaddr: int) -> int:
        for start, offset, size in self.loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        return -1


def _go_names(elf: Elf) -> dict[int, tuple[str, bytes]]:
    """Go ``abi.Name`` blobs of tagged struct fields: address -> (field name, tag).

    A blob is: flags byte (exported 1, has tag 2, embedded 8), varint length, the name, varint
    tag length, the tag. Walk back from every ``json:"`` that starts a tag to the name.
    """
    binary = elf.binary
    names: dict[int, tuple[str, bytes]] = {}
    for match in re.finditer(rb'json:"', binary):
        start = match.start()
        size = binary[start - 1]
        if size >= 0x80 or size < 7:
            if binary[start - 2] < 0x80 or binary[start - 1] >= 0x80:
                continue
            size = (binary[start - 2] & 0x7F) | (binary[start - 1] << 7)
            varint = 2
        else:
            varint = 1
        tag = binary[start : start + size]
        if not re.fullmatch(rb"[\x20-\x7e]*", tag) or not _JSON_TAG.match(tag):
            continue
        end = start - varint
        for length in range(1, 80):
            at = end - length
            if binary[at - 1] == length and binary[at - 2] & 0x03 == 0x03:
                candidate = binary[at:end]
                if re.fullmatch(rb"[A-Za-z_][A-Za-z0-9_]*", candidate):
                    names[elf.vaddr(at - 2)] = (candidate.decode(), tag)
                    break
    return names


def _name_at(binary: bytes, at: int) -> tuple[str, bytes]:
    """The Go ``abi.Name`` at file offset ``at``: (name, tag)."""
    flags = binary[at]
    size, pos = read_varint(binary, at + 1)
    name = binary[pos : pos + size].decode()
    pos += size
    tag = b""
    if flags & 0x02:
        size, pos = read_varint(binary, pos)
        tag = binary[pos : pos + size]
    return name, tag


def go_structs(binary: bytes) -> dict[tuple[str, str], list[GoField]]:
    """Named Go struct types with tagged fields: (package path, type name) -> fields.

    ``abi.StructField`` is (name pointer, type pointer, byte offset), 24 bytes, and a struct's
    fields are one array of them whose first has offset 0. Find the arrays whose first field
    has a tagged name, then the ``abi.StructType`` whose field slice points at each:
    ``abi.Type`` (48 bytes; tflag at +20, kind at +23, name offset at +40), package path
    pointer, the slice (ptr, len, cap), then for named types the ``abi.UncommonType`` (its
    package path name offset first). Name offsets count from the start of the type data, the
    start of the read-only segment.
    """
    elf = Elf(binary)
    names = _go_names(elf)
    types_base = elf.loads[1][0]
    words = np.frombuffer(binary[: len(binary) // 8 * 8], dtype="<u8")
    hits = np.nonzero(np.isin(words, np.array(sorted(names), dtype=np.uint64)))[0]
    starts = {elf.vaddr(8 * int(i)) for i in hits if int(words[int(i) + 2]) == 0}
    headers = np.nonzero(np.isin(words, np.array(sorted(starts), dtype=np.uint64)))[0]
    structs: dict[tuple[str, str], list[GoField]] = {}
    for index in headers:
        j = int(index)
        count = int(words[j + 1])
        if count != int(words[j + 2]) or not 0 < count < 500:
            continue
        type_at = 8 * j - 56
        tflag, kind = binary[type_at + 20], binary[type_at + 23] & 0x1F
        if kind != _KIND_STRUCT or not tflag & 0x01:  # only named structs (uncommon type)
            continue
        name_off = struct.unpack_from("<i", binary, type_at + 40)[0]
        type_name = _name_at(binary, elf.offset(types_base + name_off))[0]
        pkg_off = struct.unpack_from("<i", binary, type_at + 80)[0]
        pkg_path = _name_at(binary, elf.offset(types_base + pkg_off))[0]
        fields: list[GoField] = []
        array = elf.offset(int(words[j]))
        for k in range(count):
            name_ptr, type_ptr, _offset = struct.unpack_from("<QQQ", binary, array + 24 * k)
            go_name, tag = _name_at(binary, elf.offset(name_ptr))
            json_tag = _JSON_TAG.search(tag)
            proto_tag = _PROTO_TAG.search(tag)
            json_opts = json_tag.group(1).decode().split(",") if json_tag else [go_name]
            number, proto_name = 0, ""
            if proto_tag is not None:
                proto = proto_tag.group(1).decode().split(",")
                number = int(proto[1])
                proto_name = next((p[5:] for p in proto if p.startswith("name=")), "")
            field_kind = binary[elf.offset(type_ptr) + 23] & 0x1F
            omitempty = "omitempty" in json_opts[1:]
            inline = "inline" in json_opts[1:]
            fields.append(
                GoField(go_name, json_opts[0], omitempty, number, proto_name, field_kind, inline)
            )
        structs[pkg_path, type_name.rsplit(".", 1)[-1]] = fields
    return structs


#: Proto package (short form) -> Go package path; the rest are k8s.io/api/<group>/<version>.
_GO_PACKAGES = {
    "meta.v1": "k8s.io/apimachinery/pkg/apis/meta/v1",
    "runtime": "k8s.io/apimachinery/pkg/runtime",
    "intstr": "k8s.io/apimachinery/pkg/util/intstr",
    "resource": "k8s.io/apimachinery/pkg/api/resource",
}


def go_struct(
    message: ProtoMessage, structs: dict[tuple[str, str], list[GoField]]
) -> list[GoField]:
    """The Go struct a message was generated from; its protobuf tags must be the message's."""
    package, _, name = message.name.rpartition(".")
    go_package = _GO_PACKAGES.get(package, "k8s.io/api/" + package.replace(".", "/"))
    fields = structs.get((go_package, name))
    if fields is None:
        raise SystemExit(f"{message.name}: Go struct {go_package}.{name} not found")
    want = {(f.number, f.name, f.go_name) for f in message.fields}
    # An embedded struct's tag has no name= (EphemeralContainer's EphemeralContainerCommon).
    names = {f.number: f.name for f in message.fields}
    have = {(f.number, f.proto_name or names.get(f.number), f.go_name) for f in fields if f.number}
    if want != have:
        raise SystemExit(f"{message.name}: Go struct fields differ: {sorted(want ^ have)}")
    return fields


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else shutil.which("kubectl")
    if not path:
        sys.exit("kubectl not found")
    binary = Path(path).read_bytes()
    messages = descriptors(binary)
    structs = go_structs(binary)

    out: dict[str, list[list[Any]]] = {}
    todo = [message for _, _, message in ROOTS]
    while todo:
        name = todo.pop()
        if name in out or name in SPECIAL:
            continue
        message = messages[name]
        go = go_struct(message, structs)
        by_number = {f.number: f for f in go if f.number}
        rows: list[list[Any]] = []
        for f in sorted(message.fields, key=lambda f: f.number):
            spec = f.type
            target = messages.get(f.type)
            is_map = target is not None and target.map_entry
            if is_map:
                assert target is not None
                value = next(v for v in target.fields if v.number == 2)
                spec = f"map[string]{value.type}"
                if value.type not in _SCALARS.values():
                    todo.append(value.type)
            elif f.type not in _SCALARS.values():
                todo.append(f.type)
            if f.repeated and not is_map:
                spec = "[]" + spec
            field = by_number[f.number]
            pointer = field.kind == _KIND_PTR
            expect_pointer = f.nullable and not f.repeated and not is_map and f.type != "bytes"
            if pointer != expect_pointer:
                raise SystemExit(f"{name}.{f.name}: nullable={f.nullable}, Go kind {field.kind}")
            if field.inline:
                mode = "i"  # an embedded struct: its fields are the parent's in JSON
            elif pointer:
                mode = "p"
            elif f.type in _SCALARS.values() or f.repeated or is_map:
                mode = "o" if field.omitempty else "a"
            else:
                mode = "a"  # a struct: encoding/json's omitempty never drops it
            rows.append([f.number, field.json_name, spec, mode])
        out[name] = rows

    kinds = {f"{api_version}/{kind}": message for api_version, kind, message in ROOTS}
    lines = ["{", '"generator": "tools/gen_protobuf_schema.py",']
    lines.append(f'"kinds": {json.dumps(kinds)},')
    lines.append('"messages": {')
    body = [f"{json.dumps(name)}: {json.dumps(rows)}" for name, rows in sorted(out.items())]
    lines.append(",\n".join(body))
    lines.append("}}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(out)} messages to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
