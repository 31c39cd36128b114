"""Find the files of a repository worth indexing, with a reason for each one skipped."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from indexer.source.languages import as_utf8, language_for, needs_shebang, shebang_language

SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        "vendor",
        "third_party",
        "third-party",
        "bower_components",
        "dist",
        "build",
        "target",
        "out",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".idea",
        ".gradle",
        "site-packages",
        "Pods",
        ".next",
        "coverage",
    }
)
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "uv.lock",
        "requirements.lock",
        "requirements-dev.lock",
        "bun.lockb",
    }
)
_GENERATED_NAME = re.compile(
    r"(\.min\.(js|css)$|\.map$|_pb2\.py$|\.pb\.go$|\.generated\.|\.g\.dart$)"
)
# A generator's banner is a comment line near the top that carries one of these marks
# (Go's "Code generated" line, protoc's banner, a JSDoc tag); the marks in a string, a
# regex or an ordinary line of code do not make a file generated.
_GENERATED_MARK = re.compile(
    rb"^[ \t]*(?:#|//|/\*|\*|--|<!--|;|\"\"\"|''')[^\n]*(?:@generated|DO NOT EDIT)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class SourceFile:
    """A file to index: its repository path, language, bytes and git blob sha."""

    path: str
    language: str
    data: bytes
    blob_sha: str


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


# The skip reason of a listed path that is not in the work tree (tracked by git, deleted
# without a commit, or gone since git listed it).
DELETED_FROM_WORK_TREE = "deleted from the work tree"

# git's id of the empty blob: ``git hash-object /dev/null``.
EMPTY_BLOB_SHA = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def git_blob_sha(data: bytes) -> str:
    """The sha git would give these bytes as a blob (so unchanged files keep their id)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_git_repo(root: Path) -> bool:
    return (root / ".git").exists()


def _git_listed_files(root: Path) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored files, as git sees them."""
    try:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})


def _walked_files(root: Path) -> list[str]:
    """Every file under ``root`` honouring .gitignore files, for folders that are not git repos."""
    specs: list[tuple[str, pathspec.PathSpec]] = []
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        ignore = Path(dirpath) / ".gitignore"
        if ignore.is_file() and not ignore.is_symlink():
            lines = ignore.read_text("utf-8", "replace").splitlines()
            specs.append((rel_dir, pathspec.PathSpec.from_lines("gitignore", lines)))

        def ignored(rel: str, is_dir: bool) -> bool:
            for base, spec in specs:
                if base and not rel.startswith(base + "/"):
                    continue
                sub = rel[len(base) + 1 :] if base else rel
                if spec.match_file(sub + ("/" if is_dir else "")):
                    return True
            return False

        kept = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d in SKIP_DIRS or ignored(rel, True):
                continue
            kept.append(d)
        dirnames[:] = kept
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if not ignored(rel, False):
                found.append(rel)
    return found


def walk_repository(root: Path, max_bytes: int = 1_000_000) -> Iterator[SourceFile | Skipped]:
    """Yield each indexable file of ``root`` or why it was skipped.

    Symlinks are never followed out of the repository; binary, generated, vendored,
    lock and oversized files are skipped, and so are files the repository's
    ``.gitattributes`` marks so; undecodable bytes are kept as they are (the chunker
    replaces them when decoding).
    """
    root = root.resolve()
    listed = _git_listed_files(root) if is_git_repo(root) else None
    paths = listed if listed is not None else _walked_files(root)
    marked = _git_attribute_skips(root, paths) if listed is not None else None
    if marked is None:
        marked = _parsed_attribute_skips(root, paths)
    for rel in paths:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # git or the file system gave bytes that are not UTF-8
            shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            yield Skipped(shown, "file name is not UTF-8")
            continue
        parts = rel.split("/")
        if any(p in SKIP_DIRS for p in parts[:-1]):
            yield Skipped(rel, "vendored or build directory")
            continue
        name = parts[-1]
        if name in LOCK_FILES:
            yield Skipped(rel, "lock file")
            continue
        if _GENERATED_NAME.search(name):
            yield Skipped(rel, "generated or minified")
            continue
        if rel in marked:
            yield Skipped(rel, marked[rel])
            continue
        language = language_for(rel)
        if language is None and not needs_shebang(rel):
            yield Skipped(rel, "unsupported file type")
            continue
        full = root / rel
        if full.is_symlink():
            try:
                target = full.resolve()
            except (RuntimeError, OSError):  # a loop (RuntimeError before Python 3.13)
                yield Skipped(rel, "symlink loop or unresolvable target")
                continue
            if not target.is_relative_to(root):
                yield Skipped(rel, "symlink out of the repository")
                continue
            yield Skipped(rel, "symlink (its target is indexed under its own path)")
            continue
        try:
            if not full.is_file():
                yield Skipped(rel, _not_a_file_reason(full))
                continue
            size = full.stat().st_size
            if size > max_bytes:
                yield Skipped(rel, f"larger than {max_bytes} bytes")
                continue
            data = full.read_bytes()
        except OSError as exc:
            yield Skipped(rel, f"unreadable: {exc.strerror or exc}")
            continue
        reason = content_skip_reason(data)
        if reason is not None:
            yield Skipped(rel, reason)
            continue
        language = language or shebang_language(data)
        if language is None:
            yield Skipped(rel, "unsupported file type")
            continue
        yield SourceFile(rel, language, data, git_blob_sha(data))


def _not_a_file_reason(full: Path) -> str:
    # git lists what its index tracks: a file deleted in the work tree but not in a commit
    # is still listed. The walk reads the work tree, so such a file is not indexed at all
    # (and whatever an earlier run stored for it is removed), not indexed as committed.
    if not os.path.lexists(full):
        return DELETED_FROM_WORK_TREE
    return "not a regular file (a submodule or a special file)"


def content_skip_reason(data: bytes) -> str | None:
    """Why a file's bytes are not worth indexing (binary, generated, minified), or None."""
    data = as_utf8(data)
    if b"\0" in data[:8192]:
        return "binary"
    if _GENERATED_MARK.search(data[:2048]) or (data and _looks_minified(data)):
        return "generated or minified"
    return None


def _looks_minified(data: bytes) -> bool:
    lines = data.count(b"\n") + 1
    return len(data) > 5000 and len(data) / lines > 500


# --- .gitattributes ------------------------------------------------------------------

# Attributes that mark a file as not worth indexing: the value(s) that mark it, and the
# reason given. ``binary`` is git's macro for "-diff -merge -text", so it is asked first.
ATTRIBUTE_SKIPS: dict[str, tuple[frozenset[str], str]] = {
    "binary": (frozenset({"set"}), "marked binary in .gitattributes"),
    "diff": (frozenset({"unset"}), "marked -diff in .gitattributes"),
    "linguist-generated": (
        frozenset({"set", "true"}),
        "marked linguist-generated in .gitattributes",
    ),
    "linguist-vendored": (frozenset({"set", "true"}), "marked linguist-vendored in .gitattributes"),
}
_BUILTIN_MACROS = {"binary": ["-diff", "-merge", "-text"]}


def _attribute_reason(values: Mapping[str, str]) -> str | None:
    for attr, (marking, reason) in ATTRIBUTE_SKIPS.items():
        if values.get(attr) in marking:
            return reason
    return None


def _git_attribute_skips(root: Path, paths: Sequence[str]) -> dict[str, str] | None:
    """Path → reason for the files git's attributes mark, asked in one ``git check-attr``."""
    if not paths:
        return {}
    data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "check-attr", "-z", "--stdin", *ATTRIBUTE_SKIPS],
            input=data,
            check=True,
            capture_output=True,
            timeout=120,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None  # the .gitattributes files are read directly instead
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    values: dict[str, dict[str, str]] = {}
    for i in range(0, len(fields) - 2, 3):  # path NUL attribute NUL value NUL
        values.setdefault(fields[i], {})[fields[i + 1]] = fields[i + 2]
    return {p: r for p, v in values.items() if (r := _attribute_reason(v)) is not None}


def _parsed_attribute_skips(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """The same for a folder that is not a git work tree: its ``.gitattributes`` files read
    as git reads them (later lines and deeper files win; ``[attr]`` macros from the top
    one; a trailing "/" pattern never matches a file). Quoted patterns are not read."""
    files = sorted(
        (p for p in paths if p == ".gitattributes" or p.endswith("/.gitattributes")),
        key=lambda p: p.count("/"),
    )
    macros = dict(_BUILTIN_MACROS)
    rules: list[tuple[str, re.Pattern[str], list[str]]] = []
    for rel in files:
        base = rel[: -len(".gitattributes")]
        try:
            text = (root / rel).read_text("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            pattern, *attrs = line.split() or [""]
            if not pattern or pattern.startswith(("#", "!", '"')):
                continue  # a comment, a (forbidden) negation, a quoted pattern
            if pattern.startswith("[attr]"):
                if not base:  # git honours macros in the top-level file only
                    macros[pattern[len("[attr]") :]] = attrs
                continue
            regex = _attribute_pattern(pattern)
            if regex is not None:
                rules.append((base, regex, attrs))
    if not rules:
        return {}
    marked = {}
    for path in paths:
        values: dict[str, str] = {}
        for base, regex, attrs in rules:
            if path.startswith(base) and regex.fullmatch(path[len(base) :]):
                _apply_attributes(values, attrs, macros)
        if (reason := _attribute_reason(values)) is not None:
            marked[path] = reason
    return marked


def _apply_attributes(
    values: dict[str, str], attrs: list[str], macros: dict[str, list[str]]
) -> None:
    for token in attrs:
        if token.startswith("-"):
            values[token[1:]] = "unset"
        elif token.startswith("!"):
            values.pop(token[1:], None)
        elif "=" in token:
            name, _, value = token.partition("=")
            values[name] = value
        else:
            values[token] = "set"
            if token in macros:
                _apply_attributes(values, macros[token], {})


def _attribute_pattern(pattern: str) -> re.Pattern[str] | None:
    """A gitattributes pattern as a regex over the path below its file's folder."""
    if pattern.endswith("/"):
        return None  # matches directories only, never the files inside them
    if "/" not in pattern:  # a name, at any depth
        return re.compile(r"(?:.*/)?" + _glob(pattern))
    return re.compile(_glob(pattern.removeprefix("/")))


def _glob(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append(r"(?:.*/)?")  # "**/" at the start or "/**/": any folders, or none
            i += 3
        elif pattern.startswith("**", i) and i + 2 == len(pattern) and pattern[i - 1 : i] == "/":
            out.append(r".*")  # a trailing "/**": everything inside
            i += 2
        elif pattern[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append(r"[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            inner = pattern[i + 1 : end]
            negated = inner[:1] in ("!", "^")
            inner = inner[1:] if negated else inner
            out.append("[" + ("^" if negated else "") + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
