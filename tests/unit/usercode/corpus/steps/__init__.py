"""Helpers of the corpus's traced step, in a package of their own: the checker follows the import."""
