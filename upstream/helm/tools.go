//go:build tools

// Package helm pins Helm's main package so `go mod tidy` keeps its dependencies.
package helm

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
