"""The default run path never imports torch: index, search, ask, worker and serve (answering a
Slack question) run in processes that refuse torch, sentence-transformers and transformers
(tests/torch_guard/sitecustomize.py), on the ONNX exports that set-up made. An index built
by the torch default of earlier releases keeps working on the new default."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from tests import slack_world
from tests.conftest import git
from tests.fake_llm import Reply
from tests.freshness_env import REPO, configure, github_world
from tests.slack_world import (
    PRIVATE_PATH,
    SIGNING_SECRET,
    World,
    direct_message,
    event_callback,
    sign,
)
from tests.test_indexing import SHOP
from tests.test_slack_app import PRIVATE_QUESTION, _final, _text

GUARD = Path(__file__).parent / "torch_guard"
CODEASK = str(Path(sys.executable).parent / "codeask")
indexed = slack_world.indexed_fixture
world = slack_world.world_fixture


def guarded_env(log: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a process that refuses torch; ``log`` collects any attempt."""
    path = os.pathsep.join(p for p in (str(GUARD), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "CODEASK_TORCH_GUARD_LOG": str(log),
        "CODEASK_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": "1",
        **extra,
    }


def codeask(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEASK, *args], capture_output=True, text=True, timeout=600, env=env, check=False
    )


def attempts(log: Path) -> str:
    return log.read_text() if log.exists() else ""


def test_the_guard_refuses_torch(tmp_path: Path) -> None:
    log = tmp_path / "guard.log"
    probe = subprocess.run(
        [sys.executable, "-c", "import sentence_transformers"],
        capture_output=True,
        text=True,
        env=guarded_env(log, tmp_path),
        check=False,
    )
    assert probe.returncode != 0 and "refused on the run path" in probe.stderr
    assert attempts(log).startswith("import sentence_transformers")


def test_index_search_and_ask_never_import_torch(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_repo(SHOP)
    log = tmp_path / "guard.log"
    env = guarded_env(log, tmp_path / "data")
    indexed = codeask(["index", str(root), "--repo", "acme/shop"], env)
    assert indexed.returncode == 0, indexed.stderr
    assert "4 files" in indexed.stderr
    found = codeask(["search", "TokenBucket allow", "--json", "--k", "3"], env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["path"] == "shop/limits.py"
    answer = codeask(["ask", "where do we send the receipt email?"], env)
    assert answer.returncode == 0, answer.stderr
    assert "shop/mail.py:1-3" in answer.stdout
    assert attempts(log) == ""


def test_an_index_of_the_torch_default_keeps_working_on_the_onnx_default(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    """Same model, same vector space: the old vectors serve questions at once, and the next
    run embeds every file again, once, saying why."""
    root = make_repo(SHOP)
    data = tmp_path / "data"
    old = {**os.environ, "CODEASK_DATA_DIR": str(data), "CODEASK_EMBED_BACKEND": "torch"}
    before = codeask(["index", str(root), "--repo", "acme/shop"], old)
    assert before.returncode == 0, before.stderr
    (root / "shop" / "refunds.py").write_text(
        "def refund_order(order):\n    return order.total * -1\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "refunds")
    log = tmp_path / "guard.log"
    env = guarded_env(log, data)
    found = codeask(["search", "TokenBucket allow", "--json", "--k", "3"], env)
    assert json.loads(found.stdout)[0]["path"] == "shop/limits.py"  # torch vectors, onnx query
    after = codeask(["index", str(root), "--repo", "acme/shop"], env)
    assert after.returncode == 0, after.stderr
    assert "5 changed" in after.stderr and "(7 embedded)" in after.stderr, after.stderr
    assert (
        "re-indexed in full: the embedder changed (all-MiniLM-L6-v2 → "
        "all-MiniLM-L6-v2@onnx-int8): every file is embedded again, once"
    ) in after.stderr
    again = codeask(["index", str(root), "--repo", "acme/shop"], env)
    assert "0 changed" in again.stderr and "re-indexed" not in again.stderr, again.stderr
    new = codeask(["search", "refund an order", "--json", "--k", "3"], env)
    assert json.loads(new.stdout)[0]["path"] == "shop/refunds.py"
    assert attempts(log) == ""


def test_a_missing_export_without_torch_says_how_to_make_one(
    make_repo: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_repo(SHOP)
    log = tmp_path / "guard.log"
    env = guarded_env(log, tmp_path / "data", CODEASK_ONNX_DIR=str(tmp_path / "no-exports"))
    result = codeask(["index", str(root), "--repo", "acme/shop"], env)
    assert result.returncode != 0
    assert "No ONNX export of 'all-MiniLM-L6-v2'" in result.stderr
    assert "codeask models export" in result.stderr and "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(name="guarded_serve")
def guarded_serve_fixture(world: World, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``codeask serve`` on the world's database and index, in a process refusing torch."""
    port = _free_port()
    services = world.services
    log = tmp_path / "guard.log"
    env = guarded_env(
        log,
        Path(str(services.indexer.data_dir)),
        CODEASK_HOST="127.0.0.1",
        CODEASK_PORT=str(port),
        CODEASK_DATABASE_URL=services.indexer.database_url,
        CODEASK_GITHUB_API_URL=services.acl.github_api_url,
        CODEASK_GITHUB_TOKEN=services.acl.github_token or "",
        CODEASK_SLACK_BOT_TOKEN=services.bot.slack_bot_token or "",
        CODEASK_SLACK_SIGNING_SECRET=SIGNING_SECRET,
        CODEASK_SLACK_API_URL=services.bot.slack_api_url,
        CODEASK_LLM_MODEL=services.bot.llm_model,
        CODEASK_LLM_API_BASE=services.bot.llm_api_base,
        CODEASK_LLM_RETRIES="0",
        CODEASK_NOT_FOUND_THRESHOLD="-1",
        CODEASK_RECONCILE_SECONDS="0",
    )
    out = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([CODEASK, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        out.close()


async def test_serve_answers_a_slack_question_without_torch(
    world: World, guarded_serve: tuple[str, Path], tmp_path: Path
) -> None:
    url, log = guarded_serve
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            try:
                async with http.get(f"{url}/healthz") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        else:
            raise AssertionError((tmp_path / "serve.log").read_text())
        world.llm.script(Reply("The master key is rotated by re-wrapping data keys [1]."))
        body = json.dumps(
            event_callback(direct_message(PRIVATE_QUESTION, "1700.200100"), "EvTorchFree")
        )
        headers = {"Content-Type": "application/json", **sign(body)}
        async with http.post(f"{url}/slack/events", data=body.encode(), headers=headers) as r:
            assert r.status == 200
    final = await world.slack.wait_for(_final)
    assert "re-wrapping data keys" in _text(final) and PRIVATE_PATH in _text(final)
    assert attempts(log) == ""


def test_the_worker_indexes_a_registered_repository_without_torch(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = {"ledger/core.py": "def post_ledger_entry(account: str, cents: int) -> None:\n"}
    with github_world(tmp_path, seed) as world:
        configure(monkeypatch, world, f"sqlite:///{data_dir / 'codeask.meta.db'}")
        log = tmp_path / "guard.log"
        env = guarded_env(log, data_dir)
        added = codeask(["repo", "add", REPO], env)
        assert added.returncode == 0, added.stderr
        worked = codeask(["worker", "--once"], env)
        assert worked.returncode == 0, worked.stderr
        assert "1 job(s) processed" in worked.stderr
        found = codeask(["search", "post ledger entry", "--json", "--k", "1"], env)
        assert json.loads(found.stdout)[0]["path"] == "ledger/core.py", found.stderr
        assert attempts(log) == ""
