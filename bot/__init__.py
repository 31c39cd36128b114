"""Chat adapters, the answer pipeline and the ``codeask`` command line."""
