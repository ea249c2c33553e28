//go:build tools

// Package crictl pins crictl, the CRI client a node's operator uses to look at containerd.
package crictl

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
