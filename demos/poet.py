"""Worker methods ``poet.*`` (the page's "A model" card): the dispatcher finds a method's module
by its prefix, and the Quantum Poet's methods live in ``demos/poet_session.py`` (beside its
model, demos/poet_model.py, and its command line, demos/quantum_poet.py), so this module only
imports them, which registers them."""

from demos import poet_session  # noqa: F401  (registers poet.* at import)
