"""The container image: what it runs exists in the CLI, and it runs offline as non-root."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
CHART_VALUES = ROOT / "helm" / "codeask" / "values.yaml"
CODEASK = Path(sys.executable).parent / "codeask"

# The commands the image and the chart run: serve (default CMD), worker, reconcile (CronJob).
IMAGE_COMMANDS = ("serve", "worker", "reconcile")


def _instructions(stage: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined; one stage if named."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result: list[tuple[str, str]] = []
    current: str | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, args = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            current = args.split(" AS ")[-1].strip() if " AS " in args else None
        if stage is None or current == stage or (word == "FROM" and args.endswith(stage)):
            result.append((word, args.strip()))
    return result


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [str(CODEASK), *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def test_codeask_help_lists_the_commands_the_image_runs() -> None:
    assert CODEASK.exists(), f"{CODEASK} missing: install the project into the test venv"
    result = _cli("--help")
    assert result.returncode == 0, result.stderr
    listed = set(re.findall(r"^\W*([a-z][a-z-]*)\s", result.stdout, re.MULTILINE))
    missing = [c for c in IMAGE_COMMANDS if c not in listed]
    assert not missing, f"`codeask --help` does not list {missing}:\n{result.stdout}"


@pytest.mark.parametrize("command", IMAGE_COMMANDS)
def test_each_image_command_parses_its_options(command: str) -> None:
    # In-process: the subprocess test above already proved the console script starts.
    from typer.testing import CliRunner

    from bot.cli.app import app

    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_image_entrypoint_is_codeask_serve() -> None:
    runtime = dict(_instructions("runtime"))
    assert json.loads(runtime["ENTRYPOINT"]) == ["codeask"]
    assert json.loads(runtime["CMD"]) == ["serve"]
    assert json.loads(runtime["CMD"])[0] in IMAGE_COMMANDS


def test_image_runs_as_the_non_root_user_the_chart_expects() -> None:
    user = dict(_instructions("runtime"))["USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, "USER must be numeric so runAsNonRoot can verify it"
    security = yaml.safe_load(CHART_VALUES.read_text())["podSecurityContext"]
    assert security["runAsNonRoot"] is True
    assert (int(uid), int(gid or uid)) == (security["runAsUser"], security["runAsGroup"])


def test_image_base_is_python_311_slim_bookworm_in_every_stage() -> None:
    steps = _instructions()
    base = next(a for w, a in steps if w == "ARG" and a.startswith("PYTHON_IMAGE="))
    assert base.split("=", 1)[1].startswith("python:3.11-slim-bookworm")
    stages = [a for w, a in steps if w == "FROM"]
    assert len(stages) >= 2, "multi-stage: build tools stay out of the runtime image"
    assert all(s.startswith("${PYTHON_IMAGE}") for s in stages)


def test_image_installs_only_hash_checked_wheels() -> None:
    runs = [a for w, a in _instructions("build") if w == "RUN"]
    lock_installs = [r for r in runs if "-r requirements.lock" in r]
    assert lock_installs and all("--require-hashes" in r for r in lock_installs)
    project = [r for r in runs if re.search(r"uv pip install .*--no-deps .*\s\.(\s|$)", r)]
    assert project, "codeask itself is installed from the source tree"
    assert all("--no-build-isolation" in r for r in project), "build backend from the lock"


def test_image_is_offline_and_has_git() -> None:
    runtime = _instructions("runtime")
    env_text = " ".join(a for w, a in runtime if w == "ENV")
    env = dict(pair.split("=", 1) for pair in shlex.split(env_text) if "=" in pair)
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert env["CODEASK_DATA_DIR"] == "/data"
    assert env["HF_HOME"].startswith("/data/"), "model caches must be on the writable volume"
    apt = " ".join(a for w, a in runtime if w == "RUN" and "apt-get install" in a)
    assert re.search(r"\bgit\b", apt), "the worker clones repositories with git"


def test_dockerignore_admits_exactly_what_the_image_copies() -> None:
    patterns = [
        p.strip()
        for p in DOCKERIGNORE.read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    assert patterns[0] == "**", "deny by default: no .env, .git or data dir in the context"
    admitted = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    copied: set[str] = set()
    for word, args in _instructions("build"):
        if word == "COPY" and "--from" not in args:
            copied.update(s.rstrip("/").removeprefix("./") for s in args.split()[:-1])
    assert copied, "the build stage copies the source tree"
    assert copied <= admitted, f"copied but ignored: {sorted(copied - admitted)}"
    for path in copied:
        assert (ROOT / path).exists(), f"{path} is not in the repository"
