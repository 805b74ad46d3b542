"""Versioned SQL migrations of the SQL service's answer memory (``NNNN_name.sql``),
applied at start."""
