"""The lowest layer: private helpers every other layer may use (threads, the background loop,
lean dataclasses, deferred values, lazy exports, validation and display helpers, the
credential rules the redaction policy applies, an attachment's source checks).

Nothing here imports from a layer above (``tests/test_architecture.py`` checks it, lazy imports
counted); each module has one job. See ``old_paths.py`` for the paths these modules had before
they were grouped here.
"""
