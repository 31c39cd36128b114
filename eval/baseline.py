"""The committed retrieval baseline and the regression rule CI applies to it.

``eval/baseline.json`` holds the hybrid figures of a real run plus a ``note`` saying
why and when it was set. CI fails when a gated metric falls more than ``TOLERANCE``
below it. Re-baseline deliberately::

    codeask eval eval/golden/*.jsonl --json > /tmp/run.json
    python -m eval.baseline /tmp/run.json --note "chunker v2: smaller class chunks"
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from eval.goldens import REPO_ROOT

BASELINE_PATH = REPO_ROOT / "eval" / "baseline.json"
TOLERANCE = 0.03
GATED = ("recall@10", "mrr@10")


def regressions(
    current: Mapping[str, float],
    baseline: Mapping[str, float],
    tolerance: float = TOLERANCE,
    metrics: tuple[str, ...] = GATED,
) -> list[str]:
    """One message per gated metric that dropped by more than ``tolerance``."""
    out = []
    for metric in metrics:
        if metric not in baseline:
            continue
        now, then = float(current.get(metric, 0.0)), float(baseline[metric])
        if now < then - tolerance - 1e-9:
            out.append(f"{metric} fell from {then:.3f} to {now:.3f} (allowed: -{tolerance})")
    return out


def load_baseline(path: Path = BASELINE_PATH) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def baseline_from_run(run: Mapping[str, object], note: str) -> dict[str, object]:
    """The baseline document for one ``codeask eval --json`` run (not an ``--ablate`` one)."""
    if "runs" in run or "overall" not in run:
        raise ValueError("give the output of `codeask eval --json` without --ablate")
    return {
        "note": note,
        "updated": dt.date.today().isoformat(),
        "config": run["config"],
        "k": run["k"],
        "overall": run["overall"],
        "by_kind": run["by_kind"],
        "by_repo": run["by_repo"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.baseline", description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="output of `codeask eval --json`")
    ap.add_argument("--note", required=True, help="why the baseline moves")
    ap.add_argument("--out", type=Path, default=BASELINE_PATH)
    args = ap.parse_args(argv)
    doc = baseline_from_run(json.loads(args.run.read_text(encoding="utf-8")), args.note)
    args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
