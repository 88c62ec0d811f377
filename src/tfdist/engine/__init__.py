"""The engine: parsing, metadata, analysis, scheduled edits, reports.

It knows nothing about training patterns or Horovod; rules (``tfdist.rules``)
and backends (``tfdist.backends``) plug into it.
"""
