"""Admission webhooks: MutatingWebhookConfiguration and ValidatingWebhookConfiguration.

``matching`` decides which webhooks a request calls (pure), ``review`` builds the
AdmissionReview and reads the answer with upstream's error messages (pure), ``client``
finds and calls a webhook over TLS, ``dispatch`` runs them in upstream's order with their
failure, reinvocation and dry-run rules. REST (:mod:`inplace.apiserver.rest`) awaits
:class:`WebhookAdmission` on every create, update and delete a client makes, and the
streaming subresources on a ``CONNECT``.
"""

from inplace.apiserver.webhooks.dispatch import (
    WebhookAdmission,
    connect_request,
    subresource_create,
)

__all__ = ["WebhookAdmission", "connect_request", "subresource_create"]
