"""Benchmarks that start or load several services at once (``tandem bench cost``,
``router``, ``retrieval``, ``ingest-memory``), kept out of the service packages so that no
service package imports another's internals."""
