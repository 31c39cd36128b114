"""Cold start: `codeask search` and `codeask serve` as new processes, torch vs the default.

One index (this checkout's `indexer/` folder, embedded store) serves both embedder
backends (one model, one vector space). Each round starts, per backend, a fresh
`codeask search` process (wall time to exit) and a fresh `codeask serve` (wall time until
/healthz answers; serve loads its models before it opens the port). Backends alternate
within a round so load drifts hit both alike. Reports medians and the ratio against torch.

Run: .venv/bin/python bench/bench_cold_start.py [--rounds 7] [--backends torch,onnx-int8]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODEASK = str(Path(sys.executable).parent / "codeask")
QUERY = "where does the worker renew its job lease?"


def _env(data: Path, backend: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CODEASK_DATA_DIR": str(data),
        "CODEASK_EMBED_BACKEND": backend,
        "HF_HUB_OFFLINE": "1",
        **extra,
    }


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def search_seconds(data: Path, backend: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [CODEASK, "search", QUERY, "--k", "5"],
        env=_env(data, backend),
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def serve_seconds(data: Path, backend: str) -> float:
    port = _port()
    env = _env(data, backend, CODEASK_HOST="127.0.0.1", CODEASK_PORT=str(port))
    env["CODEASK_RECONCILE_SECONDS"] = "0"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [CODEASK, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    return time.perf_counter() - started
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"codeask serve exited with {proc.returncode}") from None
                time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backends", default="torch,onnx-int8")
    args = parser.parse_args()
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory(prefix="codeask-cold-") as tmp:
        data = Path(tmp) / "data"
        subprocess.run(
            [CODEASK, "db", "upgrade"],
            env=_env(data, backends[-1]),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [CODEASK, "index", str(ROOT / "indexer"), "--repo", "codeask/indexer"],
            env=_env(data, backends[-1]),
            check=True,
            capture_output=True,
        )
        times: dict[tuple[str, str], list[float]] = {}
        for n in range(args.rounds):
            order = backends if n % 2 == 0 else backends[::-1]
            for backend in order:
                times.setdefault(("search", backend), []).append(search_seconds(data, backend))
                times.setdefault(("serve", backend), []).append(serve_seconds(data, backend))
    base = backends[0]
    print(f"load average at the end: {os.getloadavg()[0]:.1f}; {args.rounds} rounds")
    print("| command | backend | median s | min s | max s | vs " + base + " |")
    print("| --- | --- | --- | --- | --- | --- |")
    for what in ("search", "serve"):
        ref = statistics.median(times[(what, base)])
        for backend in backends:
            runs = times[(what, backend)]
            med = statistics.median(runs)
            print(
                f"| `codeask {what}` | {backend} | {med:.2f} | {min(runs):.2f} | "
                f"{max(runs):.2f} | {ref / med:.2f}x |"
            )


if __name__ == "__main__":
    main()
