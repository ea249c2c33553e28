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
  Strategic-merge tags come from `inplace.registry.patchmeta`. The VerticalPodAutoscaler is served
  with its CRD schema, named as kube-apiserver names CRD components (`io.k8s.autoscaling.v1.
  VerticalPodAutoscaler`).

Everything is deterministic: the same registry gives the same bytes and hashes on every start.
`openapi_v3_bytes` / `openapi_v3_index_bytes` cache the serialized documents per registry.

The package is cut along those lines: `components`, `parameters`, `operations` and `documents`
(the documents, their bytes and hashes, cached). `v2` converts them into the one Swagger 2.0
document of `/openapi/v2`, and `v2_protobuf` encodes that in gnostic's protobuf.
"""

from __future__ import annotations

from inplace.registry.openapi.documents import (
    document_keys,
    openapi_v3_bytes,
    openapi_v3_document,
    openapi_v3_document_for_path,
    openapi_v3_hash,
    openapi_v3_index,
    openapi_v3_index_bytes,
    serialize,
)

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
