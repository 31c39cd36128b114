"""Reading git metadata and cloning repositories (the only place that runs git)."""

from __future__ import annotations

import base64
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from indexer.errors import IndexingError

# A clone URL, or a page of the repository pasted from a browser (``…/tree/main``).
log = logging.getLogger(__name__)
_GITHUB_REMOTE = re.compile(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?(?:/|$)")


def run_git(
    args: list[str],
    cwd: Path | None = None,
    timeout: float = 600,
    extra_env: dict[str, str] | None = None,
) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            check=True,
            capture_output=True,
            timeout=timeout,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(extra_env or {})},
        )
    except subprocess.CalledProcessError as exc:
        message = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise IndexingError(f"git {args[0]} failed: {message[-1] if message else exc}") from exc
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise IndexingError(f"git {args[0]} failed: {exc}") from exc
    return done.stdout.decode("utf-8", "replace").strip()


def head_commit(root: Path) -> str:
    """The checked-out commit, or '' for a folder that is not a git work tree."""
    if not (root / ".git").exists():
        return ""
    try:
        return run_git(["rev-parse", "HEAD"], cwd=root)
    except IndexingError:
        return ""  # a repository with no commits yet


def committed_blobs(root: Path, commit: str) -> dict[str, str]:
    """``path -> blob sha`` of every file in ``commit`` (a work tree may differ from it)."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True,
        timeout=120,
    )
    if out.returncode != 0:
        raise IndexingError(f"git ls-tree {commit} failed: {out.stderr.decode(errors='replace')}")
    blobs: dict[str, str] = {}
    for entry in out.stdout.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs[path] = fields[2]
    return blobs


def repo_name_for(root: Path) -> str:
    """``owner/name`` from the GitHub origin remote, else ``local/<folder>``."""
    if (root / ".git").exists():
        try:
            url = run_git(["remote", "get-url", "origin"], cwd=root)
        except IndexingError:
            url = ""
        m = _GITHUB_REMOTE.search(url)
        if m:
            return f"{m.group(1)}/{m.group(2)}"
    return f"local/{root.resolve().name}"


def is_remote_url(target: str) -> bool:
    return "://" in target or re.match(r"^[\w.-]+@[\w.-]+:", target) is not None


def name_from_url(url: str) -> str:
    m = _GITHUB_REMOTE.search(url) or re.search(r"[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url)
    if not m:
        raise IndexingError(f"Cannot tell the repository name from {url!r}; pass --repo owner/name")
    return f"{m.group(1)}/{m.group(2)}"


def auth_env(token: str) -> dict[str, str]:
    """Git config, passed through the environment, that sends ``token`` to the server.

    The token travels as an HTTP header set by ``GIT_CONFIG_*`` variables: never in the
    remote URL, ``.git/config``, the process arguments or an error message.
    """
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def clone_or_update(url: str, dest: Path, branch: str | None = None, *, token: str = "") -> Path:
    """A shallow clone of ``url`` at ``dest``, fetched and reset to the remote head if present."""
    env = auth_env(token)
    if (dest / ".git").exists():
        ref = branch or "HEAD"
        # The caller owns ``dest`` (a worker holds the repository's job lease), so a lock
        # file there is a leftover of a git that was killed (a worker lost, a timeout) and
        # would fail every later update until someone deleted it by hand.
        for lock in (dest / ".git").rglob("*.lock"):
            log.warning("removing a stale git lock %s", lock)
            lock.unlink(missing_ok=True)
        try:
            run_git(["remote", "set-url", "origin", url], cwd=dest)  # the repo may have moved
            run_git(["fetch", "--depth", "1", "--no-tags", "origin", ref], cwd=dest, extra_env=env)
            run_git(["reset", "--hard", "FETCH_HEAD"], cwd=dest)
            run_git(["clean", "-ffdxq"], cwd=dest)  # nothing but the fetched tree is indexed
            return dest
        except IndexingError as exc:
            # A damaged clone (a git killed mid-write) fails here every time: clone afresh
            # beside it, and swap only if that works, so a network outage keeps the clone.
            fresh = dest.with_name(dest.name + ".reclone")
            shutil.rmtree(fresh, ignore_errors=True)
            try:
                _clone(url, fresh, branch, env)
            except IndexingError:
                shutil.rmtree(fresh, ignore_errors=True)
                raise exc from None
            log.warning("the clone at %s could not be updated (%s); cloned it again", dest, exc)
            shutil.rmtree(dest)
            fresh.rename(dest)
            return dest
    _clone(url, dest, branch, env)
    return dest


def _clone(url: str, dest: Path, branch: str | None, env: dict[str, str]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    args = ["clone", "--depth", "1", "--no-tags"]
    if branch:
        args += ["--branch", branch]
    run_git([*args, url, str(dest)], extra_env=env)


def remote_head(url: str, branch: str, *, token: str = "") -> str:
    """The commit ``branch`` points at on the server, or '' when the branch does not exist."""
    out = run_git(
        ["ls-remote", "--heads", url, f"refs/heads/{branch}"], timeout=60, extra_env=auth_env(token)
    )
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return ""
