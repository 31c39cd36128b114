"""Recompute the gold line ranges of a golden set from the symbols they name.

This project's own code moves under its golden set (``golden/codeask.jsonl``) with every
change. Gold places are identified by ``path`` + ``symbol``; this tool finds each one
again and rewrites ``start_line``/``end_line`` under the range rule of eval/README.md::

    python -m eval.regold eval/golden/codeask.jsonl            # root: this checkout
    python -m eval.regold eval/golden/x.jsonl --root DIR

Python definitions are found with ``ast`` (first decorator to ``end_lineno``), Markdown
sections by heading text (heading to the last non-blank line before the next heading of
the same or a higher level). Other file types are left as they are.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

from eval.goldens import REPO_ROOT


def python_ranges(text: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (first line, last line) of every def, class and assignment."""
    found: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for n in ast.iter_child_nodes(node):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = n.decorator_list[0].lineno if n.decorator_list else n.lineno
                found.setdefault(prefix + n.name, (first, n.end_lineno or n.lineno))
                visit(n, f"{prefix}{n.name}.")
            elif isinstance(n, ast.Assign | ast.AnnAssign):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        found.setdefault(prefix + t.id, (n.lineno, n.end_lineno or n.lineno))
            elif isinstance(n, ast.If | ast.Try | ast.With):
                visit(n, prefix)

    visit(ast.parse(text), "")
    return found


_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def markdown_ranges(text: str) -> dict[str, tuple[int, int]]:
    """Heading text -> (heading line, last non-blank line of its section)."""
    lines = text.split("\n")
    heads: list[tuple[int, int, str]] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2)))
    out: dict[str, tuple[int, int]] = {}
    for n, (row, level, title) in enumerate(heads):
        stop = next((r for r, lvl, _ in heads[n + 1 :] if lvl <= level), len(lines))
        last = stop - 1
        while last > row and not lines[last].strip():
            last -= 1
        out.setdefault(title, (row + 1, last + 1))
    return out


def relocate(path: Path, root: Path) -> list[str]:
    """Rewrite ``path`` in place; returns one message per gold place that moved or is lost."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    messages: list[str] = []
    cache: dict[str, dict[str, tuple[int, int]]] = {}
    for row in rows:
        for gold in row["gold"]:
            file = root / gold["path"]
            if gold["path"] not in cache:
                text = file.read_text(encoding="utf-8") if file.is_file() else ""
                if file.suffix == ".py":
                    cache[gold["path"]] = python_ranges(text)
                elif file.suffix == ".md":
                    cache[gold["path"]] = markdown_ranges(text)
                else:
                    cache[gold["path"]] = {}
            ranges = cache[gold["path"]]
            where = ranges.get(gold["symbol"])
            if where is None:
                if file.suffix in (".py", ".md"):
                    messages.append(f"{row['id']}: {gold['symbol']} not found in {gold['path']}")
                continue
            if where != (gold["start_line"], gold["end_line"]):
                messages.append(
                    f"{row['id']}: {gold['path']} {gold['symbol']} "
                    f"{gold['start_line']}-{gold['end_line']} -> {where[0]}-{where[1]}"
                )
                gold["start_line"], gold["end_line"] = where
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return messages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.regold", description=__doc__.split("\n")[0])
    ap.add_argument("golden", type=Path, nargs="+")
    ap.add_argument("--root", type=Path, default=REPO_ROOT, help="source root of the set")
    args = ap.parse_args(argv)
    lost = False
    for path in args.golden:
        for message in relocate(path, args.root):
            print(message)
            lost = lost or "not found" in message
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
