"""Checks the retrieval golden sets in eval/golden/ against the pinned corpora.

For every golden file: the schema, unique ids, valid kinds and the size.  For
every gold place: the file exists in the unpacked corpus and the line range is
exactly the definition named by ``symbol`` under the range rule described in
eval/README.md:

* Python: first decorator line (else the ``def``/``class`` line) to the node's
  ``end_lineno``, checked with ``ast``.
* JS / TS / Java: first annotation/decorator line (else the definition line) to
  the line that closes the definition's block (or ends its statement); leading
  doc comments are *not* part of the range.
* Markdown / reStructuredText: the heading line to the last non-blank line
  before the next heading of the same or a higher level.
* INI / setup.cfg: the ``[section]`` line to its last non-blank line.
* JSON: a top-level key's line to the line where its value ends.
* XML: an element's start-tag line to its matching end-tag line.

Stdlib + pytest only.  The corpora are downloaded once (cached) by
``eval.corpora.ensure_corpora``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from eval import corpora as corpora_mod  # noqa: E402

GOLDEN_DIR = REPO_ROOT / "eval" / "golden"
KINDS = {"identifier", "concept", "multihop", "config"}
MIN_QUESTIONS = 20
# This project's own set is answered from this checkout (eval/goldens.py: SELF_REPO).
SELF_CORPUS = corpora_mod.Corpus(
    repo="codeask/codeask", ecosystem="self", package="codeask", version="working tree",
    url="", sha256="", archive="", root=".", strip=None, golden="codeask",
)  # fmt: skip
CORPUS_BY_GOLDEN = {c.golden: c for c in (*corpora_mod.CORPORA, SELF_CORPUS)}

# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def corpus_roots() -> dict[str, Path]:
    try:
        roots = corpora_mod.ensure_corpora(corpora_mod.DEFAULT_DEST)
        return {**roots, SELF_CORPUS.repo: REPO_ROOT}
    except corpora_mod.DownloadError as exc:  # only a network failure skips
        pytest.skip(f"corpora could not be downloaded (no network?): {exc}")


def _golden_files() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("*.jsonl"))


def _load(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:  # pragma: no cover - reported below
            raise AssertionError(f"{path.name}:{n}: invalid JSON: {exc}") from exc
    return rows


def _all_gold() -> list[tuple[str, str, dict]]:
    out = []
    for path in _golden_files():
        for row in _load(path):
            for i, g in enumerate(row.get("gold", [])):
                out.append((path.stem, f"{row.get('id')}#{i}", g))
    return out


# --------------------------------------------------------------------------
# schema tests
# --------------------------------------------------------------------------


def test_golden_files_present() -> None:
    stems = {p.stem for p in _golden_files()}
    missing = set(CORPUS_BY_GOLDEN) - stems
    assert not missing, f"missing golden sets: {sorted(missing)}"
    unknown = stems - set(CORPUS_BY_GOLDEN)
    assert not unknown, f"golden sets without a pinned corpus: {sorted(unknown)}"


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: p.stem)
def test_golden_schema(path: Path) -> None:
    rows = _load(path)
    corpus = CORPUS_BY_GOLDEN[path.stem]
    assert len(rows) >= MIN_QUESTIONS, f"{path.name}: only {len(rows)} questions"
    ids = [r.get("id") for r in rows]
    dup = [i for i, c in Counter(ids).items() if c > 1]
    assert not dup, f"duplicate ids: {dup}"
    questions = [r.get("question", "").strip().lower() for r in rows]
    dupq = [q for q, c in Counter(questions).items() if c > 1]
    assert not dupq, f"duplicate questions: {dupq}"
    for r in rows:
        rid = r.get("id")
        assert set(r) == {"id", "repo", "question", "kind", "gold"}, f"{rid}: keys {sorted(r)}"
        assert isinstance(rid, str) and re.fullmatch(rf"{path.stem}-\d{{3}}", rid), rid
        assert r["repo"] == corpus.repo, f"{rid}: repo {r['repo']!r} != {corpus.repo!r}"
        assert isinstance(r["question"], str) and len(r["question"].strip()) >= 15, rid
        assert r["kind"] in KINDS, f"{rid}: kind {r['kind']!r}"
        gold = r["gold"]
        assert isinstance(gold, list) and gold, f"{rid}: empty gold"
        if r["kind"] == "multihop":
            assert 2 <= len(gold) <= 3, f"{rid}: multihop needs 2-3 places"
        seen = set()
        for g in gold:
            assert set(g) == {"path", "start_line", "end_line", "symbol"}, f"{rid}: {g}"
            assert isinstance(g["path"], str) and g["path"], rid
            assert "\\" not in g["path"] and not g["path"].startswith("/"), rid
            assert ".." not in g["path"].split("/"), rid
            assert isinstance(g["start_line"], int) and isinstance(g["end_line"], int), rid
            assert 1 <= g["start_line"] <= g["end_line"], f"{rid}: {g}"
            assert isinstance(g["symbol"], str) and g["symbol"].strip(), rid
            key = (g["path"], g["start_line"])
            assert key not in seen, f"{rid}: gold listed twice: {key}"
            seen.add(key)


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: p.stem)
def test_golden_kind_mix(path: Path) -> None:
    kinds = Counter(r["kind"] for r in _load(path))
    for kind in KINDS:
        assert kinds[kind] >= 3, f"{path.name}: only {kinds[kind]} {kind} questions"


# --------------------------------------------------------------------------
# range checks, one per language family
# --------------------------------------------------------------------------


def _last(symbol: str) -> str:
    return re.split(r"[.#]", symbol.strip())[-1]


def check_python(text: str, start: int, end: int, symbol: str) -> None:
    tree = ast.parse(text)
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = n.decorator_list[0].lineno if n.decorator_list else n.lineno
                qual = prefix + n.name
                found.append((qual, first, n.end_lineno or n.lineno))
                visit(n, qual + ".")
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        found.append((prefix + t.id, n.lineno, n.end_lineno or n.lineno))
            elif isinstance(n, (ast.If, ast.Try, ast.With)):
                visit(n, prefix)  # definitions under `if sys.platform ...:` etc.

    visit(tree, "")
    at_start = [f for f in found if f[1] == start]
    assert at_start, f"no definition starts at line {start}"
    named = [f for f in at_start if f[0] == symbol]
    assert named, f"line {start} starts {[f[0] for f in at_start]}, not {symbol!r}"
    ends = {f[2] for f in named}
    assert end in ends, f"{symbol} ends at {sorted(ends)}, gold says {end}"


def _strip_code(lines: list[str], lang: str) -> list[str]:
    """Return the lines with comments, strings, char and regex literals blanked.

    Good enough for well-formed library code: handles //, /* */, '..', "..",
    `..${..}..` template literals (JS/TS), Java/Kotlin/Swift text blocks, JS regex literals, Go
    `raw strings`, and Rust lifetimes (`'a`, not a char literal) and multi-line strings.
    """
    text = "\n".join(lines)
    out: list[str] = []
    i, n = 0, len(text)
    prev_sig = ""  # last significant (non-space) char emitted as code
    tmpl_stack: list[int] = []  # brace depth at which a template `${` was opened
    depth = 0
    while i < n:
        ch = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if ch == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if ch == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if lang in ("java", "kotlin", "swift") and text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            prev_sig = '"'
            continue
        if lang == "rust" and ch == "'" and not re.match(r"'(\\.[^']*|[^'\\\n])'", text[i:]):
            out.append(ch)  # a lifetime or loop label ('a, 'static), not a char literal
            prev_sig = ch
            i += 1
            continue
        if lang == "go" and ch == "`":  # raw string: no escapes, may span lines
            j = text.find("`", i + 1)
            j = n if j < 0 else j + 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            prev_sig = '"'
            continue
        if ch in "\"'" or (ch == "`" and lang in ("js", "ts")):
            quote = ch
            j = i + 1
            while j < n:
                c = text[j]
                if c == "\\":
                    j += 2
                    continue
                if quote == "`" and text.startswith("${", j):
                    break
                if c == quote or (c == "\n" and quote != "`" and lang != "rust"):
                    break
                j += 1
            if quote == "`" and text.startswith("${", j):
                out.append(re.sub(r"[^\n]", " ", text[i:j]) + "  ")
                tmpl_stack.append(depth)
                i = j + 2
                prev_sig = "{"
                continue
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
            prev_sig = '"'
            continue
        if (
            ch == "/"
            and lang in ("js", "ts")
            and (prev_sig == "" or prev_sig in "(,=:[!&|?{};+-*%<>~^")
        ):
            j, in_class = i + 1, False
            while j < n and text[j] != "\n":
                c = text[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    in_class = True
                elif c == "]":
                    in_class = False
                elif c == "/" and not in_class:
                    break
                j += 1
            if j < n and text[j] == "/":
                out.append(" " * (j + 1 - i))
                i = j + 1
                prev_sig = '"'
                continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if tmpl_stack and tmpl_stack[-1] == depth:
                # end of `${...}` inside a template literal: resume the string
                tmpl_stack.pop()
                j = i + 1
                while j < n:
                    c = text[j]
                    if c == "\\":
                        j += 2
                        continue
                    if c == "`" or text.startswith("${", j):
                        break
                    j += 1
                if text.startswith("${", j):
                    out.append(re.sub(r"[^\n]", " ", text[i:j]) + "  ")
                    tmpl_stack.append(depth)
                    i = j + 2
                    continue
                out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
                i = j + 1
                prev_sig = '"'
                continue
            depth -= 1
        out.append(ch)
        if not ch.isspace():
            prev_sig = ch
        i += 1
    return "".join(out).split("\n")


_DEF_PATTERNS = (
    r"\b(class|interface|enum|record|function\*?|const|let|var|type|namespace)\s+{name}\b",
    r"@interface\s+{name}\b",
    r"\b{name}\s*(<[^>]*>\s*)?\(",  # method / function: name(...  or name<T>(...
    r"\b{name}\s*[:=]",  # property / field / object member
    r"\b(get|set|async|static)\s+{name}\b",
    r"[\"']{name}[\"']\s*[:(]",
    r"^\s*{name}\s*\{{",  # Java enum constant with a body / static initializer block
    r"\bmodule\s+(?:[\w$]+\.)*{name}\s*\{{",  # Java module declaration
    r"\bfunc\s+(\([^)]*\)\s*)?{name}\s*[\[(]",  # Go function / method (generic too)
    r"\b(fn|struct|trait|mod|union|impl)\s+{name}\b",  # Rust items
    r"\bmacro_rules!\s*{name}\b",  # Rust macro
    r"\b(fun|object|struct|protocol|extension|actor|func|typealias)\s+{name}\b",  # Kotlin, Swift
)


def _is_definition_line(line: str, name: str) -> bool:
    esc = re.escape(name)
    return any(re.search(p.format(name=esc), line) for p in _DEF_PATTERNS)


def check_brace(text: str, start: int, end: int, symbol: str, lang: str) -> None:
    lines = text.split("\n")
    assert end <= len(lines), f"end_line {end} beyond EOF ({len(lines)})"
    rng = lines[start - 1 : end]
    code = _strip_code(lines, lang)[start - 1 : end]
    name = _last(symbol)

    def is_annotation(line: str) -> bool:
        line = line.lstrip()
        if lang == "rust":  # outer attributes: #[derive(...)], #[cfg(...)]
            return line.startswith("#[")
        if lang == "csharp":  # attributes: [Obsolete], [return: MaybeNull]
            return line.startswith("[")
        return line.startswith("@") and not line.startswith("@interface")

    # skip annotations / decorators / attributes (possibly with multi-line arguments)
    k = 0
    while k < len(rng) and is_annotation(rng[k]):
        paren = sum(code[k].count(o) - code[k].count(c) for o, c in ("()", "[]"))
        k += 1
        while paren > 0 and k < len(rng):
            paren += sum(code[k].count(o) - code[k].count(c) for o, c in ("()", "[]"))
            k += 1
    assert k < len(rng), "range holds only annotations"

    # ... and no annotation/decorator directly above the range was left out
    j = start - 2
    while j >= 0 and j > start - 12:
        above = lines[j].strip()
        if not above or above.endswith((";", "{", "}", "*/")) or above.startswith(("//", "*")):
            break
        assert not is_annotation(above), (
            f"annotation/decorator at line {j + 1} belongs to the definition but is not in range"
        )
        j -= 1
    assert rng[0].strip(), "range starts with a blank line"
    first = rng[0].lstrip()
    assert not first.startswith(("/*", "//", "*")), "range starts with a comment"
    assert code[0].strip(), "range starts inside a comment"
    assert _is_definition_line(code[k], name) or _is_definition_line(rng[k], name), (
        f"line {start + k} does not define {name!r}: {rng[k].strip()!r}"
    )

    # trailing blank lines are not allowed
    assert rng[-1].strip(), "range ends with a blank line"

    depth = 0
    depths = []
    for row in code:
        for ch in row:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                assert depth >= 0, f"unbalanced '}}' inside range near: {row.strip()!r}"
        depths.append(depth)
    assert depths[-1] == 0, f"braces unbalanced at end of range (depth {depths[-1]})"
    for o, c in ("()", "[]"):
        bal = 0
        for row in code[k:]:
            bal += row.count(o) - row.count(c)
            assert bal >= 0, f"unbalanced {c!r} inside range near: {row.strip()!r}"
        assert bal == 0, f"unbalanced {o!r} in range (statement not complete)"
    # the statement must not continue after the range (method chains, ternaries, ...)
    rest = [ln.strip() for ln in _strip_code(lines, lang)[end:] if ln.strip()]
    if rest:
        assert not rest[0].startswith((".", "?", ":", "+", "&&", "||", ")", "]")), (
            f"the statement continues after line {end}: {rest[0]!r}"
        )
    opened = [i for i, d in enumerate(depths) if d > 0]
    if not opened:
        # block-less definition (abstract method, field, one-liner): must end it
        last = code[-1].rstrip()
        assert last.endswith((";", "}", "},", ")", "),", "});")) or len(rng) - k == 1, (
            f"range does not end the statement: {rng[-1].strip()!r}"
        )
        return
    first_open = opened[0]
    body = depths[first_open:-1]
    assert all(d > 0 for d in body), (
        "the definition's block closes before the end of the range "
        f"(at line {start + first_open + body.index(0)})"
    )
    assert "}" in code[-1], f"last line does not close the block: {rng[-1].strip()!r}"


def check_ruby(text: str, start: int, end: int, symbol: str) -> None:
    """``def``/``class``/``module`` line to the ``end`` at the same indentation.

    Relies on conventionally indented code (as rubocop enforces); a one-line
    definition (``def x = ...``, ``def x; end``) ends on its own line.
    """
    lines = text.split("\n")
    assert end <= len(lines), f"end_line {end} beyond EOF ({len(lines)})"
    name = re.escape(_last(symbol))
    line = lines[start - 1]
    m = re.match(
        rf"^(\s*)(?:def\s+(?:self\.)?|class\s+|module\s+)(?:\w+::)*{name}(?=[\s(;=<]|$)", line
    )
    assert m, f"line {start} does not define {_last(symbol)!r}: {line.strip()!r}"
    indent = m.group(1)
    one_line = re.search(r"\bend\s*$", line) or re.match(
        r"^\s*def\s+[\w.?!]+(\([^)]*\))?\s*=", line
    )
    if one_line:
        assert end == start, f"one-line definition ends at line {start}, gold says {end}"
        return
    for j in range(start, len(lines)):
        row = lines[j]
        if not row.strip():
            continue
        depth = len(row) - len(row.lstrip())
        if row.rstrip() == indent + "end":
            assert end == j + 1, f"{_last(symbol)} ends at line {j + 1}, gold says {end}"
            return
        assert depth > len(indent), f"line {j + 1} is outdented before the closing 'end'"
    raise AssertionError("no closing 'end'")


_MD_FENCE = re.compile(r"^\s*(```|~~~)")


def _md_headings(lines: list[str]) -> list[tuple[int, int]]:
    """(line index, level) of ATX headings outside fenced code."""
    heads, fenced = [], False
    for i, line in enumerate(lines):
        if _MD_FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^(#{1,6})\s+\S", line)
        if m and not fenced:
            heads.append((i, len(m.group(1))))
    return heads


_RST_ADORN = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def _rst_headings(lines: list[str]) -> list[tuple[int, int]]:
    """(first line index, level) of reST section titles (with or without overline)."""
    styles: list[tuple[str, bool]] = []
    heads: list[tuple[int, int]] = []
    i = 0
    while i < len(lines) - 1:
        line = lines[i]
        over = _RST_ADORN.match(line)
        if (
            over
            and i + 2 < len(lines)
            and lines[i + 1].strip()
            and _RST_ADORN.match(lines[i + 2])
            and lines[i + 2].strip()[0] == over.group(1)
        ):
            style = (over.group(1), True)
            if style not in styles:
                styles.append(style)
            heads.append((i, styles.index(style) + 1))
            i += 3
            continue
        under = _RST_ADORN.match(lines[i + 1]) if i + 1 < len(lines) else None
        if (
            line.strip()
            and not _RST_ADORN.match(line)
            and not line.startswith((" ", "\t"))
            and under
            and len(lines[i + 1].rstrip()) >= len(line.rstrip())
        ):
            style = (under.group(1), False)
            if style not in styles:
                styles.append(style)
            heads.append((i, styles.index(style) + 1))
            i += 2
            continue
        i += 1
    return heads


def _section_end(lines: list[str], heads: list[tuple[int, int]], start_idx: int) -> int:
    level = dict(heads)[start_idx]
    stop = len(lines)
    for idx, lvl in heads:
        if idx > start_idx and lvl <= level:
            stop = idx
            break
    j = stop - 1
    while j > start_idx and not lines[j].strip():
        j -= 1
    return j + 1  # 1-based


def check_heading(text: str, start: int, end: int, symbol: str, kind: str) -> None:
    lines = text.split("\n")
    heads = _md_headings(lines) if kind == "md" else _rst_headings(lines)
    idxs = dict(heads)
    assert start - 1 in idxs, f"line {start} is not a heading: {lines[start - 1]!r}"
    title = lines[start - 1]
    if kind == "rst" and _RST_ADORN.match(title):
        title = lines[start]
    assert symbol.strip().lower() in title.lower(), f"heading {title!r} is not {symbol!r}"
    expected = _section_end(lines, heads, start - 1)
    assert end == expected, f"section ends at line {expected}, gold says {end}"


def check_ini(text: str, start: int, end: int, symbol: str) -> None:
    lines = text.split("\n")
    m = re.match(r"^\[([^\]]+)\]\s*$", lines[start - 1])
    assert m, f"line {start} is not a [section]: {lines[start - 1]!r}"
    assert m.group(1).strip() == symbol, f"section {m.group(1)!r} is not {symbol!r}"
    stop = len(lines)
    for j in range(start, len(lines)):
        if re.match(r"^\[[^\]]+\]\s*$", lines[j]):
            stop = j
            break
    j = stop - 1
    while j > start - 1 and not lines[j].strip():
        j -= 1
    assert end == j + 1, f"section ends at line {j + 1}, gold says {end}"


def check_json(text: str, start: int, end: int, symbol: str) -> None:
    json.loads(text)  # the file must be valid JSON
    lines = text.split("\n")
    key = symbol
    m = re.match(r'^(\s*)"((?:[^"\\]|\\.)*)"\s*:', lines[start - 1])
    assert m, f"line {start} does not start a key: {lines[start - 1]!r}"
    assert m.group(2) == key, f"key {m.group(2)!r} is not {key!r}"
    # the key must be at depth 1 (a top-level key of the document)
    depth = 0
    for row in _strip_code(lines[: start - 1], "json"):
        depth += row.count("{") + row.count("[") - row.count("}") - row.count("]")
    assert depth == 1, f"key {key!r} at line {start} is not top-level (depth {depth})"
    code = _strip_code(lines, "json")
    d = 1
    for j in range(start - 1, len(lines)):
        for ch in code[j][m.end() if j == start - 1 else 0 :]:
            if ch in "{[":
                d += 1
            elif ch in "}]":
                d -= 1
        if d == 1:
            assert end == j + 1, f"value of {key!r} ends at line {j + 1}, gold says {end}"
            return
    raise AssertionError("value never closes")


def check_xml(text: str, start: int, end: int, symbol: str) -> None:
    """``symbol`` is ``a.b.tag`` or ``a.b.tag[text]``: the element's tag, optionally
    with a text (e.g. an artifactId) that must occur inside the element."""
    lines = text.split("\n")
    m = re.fullmatch(r"(?:[\w.:-]*\.)?([\w:-]+)(?:\[(.+)\])?", symbol.strip())
    assert m, f"bad XML symbol {symbol!r}"
    tag, qualifier = m.group(1), m.group(2)
    if qualifier is not None:
        inner = "\n".join(lines[start - 1 : end])
        assert qualifier in inner, f"{qualifier!r} not inside the <{tag}> element"
    open_re = re.compile(rf"<{re.escape(tag)}(\s[^>]*)?>")
    close_re = re.compile(rf"</{re.escape(tag)}\s*>")
    assert open_re.search(lines[start - 1]), f"line {start} does not open <{tag}>"
    depth = 0
    for j in range(start - 1, len(lines)):
        depth += len(open_re.findall(lines[j])) - len(close_re.findall(lines[j]))
        if depth == 0:
            assert end == j + 1, f"<{tag}> closes at line {j + 1}, gold says {end}"
            return
    raise AssertionError(f"<{tag}> never closes")


_BRACE_LANG = {
    ".js": "js", ".mjs": "js", ".cjs": "js", ".ts": "ts", ".tsx": "ts", ".java": "java",
    ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cs": "csharp", ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
}  # fmt: skip


def check_range(file: Path, start: int, end: int, symbol: str) -> None:
    text = file.read_text(encoding="utf-8")
    n_lines = len(text.split("\n"))
    assert end <= n_lines, f"end_line {end} beyond EOF ({n_lines} lines)"
    suffix = file.suffix.lower()
    if suffix == ".py":
        check_python(text, start, end, symbol)
    elif suffix == ".rb":
        check_ruby(text, start, end, symbol)
    elif suffix in _BRACE_LANG:
        check_brace(text, start, end, symbol, _BRACE_LANG[suffix])
    elif suffix == ".md":
        check_heading(text, start, end, symbol, "md")
    elif suffix == ".rst":
        check_heading(text, start, end, symbol, "rst")
    elif suffix in (".cfg", ".ini"):
        check_ini(text, start, end, symbol)
    elif suffix == ".json":
        check_json(text, start, end, symbol)
    elif suffix == ".xml":
        check_xml(text, start, end, symbol)
    else:
        raise AssertionError(f"no range rule for {suffix!r} files")


@pytest.mark.parametrize(
    ("stem", "gid", "gold"), _all_gold(), ids=[f"{s}:{i}" for s, i, _ in _all_gold()]
)
def test_gold_range(stem: str, gid: str, gold: dict, corpus_roots: dict[str, Path]) -> None:
    corpus = CORPUS_BY_GOLDEN[stem]
    root = corpus_roots[corpus.repo]
    file = root.joinpath(*gold["path"].split("/"))
    assert file.is_file(), f"{gid}: {gold['path']} not in {corpus.repo} {corpus.version}"
    try:
        check_range(file, gold["start_line"], gold["end_line"], gold["symbol"])
    except AssertionError as exc:
        raise AssertionError(
            f"{gid} {gold['path']}:{gold['start_line']}-{gold['end_line']} {gold['symbol']}: {exc}"
        ) from None


# --------------------------------------------------------------------------
# self-tests of the range checkers (so a checker bug cannot pass bad gold)
# --------------------------------------------------------------------------

_JAVA = """\
/** Doc. */
@Override
public int foo(String s) {
  if (s.equals("}")) {
    return '{';
  }
  return 1;
}

void bar() {
}
"""

_TS = """\
export function foo(a: { x: number }): number {
  const re = /[{]/g
  return `${a.x}}`.length
}
"""


def test_checker_self_test() -> None:
    check_brace(_JAVA, 2, 8, "X.foo", "java")
    with pytest.raises(AssertionError):
        check_brace(_JAVA, 2, 7, "X.foo", "java")  # stops early
    with pytest.raises(AssertionError):
        check_brace(_JAVA, 2, 11, "X.foo", "java")  # runs into bar()
    with pytest.raises(AssertionError):
        check_brace(_JAVA, 1, 8, "X.foo", "java")  # starts at the doc comment
    check_brace(_TS, 1, 4, "foo", "ts")
    with pytest.raises(AssertionError):
        check_brace(_JAVA, 3, 8, "X.foo", "java")  # leaves out @Override above
    chain = "delegate(proto, 'x')\n  .method('a')\n  .getter('b');\n"
    check_brace(chain, 1, 3, "delegate", "js")
    with pytest.raises(AssertionError):
        check_brace(chain, 1, 2, "delegate", "js")  # chain continues
    wrapped = "export const f = Object.assign(\n  function f() {\n    return 1\n  },\n  {}\n)\n"
    check_brace(wrapped, 2, 4, "f", "ts")
    with pytest.raises(AssertionError):
        check_brace(wrapped, 1, 4, "f", "ts")  # Object.assign( left open
    with pytest.raises(AssertionError):
        check_brace(_TS, 1, 3, "foo", "ts")
    py = "import x\n\n@dec\ndef f():\n    return 1\n\n\nclass C:\n    def m(self):\n        pass\n"
    check_python(py, 3, 5, "f")
    check_python(py, 9, 10, "C.m")
    with pytest.raises(AssertionError):
        check_python(py, 4, 5, "f")
    with pytest.raises(AssertionError):
        check_python(py, 9, 10, "m")
    md = "# A\n\ntext\n\n## B\n\nmore\n\n# C\n"
    check_heading(md, 1, 7, "A", "md")
    check_heading(md, 5, 7, "B", "md")
    with pytest.raises(AssertionError):
        check_heading(md, 5, 8, "B", "md")
    rst = "Title\n=====\n\nSub\n---\n\ntext\n\nOther\n=====\n"
    check_heading(rst, 4, 7, "Sub", "rst")
    check_heading(rst, 1, 7, "Title", "rst")
    go = "// Doc.\nfunc (u UUID) String() string {\n\treturn `}{`\n}\n\nfunc f() {}\n"
    check_brace(go, 2, 4, "UUID.String", "go")
    with pytest.raises(AssertionError):
        check_brace(go, 2, 3, "UUID.String", "go")  # the raw string's braces are not code
    rs = "/// Doc.\n#[inline]\npub fn parse<'a>(s: &'a str) -> &'a str {\n    let c = '{';\n    s\n}\n"
    check_brace(rs, 2, 6, "parse", "rust")
    with pytest.raises(AssertionError):
        check_brace(rs, 3, 6, "parse", "rust")  # leaves out #[inline] above
    c = "/* Look\n   f() does it. */\nint f(void) {\n    return '}';\n}\n"
    check_brace(c, 3, 5, "f", "c")
    with pytest.raises(AssertionError):
        check_brace(c, 2, 5, "f", "c")  # starts inside the comment
    rb = "class A\n  # Doc.\n  def f(x)\n    if x\n      1\n    end\n  end\n\n  def g = 2\nend\n"
    check_ruby(rb, 3, 7, "A.f")
    check_ruby(rb, 9, 9, "A.g")
    with pytest.raises(AssertionError):
        check_ruby(rb, 3, 6, "A.f")  # stops at the inner end
    with pytest.raises(AssertionError):
        check_ruby(rb, 2, 7, "A.f")  # starts at the comment
    js = '{\n  "a": 1,\n  "b": {\n    "c": [1, 2]\n  }\n}\n'
    check_json(js, 3, 5, "b")
    with pytest.raises(AssertionError):
        check_json(js, 4, 4, "c")
