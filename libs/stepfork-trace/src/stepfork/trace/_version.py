"""The one Stepfork version, shared by every distribution (scripts/bump_version.py keeps them equal)."""

__version__ = "0.2.0"
