"""Generate src/inplace/registry/smd_schema.json from upstream's structured-merge-diff schema.

Usage: python tools/gen_smd_schema.py path/to/internal.go

The input is kubernetes/client-go's ``applyconfigurations/internal/internal.go`` (generated
by applyconfiguration-gen from upstream's OpenAPI with kube-openapi's ``schemaconv``, the
same conversion the API server's field manager uses). It embeds the schema as YAML: every
named type, each a ``scalar``, a ``list`` (``elementRelationship`` atomic or associative,
``keys`` for a map-list) or a ``map`` (``fields``, ``elementType``, ``elementRelationship``
atomic or separable), and per field a ``default`` where the Go field is not a pointer.

What is written keeps only what field management needs, compactly: a type is ``"s"`` (any
scalar: server-side apply never looks inside one), ``{"list": [elem, rel, keys]}``,
``{"map": [fields, elem, atomic, defaults]}``, or the name of another type. Only the stable
API versions (``v1``, ``v2``) and the apimachinery types are kept; ``__untyped_atomic_`` and
``__untyped_deduced_`` are upstream's free-form types and are kept by name.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "src/inplace/registry/smd_schema.json"
_STABLE = re.compile(r"^io\.k8s\.api\.[a-z0-9]+\.v\d+\.[A-Za-z0-9]+$")
_ALWAYS = ("io.k8s.apimachinery.", "__untyped_")


def compact(t: dict[str, Any]) -> Any:
    """One type (a named type's body or an inline type reference)."""
    if "namedType" in t:
        return t["namedType"]
    if "list" in t and "scalar" not in t:
        lst = t["list"]
        rel = lst.get("elementRelationship", "atomic")
        return {"list": [compact(lst["elementType"]), rel, lst.get("keys", [])]}
    if "map" in t and "scalar" not in t:
        m = t["map"]
        fields = {f["name"]: compact(f["type"]) for f in m.get("fields", [])}
        defaults = {f["name"]: f["default"] for f in m.get("fields", []) if "default" in f}
        elem = compact(m["elementType"]) if "elementType" in m else None
        atomic = m.get("elementRelationship") == "atomic"
        return {"map": [fields, elem, atomic, defaults]}
    if "scalar" in t and "map" not in t and "list" not in t:
        return "s"
    if "scalar" in t and "map" in t:  # an inline free-form type: upstream's two, spelt out
        separable = t["map"].get("elementRelationship") == "separable"
        return "__untyped_deduced_" if separable else "__untyped_atomic_"
    raise ValueError(f"unexpected type {t}")


#: Types the API server has and client-go's apply configurations do not (no one applies a
#: Scale through client-go), transcribed from upstream's OpenAPI (autoscaling/v1 Scale).
_EXTRA: dict[str, Any] = {
    "io.k8s.api.autoscaling.v1.Scale": {
        "map": [
            {
                "apiVersion": "s",
                "kind": "s",
                "metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "spec": "io.k8s.api.autoscaling.v1.ScaleSpec",
                "status": "io.k8s.api.autoscaling.v1.ScaleStatus",
            },
            None,
            False,
            {"metadata": {}, "spec": {}, "status": {}},
        ]
    },
    "io.k8s.api.autoscaling.v1.ScaleSpec": {"map": [{"replicas": "s"}, None, False, {}]},
    "io.k8s.api.autoscaling.v1.ScaleStatus": {
        "map": [{"replicas": "s", "selector": "s"}, None, False, {"replicas": 0}]
    },
}


def references(t: Any) -> list[str]:
    """The named types a compact type refers to."""
    if isinstance(t, str):
        return [] if t == "s" or t.startswith("__untyped_") else [t]
    if "list" in t:
        return references(t["list"][0])
    fields, elem, _, _ = t["map"]
    found = [n for f in fields.values() for n in references(f)]
    return found + (references(elem) if elem is not None else [])


def main() -> None:
    source = Path(sys.argv[1]).read_text()
    body = source.split("typed.YAMLObject(`", 1)[1].rsplit("`)", 1)[0]
    types = yaml.safe_load(body)["types"]
    every = {t["name"]: compact(t) for t in types if not t["name"].startswith("__untyped_")}
    every.update(_EXTRA)
    # The stable versions and apimachinery, and whatever pre-release type they refer to.
    wanted = [n for n in every if _STABLE.match(n) or n.startswith(_ALWAYS)]
    out: dict[str, Any] = {}
    while wanted:
        name = wanted.pop()
        if name in out or name not in every:
            continue
        out[name] = every[name]
        wanted.extend(references(every[name]))
    OUT.write_text(
        json.dumps(
            {"generator": "tools/gen_smd_schema.py", "types": out},
            separators=(",", ":"),
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {len(out)} types to {OUT}")


if __name__ == "__main__":
    main()
