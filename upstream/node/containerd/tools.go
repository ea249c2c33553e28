//go:build tools

// Package containerd pins containerd's main packages (containerd, its runc shim, ctr) so `go mod
// tidy` keeps them. A module of its own: containerd requires newer k8s.io modules than the
// pinned Kubernetes.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
