"""Worker methods ``poet.*`` (the page's "A model" card): the dispatcher finds a method's module
by its prefix, and the Quantum Poet lives in ``demos/quantum_poet.py`` (the name its command
line runs under), so this module only imports it, which registers them."""

from demos import quantum_poet  # noqa: F401  (registers poet.* at import)
