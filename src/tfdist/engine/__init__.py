"""The engine: parsing, metadata, analysis, scheduled edits, reports.

It knows nothing about training patterns or Horovod: a
:class:`~tfdist.engine.pipeline.Pipeline` is handed its rules
(``tfdist.rules``) and its backend (``tfdist.backends``), and imports
neither; ``tfdist.assembly`` puts them together.
"""
