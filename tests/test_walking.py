"""Which files are indexed, and why the others are skipped."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from indexer.walking import Skipped, SourceFile, git_blob_sha, walk_repository
from tests.conftest import git


def walk(root: Path) -> tuple[dict[str, SourceFile], dict[str, str]]:
    files: dict[str, SourceFile] = {}
    skipped: dict[str, str] = {}
    for item in walk_repository(root, max_bytes=10_000):
        if isinstance(item, Skipped):
            skipped[item.path] = item.reason
        else:
            files[item.path] = item
    return files, skipped


def test_bad_inputs_are_skipped_with_reasons(make_repo: Callable[[dict[str, str]], Path]) -> None:
    root = make_repo(
        {
            "src/app.py": "def main():\n    return 1\n",
            "package-lock.json": "{}",
            "node_modules/lib/index.js": "module.exports = 1\n",
            "static/app.min.js": "var a=1;",
            "gen/api_pb2.py": "x = 1\n",
            "README.md": "# hi\n",
            "logo.png": "not really",
        }
    )
    (root / "blob.py").write_bytes(b"\x00\x01binary")
    (root / "huge.py").write_text("x = 1\n" * 5000)
    os.symlink("/etc/passwd", root / "passwd.py")
    os.symlink("src/app.py", root / "alias.py")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "more")
    files, skipped = walk(root)
    assert sorted(files) == ["README.md", "src/app.py"]
    assert skipped["package-lock.json"] == "lock file"
    assert skipped["static/app.min.js"] == "generated or minified"
    assert skipped["gen/api_pb2.py"] == "generated or minified"
    assert skipped["blob.py"] == "binary"
    assert skipped["huge.py"].startswith("larger than")
    assert skipped["passwd.py"] == "symlink out of the repository"
    assert skipped["alias.py"].startswith("symlink")
    assert skipped["logo.png"] == "unsupported file type"
    assert files["src/app.py"].blob_sha == git(root, "rev-parse", "HEAD:src/app.py")


def test_plain_folder_honours_gitignore(tmp_path: Path) -> None:
    (tmp_path / "keep.py").write_text("a = 1\n")
    (tmp_path / "secret.py").write_text("b = 2\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "out.js").write_text("c\n")
    (tmp_path / "sub" / "in.js").write_text("d\n")
    (tmp_path / ".gitignore").write_text("secret.py\n")
    (tmp_path / "sub" / ".gitignore").write_text("out.js\n")
    files, _ = walk(tmp_path)
    assert sorted(files) == ["keep.py", "sub/in.js"]


def test_blob_sha_matches_git() -> None:
    assert git_blob_sha(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_git_repo_ignores_gitignored_untracked_files(
    make_repo: Callable[[dict[str, str]], Path],
) -> None:
    root = make_repo({".gitignore": "*.log.py\n", "a.py": "x = 1\n"})
    (root / "debug.log.py").write_text("y = 2\n")
    (root / "new.py").write_text("z = 3\n")
    files, _ = walk(root)
    assert sorted(files) == ["a.py", "new.py"]
