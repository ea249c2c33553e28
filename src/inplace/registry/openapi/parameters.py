"""The query and path parameters of operations, with upstream's names and descriptions."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

# --- parameters ---------------------------------------------------------------------------


def param(name: str, description: str, type_: str, where: str = "query") -> dict[str, Any]:
    out: dict[str, Any] = {
        "in": where,
        "name": name,
        "schema": {"type": type_, "uniqueItems": True},
    }
    if description:
        out["description"] = description
    if where == "path":
        out["required"] = True
    return out


PARAMETERS: Final = {
    "allowWatchBookmarks": param(
        "allowWatchBookmarks",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not '
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's "
        "discretion. Clients should not assume bookmarks are returned at any specific interval, "
        "nor may they assume the server will send any BOOKMARK event during a session. If this "
        "is not a watch, this field is ignored.",
        "boolean",
    ),
    "continue": param(
        "continue",
        "The continue option should be set when retrieving more results from the server. Since "
        "this value is server defined, clients may only use the continue value from a previous "
        "query result with identical query parameters (except for the value of continue) and "
        "the server may reject a continue value it does not recognize. If the specified "
        "continue value is no longer valid whether due to expiration (generally five to fifteen "
        "minutes) or a configuration change on the server, the server will respond with a 410 "
        "ResourceExpired error together with a continue token.",
        "string",
    ),
    "fieldSelector": param(
        "fieldSelector",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything.",
        "string",
    ),
    "labelSelector": param(
        "labelSelector",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything.",
        "string",
    ),
    "limit": param(
        "limit",
        "limit is a maximum number of responses to return for a list call. If more items "
        "exist, the server will set the `continue` field on the list metadata to a value that "
        "can be used with the same initial query to retrieve the next set of results. This "
        "field is not supported if watch is true.",
        "integer",
    ),
    "pretty": param(
        "pretty",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
        "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
        "string",
    ),
    "resourceVersion": param(
        "resourceVersion",
        "resourceVersion sets a constraint on what resource versions a request may be served "
        "from. See https://kubernetes.io/docs/reference/using-api/api-concepts/"
        "#resource-versions for details.\n\nDefaults to unset",
        "string",
    ),
    "resourceVersionMatch": param(
        "resourceVersionMatch",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is "
        "highly recommended that resourceVersionMatch be set for list calls where "
        "resourceVersion is set See https://kubernetes.io/docs/reference/using-api/"
        "api-concepts/#resource-versions for details.\n\nDefaults to unset",
        "string",
    ),
    "timeoutSeconds": param(
        "timeoutSeconds",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of "
        "any activity or inactivity.",
        "integer",
    ),
    "watch": param(
        "watch",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications. Specify resourceVersion.",
        "boolean",
    ),
    "dryRun": param(
        "dryRun",
        "When present, indicates that modifications should not be persisted. An invalid or "
        "unrecognized dryRun directive will result in an error response and no further "
        "processing of the request. Valid values are: - All: all dry run stages will be "
        "processed",
        "string",
    ),
    "fieldManager": param(
        "fieldManager",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
        "string",
    ),
    "fieldManagerPatch": param(
        "fieldManager",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes. The value must be less than or 128 characters long, and only contain "
        "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This "
        "field is required for apply requests (application/apply-patch) but optional for "
        "non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).",
        "string",
    ),
    "fieldValidation": param(
        "fieldValidation",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: "
        "This will ignore any unknown fields that are silently dropped from the object, and "
        "will ignore all but the last duplicate field that the decoder encounters. This is the "
        "default behavior prior to v1.23. - Warn: This will send a warning via the standard "
        "warning response header for each unknown field that is dropped from the object, and "
        "for each duplicate field that is encountered. The request will still succeed if there "
        "are no other errors, and will only persist the last of any duplicate fields. This is "
        "the default in v1.23+ - Strict: This will fail the request with a BadRequest error if "
        "any unknown fields would be dropped from the object, or if any duplicate fields are "
        "present. The error returned from the server will contain all unknown and duplicate "
        "fields encountered.",
        "string",
    ),
    "force": param(
        "force",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
        "boolean",
    ),
    "gracePeriodSeconds": param(
        "gracePeriodSeconds",
        "The duration in seconds before the object should be deleted. Value must be "
        "non-negative integer. The value zero indicates delete immediately. If this value is "
        "nil, the default grace period for the specified type will be used. Defaults to a per "
        "object value if not specified. zero means delete immediately.",
        "integer",
    ),
    "orphanDependents": param(
        "orphanDependents",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. "
        'Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will '
        "be added to/removed from the object's finalizers list. Either this field or "
        "PropagationPolicy may be set, but not both.",
        "boolean",
    ),
    "propagationPolicy": param(
        "propagationPolicy",
        "Whether and how garbage collection will be performed. Either this field or "
        "OrphanDependents may be set, but not both. The default policy is decided by the "
        "existing finalizer set in the metadata.finalizers and the resource-specific default "
        "policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow "
        "the garbage collector to delete the dependents in the background; 'Foreground' - a "
        "cascading policy that deletes all dependents in the foreground.",
        "string",
    ),
    "namespace": param(
        "namespace", "object name and auth scope, such as for teams and projects", "string", "path"
    ),
    "container": param(
        "container",
        "The container for which to stream logs. Defaults to only container if there is one "
        "container in the pod.",
        "string",
    ),
    "follow": param("follow", "Follow the log stream of the pod. Defaults to false.", "boolean"),
    "limitBytes": param(
        "limitBytes",
        "If set, the number of bytes to read from the server before terminating the log "
        "output. This may not display a complete final line of logging, and may return "
        "slightly more or slightly less than the specified limit.",
        "integer",
    ),
    "previous": param(
        "previous", "Return previous terminated container logs. Defaults to false.", "boolean"
    ),
    "sinceSeconds": param(
        "sinceSeconds",
        "A relative time in seconds before the current time from which to show logs. If this "
        "value precedes the time a pod was started, only logs since the pod start will be "
        "returned. If this value is in the future, no logs will be returned. Only one of "
        "sinceSeconds or sinceTime may be specified.",
        "integer",
    ),
    "tailLines": param(
        "tailLines",
        "If set, the number of lines from the end of the logs to show. If not specified, logs "
        "are shown from the creation of the container or sinceSeconds or sinceTime",
        "integer",
    ),
    "timestamps": param(
        "timestamps",
        "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log "
        "output. Defaults to false.",
        "boolean",
    ),
}

LIST_PARAMS: Final = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "watch",
)
WRITE_PARAMS: Final = ("dryRun", "fieldManager", "fieldValidation")
PATCH_PARAMS: Final = ("dryRun", "fieldManagerPatch", "fieldValidation", "force")
DELETE_PARAMS: Final = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
DELETE_COLLECTION_PARAMS: Final = (
    *DELETE_PARAMS,
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
)
LOG_PARAMS: Final = (
    "container",
    "follow",
    "limitBytes",
    "previous",
    "sinceSeconds",
    "tailLines",
    "timestamps",
)
PATCH_TYPES: Final = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def parameters_named(names: Iterable[str]) -> list[dict[str, Any]]:
    return [copy.deepcopy(PARAMETERS[n]) for n in names]


def name_param(kind_name: str) -> dict[str, Any]:
    return param("name", f"name of the {kind_name}", "string", "path")
