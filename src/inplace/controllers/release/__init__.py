"""The in-place release: completing, on a real cluster, a resources-only change the
operator's webhook held from rolling out (:mod:`.model`, :mod:`.controller`)."""
