"""The typed consumer runs (mypy --strict checks it in the test script)."""

from __future__ import annotations

import runpy
from pathlib import Path


def test_typing_consumer_runs() -> None:
    runpy.run_path(str(Path(__file__).with_name("typing_consumer.py")), run_name="__main__")
