"""Rendering helpers: turn library results into rows, lines and JSON for the commands."""
