"""Reading input files with one-line errors, and writing result files atomically."""
