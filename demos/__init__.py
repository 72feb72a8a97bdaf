"""tang's demos: each module is a command-line program and a set of worker handlers.

The page talks to Python only through `demos.api.dispatch` (see demos/api.py): a demo
module registers its handlers with `@handler("<module>.<name>")` and is imported the first
time one of its methods is called.
"""
