"""The upstream test bed: kube-apiserver, kube-controller-manager, kube-scheduler and etcd built
from their Go modules (:mod:`.build`), started on loopback with inplace's node agents as their
nodes (:mod:`.cluster`). Not part of the ``inplace`` package: ``scripts/upstream`` and
``tests/upstream`` use it."""
