"""Compiler passes, each a function Graph -> Graph or Graph -> plan (see ../pipeline.py)."""
