"""Reliability campaign (issue 7): helper modules of this folder are importable (--import-mode=importlib)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
