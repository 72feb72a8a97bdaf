"""Dense linear algebra over any number type (placeholder: the solvers issue fills this)."""

from .errors import LinAlgError as LinAlgError
