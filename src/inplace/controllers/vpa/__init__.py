"""The vertical pod autoscaler's recommender and updater decisions (pure; no I/O).

Public surface:

* :class:`Recommender` — usage samples and OOMs in, ``status.recommendation`` out
  (:mod:`.recommender`, built on :mod:`.histogram`, :mod:`.model`, :mod:`.recommend`);
* :mod:`.checkpoint` — ``VerticalPodAutoscalerCheckpoint`` objects to save and restore it;
* :func:`decide` — the updater's decision for each pod of a VPA (:mod:`.updater`);
* :mod:`.policy` — a VPA's policy, capping and limits in proportion;
* :class:`RecommenderSettings`, :class:`UpdaterSettings`, :data:`VARIANTS` (:mod:`.settings`).

The controller manager wires these to the API (informers, ``pods/resize``, evictions,
``status`` writes); ``inplace replay`` runs them over a usage trace (:mod:`.simulation`).
"""

from .checkpoint import checkpoint_objects, load_checkpoints
from .recommender import ContainerKey, Recommender, VpaKey, WallClock
from .settings import VARIANTS, RecommenderSettings, UpdaterSettings, variant
from .updater import Action, Decision, UpdaterMemory, decide

__all__ = [
    "VARIANTS",
    "Action",
    "ContainerKey",
    "Decision",
    "Recommender",
    "RecommenderSettings",
    "UpdaterMemory",
    "UpdaterSettings",
    "VpaKey",
    "WallClock",
    "checkpoint_objects",
    "decide",
    "load_checkpoints",
    "variant",
]
