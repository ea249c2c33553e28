"""Node agent: runs pods as real processes in real cgroups and resizes them in place."""
