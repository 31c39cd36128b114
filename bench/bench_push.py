"""Push → searchable latency through the real webhook endpoint and a real worker.

A bare git repository stands in for GitHub's git server and tests/fake_github.py for its
REST API. Each run changes 3 files, pushes, POSTs the signed ``push`` webhook to
``codeask serve``'s application, and times until a new identifier is returned by search.

    .venv/bin/python bench/bench_push.py [--runs 5] [--seed-files 40]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_github import FakeGitHub, FakeGitHubServer

REPO = "bench/shop"
SECRET = "bench-secret"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    done = subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, env=env)
    return done.stdout.decode().strip()


def module(i: int, tag: str) -> str:
    return (
        f"def handler_{i}_{tag}(order: dict) -> dict:\n"
        f'    """Order step {i}: validate, price and route the order ({tag})."""\n'
        f"    return {{**order, 'step': {i}}}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed-files", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="codeask-bench-push-"))
    work, bare = root / "work", root / "git" / f"{REPO}.git"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for i in range(args.seed_files):
        (work / f"shop/step_{i:03d}.py").parent.mkdir(parents=True, exist_ok=True)
        (work / f"shop/step_{i:03d}.py").write_text(module(i, "v0"))
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "seed")
    bare.parent.mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))

    fake = FakeGitHub()
    fake.add_repo(REPO, "private")
    with FakeGitHubServer(fake) as api:
        os.environ.update(
            CODEASK_DATA_DIR=str(root / "data"),
            CODEASK_GITHUB_API_URL=api.url,
            CODEASK_GITHUB_TOKEN=fake.token,
            CODEASK_GITHUB_WEBHOOK_SECRET=SECRET,
            CODEASK_GIT_CLONE_URL=str(root / "git" / "{full_name}.git"),
            CODEASK_ADMINS="cli:*",
            CODEASK_RECONCILE_SECONDS="0",
            CODEASK_WORKER_POLL_SECONDS="0.05",
            HF_HUB_OFFLINE="1",
        )
        latencies = asyncio.run(_bench(work, fake, args.runs))
    median = statistics.median(latencies)
    print(
        json.dumps({"runs": [round(x, 2) for x in latencies], "median_seconds": round(median, 2)})
    )


async def _bench(work: Path, fake: FakeGitHub, runs: int) -> list[float]:
    from bot.chat import Invoker, commands_for
    from bot.server import create_app
    from bot.services import Services
    from indexer.jobs import Worker, WorkerConfig
    from indexer.search import Searcher

    services = Services()
    cfg = services.indexer
    embedder = services.embedder
    result = commands_for(services).run(Invoker("cli", "bench"), f"repo add {REPO}")
    assert not result.error, result.text
    worker = Worker(services.engine, services.store, embedder, services.embedding_cache,
                    WorkerConfig.from_settings(cfg), token=services.git_token)  # fmt: skip
    worker.run(threading.Event(), once=True)  # the initial full index is not timed here
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()

    runner = web.AppRunner(create_app(services))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    searcher = Searcher(services.store, embedder)
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=base) as http:
        for run in range(1, runs + 1):
            before = git(work, "rev-parse", "HEAD")
            tag = f"r{run}"
            for i in (run, run + 7, run + 13):  # a 3-file change
                (work / f"shop/step_{i:03d}.py").write_text(module(i, tag))
            git(work, "commit", "-q", "-am", f"run {run}")
            git(work, "push", "-q", "origin", "main")
            after = git(work, "rev-parse", "HEAD")
            payload = {
                "ref": "refs/heads/main", "before": before, "after": after, "forced": False,
                "commits": [{"id": after}],
                "repository": {"id": fake.repos[REPO]["id"], "full_name": REPO},
            }  # fmt: skip
            body = json.dumps(payload).encode()
            sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": str(uuid.uuid4()),
                       "X-Hub-Signature-256": sig}  # fmt: skip
            started = time.perf_counter()
            response = await http.post("/github/webhook", content=body, headers=headers)
            response.raise_for_status()
            target = f"handler_{run + 13}_{tag}"
            while True:
                hits = await asyncio.to_thread(
                    searcher.search, target, frozenset({REPO}), 3, 50, ("bm25",)
                )
                if any(h.chunk.symbol == target for h in hits):
                    break
                await asyncio.sleep(0.05)
            latencies.append(time.perf_counter() - started)
            print(f"run {run}: {latencies[-1]:.2f} s", file=sys.stderr)
    stop.set()
    thread.join()
    await runner.cleanup()
    services.close()
    return latencies


if __name__ == "__main__":
    main()
