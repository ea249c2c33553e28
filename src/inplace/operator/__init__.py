"""``inplace operator``: the in-place rule, the pod resizing and its progress report on a real
cluster, beside its real controllers (:mod:`.main`): an admission webhook that holds a
resources-only change from rolling out (:mod:`.admission`, :mod:`.webhook`, :mod:`.certs`)
and the controllers that then carry it out in place."""
