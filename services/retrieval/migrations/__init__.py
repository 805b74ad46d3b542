"""Versioned SQL migrations of the retrieval store (``NNNN_name.sql``), applied at start."""
