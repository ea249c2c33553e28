"""CustomResourceDefinitions (apiextensions.k8s.io/v1): creating one serves its kind.

`model.py` is the CRD as data (validation with upstream's messages, defaults, conditions,
names); `columns.py` the printer columns' JSONPath Table; `kinds.py` the CRD kind itself and
the kinds (and custom resource strategy) a CRD serves; `registrar.py` the I/O: the server's
registry follows the stored CRDs, their status is kept, and a deleted CRD's instances are
deleted before it goes. The schema machinery a custom resource is checked, defaulted and
published with is `inplace.registry.schema` (`custom.py`, `crds.py`, `values.py`).
"""

from inplace.apiserver.crds.kinds import CRD_KIND, kinds_from_crd
from inplace.apiserver.crds.registrar import CustomResourceDefinitions

__all__ = ["CRD_KIND", "CustomResourceDefinitions", "kinds_from_crd"]
