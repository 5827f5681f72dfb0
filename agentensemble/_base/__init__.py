"""The lowest layer: private helpers every other layer may use (threads, the background loop,
lean dataclasses, deferred values, lazy exports, validation and display helpers, the
credential rules the redaction policy applies).

Nothing here imports from a layer above; each module has one job. See ``old_paths.py`` for the
paths these modules had before they were grouped here.
"""
