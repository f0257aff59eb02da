"""Reports: the conformance matrix, performance tables and figures, benchmark results."""
