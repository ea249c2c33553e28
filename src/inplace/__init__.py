"""inplace: restart-free vertical scaling for Kubernetes pods."""

__version__ = "0.1.0"
