"""The Kubernetes HTTP API over the store, as real kubectl and client libraries expect it."""
