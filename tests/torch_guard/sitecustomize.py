"""Put on PYTHONPATH by tests/test_torch_free.py: the process refuses torch and the libraries
built on it, and writes every attempt (with where it came from) to $CODEASK_TORCH_GUARD_LOG,
so an import that its caller catches is still seen."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

REFUSED = {"torch", "sentence_transformers", "transformers", "triton", "torchvision"}


class RefuseTorch:
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] not in REFUSED:
            return None
        with open(os.environ["CODEASK_TORCH_GUARD_LOG"], "a") as log:
            log.write(f"import {name}\n{''.join(traceback.format_stack(limit=15))}\n")
        raise ImportError(f"{name} is refused on the run path")


if os.environ.get("CODEASK_TORCH_GUARD_LOG"):
    sys.meta_path.insert(0, RefuseTorch())
