"""The API server's registry: what each kind is and how a write to it is served.

Kinds and their strategies (defaults, validation, which fields a write may change, how a kind
prints), the resize a ``pods/resize`` write prepares, field managers and server-side apply,
patches, protobuf and OpenAPI, structural schemas and CRDs, CEL, Pod Security. Only the API
server (:mod:`inplace.apiserver`) and the command line use it; every component reads objects
through the shared model in :mod:`inplace.api`.
"""
