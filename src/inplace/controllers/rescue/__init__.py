"""Make room for pending pods by shrinking over-provisioned running pods in place.

* :mod:`.model` — the pure donor choice (which pods, on which node, by how much) and the
  growth back;
* :mod:`.usage` — recent peak usage per container, from ``metrics.k8s.io`` readings;
* :mod:`.view` — API objects read as the model's values, decisions written as
  ``pods/resize`` patches.
"""
