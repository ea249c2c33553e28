"""The `inplace` command."""
