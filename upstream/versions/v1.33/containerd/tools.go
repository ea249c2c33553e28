//go:build tools

// Package containerd pins containerd 2.1, the line containerd's RELEASES.md pairs with
// Kubernetes 1.33: its main packages (containerd, its runc shim, ctr), so `go mod tidy` keeps them.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
