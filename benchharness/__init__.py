"""benchharness: benchmark datacenter NICs on GPU clusters, for real."""

__version__ = "0.1.0"
