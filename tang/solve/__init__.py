"""Optimisers over any number type (placeholder: the solvers issue fills this package)."""
