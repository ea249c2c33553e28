//go:build tools

// Package runc pins runc's main package so `go mod tidy` keeps it (built with cgo and the
// seccomp tag).
package runc

import (
	_ "github.com/opencontainers/runc"
)
