"""Split a source file into structural chunks with exact line ranges.

Every chunk's ``text`` is exactly lines ``start_line..end_line`` of the decoded file.
Code is split along tree-sitter definitions (see ``languages.GRAMMARS``), Markdown on
headings, config files by top-level key, anything else into line windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import Any

from indexer.languages import GRAMMARS, IMPORT_LINE, Grammar, kind_for
from indexer.models import Chunk

MAX_LINES = 120  # a definition longer than this is split at inner block boundaries
CONTAINER_SPLIT_LINES = 60  # a class longer than this is chunked member by member
TINY_LINES = 2  # one- and two-line neighbours (constants, imports) are merged
MERGED_MAX_LINES = 30
WINDOW_LINES = 50
WHOLE_CONFIG_LINES = 60
CHUNKER_VERSION = "1"

_NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "field_identifier",
        "property_identifier",
        "constant",
        "name",
        "namespace_identifier",
        "scoped_identifier",
        "qualified_identifier",
        "operator_name",
        "destructor_name",
    }
)
_FUNCTION_VALUES = frozenset(
    {"function", "function_expression", "arrow_function", "generator_function", "class"}
)
_ASSIGNED_NAME = re.compile(
    r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?([A-Za-z_$][\w$.]*)\s*[:=]"
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class _Span:
    start: int  # 0-based row, inclusive
    end: int  # 0-based row, inclusive
    symbol: str
    scope: tuple[str, ...] = field(default_factory=tuple)  # enclosing signatures


@cache
def _parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def split_lines(text: str) -> list[str]:
    """Lines of a file as chunk texts see them (a final newline does not add a line)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def chunk_file(
    path: str,
    language: str,
    data: bytes,
    *,
    repo: str = "",
    visibility: str = "private",
    commit: str = "",
    blob_sha: str = "",
) -> list[Chunk]:
    """Chunks of one file; broken UTF-8 is decoded with replacement characters."""
    text = data.decode("utf-8", errors="replace")
    lines = split_lines(text)
    if not text.strip():
        return []
    if language in GRAMMARS:
        spans = _code_spans(text, lines, GRAMMARS[language], language)
    elif language == "markdown":
        spans = _markdown_spans(path, lines)
    elif language in ("json", "yaml", "toml"):
        spans = _config_spans(path, lines, language)
    else:
        spans = _window_spans(lines, 0, len(lines) - 1, PurePosixPath(path).name)
    imports = [ln.strip() for ln in lines[:200] if IMPORT_LINE.match(ln)][:8]
    kind = kind_for(path, language)
    chunks = []
    for span in spans:
        header_lines = [f"# {path}", *span.scope]
        if imports:
            header_lines.append("imports: " + "; ".join(imports))
        chunks.append(
            Chunk(
                repo=repo,
                path=path,
                start_line=span.start + 1,
                end_line=span.end + 1,
                text="\n".join(lines[span.start : span.end + 1]),
                symbol=span.symbol,
                language=language,
                kind=kind,
                header="\n".join(header_lines),
                visibility=visibility,
                commit=commit,
                blob_sha=blob_sha,
            )
        )
    return chunks


# --- code -------------------------------------------------------------------------------


def _code_spans(text: str, lines: list[str], grammar: Grammar, language: str) -> list[_Span]:
    try:
        tree = _parser(language).parse(text.encode("utf-8"))
    except Exception:  # a grammar that cannot parse still leaves the file searchable
        return _window_spans(lines, 0, len(lines) - 1, "")
    walker = _CodeWalker(lines, grammar, language)
    walker.visit(tree.root_node, ())
    spans = sorted(walker.spans, key=lambda s: (s.start, s.end))
    spans = _drop_nested(spans)
    spans += _gap_spans(lines, spans, 0, len(lines) - 1, (), "")
    spans.sort(key=lambda s: (s.start, s.end))
    return _merge_tiny(spans, lines)


def _end_row(node: Any) -> int:
    end_row: int = node.end_point[0]
    if node.end_point[1] == 0 and end_row > node.start_point[0]:
        end_row -= 1
    return end_row


def _text(node: Any) -> str:
    raw: bytes = node.text or b""
    return raw.decode("utf-8", "replace")


class _CodeWalker:
    def __init__(self, lines: list[str], grammar: Grammar, language: str) -> None:
        self.lines = lines
        self.grammar = grammar
        self.language = language
        self.spans: list[_Span] = []

    def visit(self, node: Any, scope: tuple[tuple[str, str], ...]) -> None:
        for child in node.named_children:
            kind = child.type
            if kind in self.grammar.wrappers:
                inner = self._inner_definition(child)
                if inner is not None:
                    self.definition(inner, child, scope)
                else:
                    self._maybe_value_definition(child, scope)
            elif kind in self.grammar.definitions:
                self.definition(child, child, scope)
            elif self._maybe_value_definition(child, scope):
                continue
            elif child.end_point[0] > child.start_point[0] and kind not in self.grammar.comments:
                self.visit(child, scope)

    def _inner_definition(self, wrapper: Any) -> Any | None:
        for child in wrapper.named_children:
            if child.type in self.grammar.definitions:
                return child
            if child.type in self.grammar.wrappers:
                return self._inner_definition(child)
        return None

    def _maybe_value_definition(self, node: Any, scope: tuple[tuple[str, str], ...]) -> bool:
        """``const f = () => …``, ``app.use = function …``, ``module.exports = class …``."""
        if self.language not in ("javascript", "typescript", "tsx"):
            return False
        target = node
        if target.type == "export_statement":
            decl = target.child_by_field_name("declaration")
            if decl is None:
                return False
            target = decl
        if target.type in ("lexical_declaration", "variable_declaration"):
            for decl in target.named_children:
                value = decl.child_by_field_name("value")
                name = decl.child_by_field_name("name")
                if value is not None and name is not None and value.type in _FUNCTION_VALUES:
                    self.definition(decl, node, scope, name=_text(name), value=value)
                    return True
            return False
        if target.type == "expression_statement" and target.named_children:
            expr = target.named_children[0]
            if expr.type == "assignment_expression":
                left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
                if left is not None and right is not None and right.type in _FUNCTION_VALUES:
                    self.definition(expr, node, scope, name=_text(left), value=right)
                    return True
        return False

    def definition(
        self,
        node: Any,
        outer: Any,
        scope: tuple[tuple[str, str], ...],
        name: str | None = None,
        value: Any | None = None,
    ) -> None:
        start = self._extend_over_prefixes(outer)
        end = _end_row(outer)
        if node.type in self.grammar.sibling_body:
            sibling = outer.next_named_sibling
            if sibling is not None and sibling.type == "function_body":
                end = _end_row(sibling)
        name = name or self._name_of(node) or node.type
        qualified = ".".join([s[0] for s in scope] + [name])
        signature = self.lines[node.start_point[0]].strip()[:200]
        scope_sigs = tuple(s[1] for s in scope)
        size = end - start + 1
        is_container = node.type in self.grammar.containers or (
            value is not None and value.type == "class"
        )
        if is_container and size > CONTAINER_SPLIT_LINES:
            before = len(self.spans)
            self.visit(value if value is not None else node, (*scope, (name, signature)))
            members = sorted(self.spans[before:], key=lambda s: s.start)
            gaps = _gap_spans(self.lines, members, start, end, (*scope_sigs, signature), qualified)
            self.spans.extend(gaps)
            if not members and not gaps:
                self.spans.append(_Span(start, end, qualified, scope_sigs))
        elif size > MAX_LINES:
            self.spans.extend(self._split_large(node, start, end, qualified, scope_sigs))
        else:
            self.spans.append(_Span(start, end, qualified, scope_sigs))

    def _extend_over_prefixes(self, node: Any) -> int:
        start: int = node.start_point[0]
        prev = node.prev_named_sibling
        allowed = self.grammar.comments | self.grammar.prefixes
        while prev is not None and prev.type in allowed and _end_row(prev) >= start - 1:
            row = prev.start_point[0]
            if self.lines[row][: prev.start_point[1]].strip():
                break  # a trailing comment of the previous statement
            start = row
            prev = prev.prev_named_sibling
        return start

    def _name_of(self, node: Any) -> str | None:
        if node.type == "method_declaration" and self.language == "go":
            receiver = node.child_by_field_name("receiver")
            method = node.child_by_field_name("name")
            if receiver is not None and method is not None:
                rtype = re.findall(r"[A-Za-z_]\w*", _text(receiver))
                return f"{rtype[-1]}.{_text(method)}" if rtype else _text(method)
        if node.type == "impl_item":
            impl_type = node.child_by_field_name("type")
            trait = node.child_by_field_name("trait")
            if impl_type is not None:
                return _text(impl_type) if trait is None else f"{_text(impl_type)}"
        if node.type == "type_declaration":
            for child in node.named_children:
                name = child.child_by_field_name("name")
                if name is not None:
                    return _text(name)
        for field_name in ("name", "declarator"):
            child = node.child_by_field_name(field_name)
            depth = 0
            while child is not None and depth < 6:
                if child.type in _NAME_TYPES:
                    return _text(child)
                inner = child.child_by_field_name("declarator") or child.child_by_field_name("name")
                if inner is None:
                    found = next((c for c in child.named_children if c.type in _NAME_TYPES), None)
                    return _text(found) if found is not None else None
                child = inner
                depth += 1
        for child in node.named_children:
            if child.type in _NAME_TYPES:
                return _text(child)
            if child.type in ("function_signature", "method_signature"):
                return self._name_of(child)
        return None

    def _split_large(
        self, node: Any, start: int, end: int, symbol: str, scope: tuple[str, ...]
    ) -> list[_Span]:
        """Pieces of at most MAX_LINES, cut between the body's statements when possible."""
        body = node.child_by_field_name("body")
        if body is None and node.named_children:
            body = node.named_children[-1]
        cuts = [] if body is None else [_end_row(c) for c in body.named_children]
        pieces: list[_Span] = []
        piece_start = start
        last_ok = None
        for cut in cuts:
            if cut >= end:
                break
            if cut - piece_start + 1 > MAX_LINES and last_ok is not None:
                pieces.append(_Span(piece_start, last_ok, symbol, scope))
                piece_start = last_ok + 1
            last_ok = cut
        pieces.append(_Span(piece_start, end, symbol, scope))
        out: list[_Span] = []
        for piece in pieces:
            if piece.end - piece.start + 1 > 2 * MAX_LINES:
                out.extend(
                    _window_spans(self.lines, piece.start, piece.end, symbol, scope, MAX_LINES)
                )
            else:
                out.append(piece)
        return out


def _drop_nested(spans: list[_Span]) -> list[_Span]:
    """Keep the outermost of spans that contain one another (sorted by start)."""
    kept: list[_Span] = []
    for span in spans:
        if kept and span.start >= kept[-1].start and span.end <= kept[-1].end:
            continue
        kept.append(span)
    return kept


def _gap_spans(
    lines: list[str],
    covered: list[_Span],
    start: int,
    end: int,
    scope: tuple[str, ...],
    symbol: str,
) -> list[_Span]:
    """Chunks for the non-blank lines in ``start..end`` that no span covers."""
    taken = [False] * (end - start + 1)
    for span in covered:
        for row in range(max(span.start, start), min(span.end, end) + 1):
            taken[row - start] = True
    out: list[_Span] = []
    row = start
    while row <= end:
        if taken[row - start] or not lines[row].strip():
            row += 1
            continue
        first = row
        while row <= end and not taken[row - start]:
            row += 1
        last = row - 1
        while not lines[last].strip():
            last -= 1
        for piece in _window_spans(lines, first, last, symbol, scope):
            if not symbol:
                piece.symbol = _assigned_names(lines[piece.start : piece.end + 1])
            out.append(piece)
    return out


def _assigned_names(block: list[str]) -> str:
    names = []
    for line in block:
        if line[:1].isspace():
            continue
        m = _ASSIGNED_NAME.match(line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
        if len(names) == 3:
            break
    return ", ".join(names) if names else "<module>"


def _merge_tiny(spans: list[_Span], lines: list[str]) -> list[_Span]:
    """Merge runs of tiny neighbouring spans (one-line constants, short helpers)."""
    merged: list[_Span] = []
    for span in spans:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and span.end - span.start + 1 <= TINY_LINES
            and prev.end - prev.start + 1 <= MERGED_MAX_LINES - TINY_LINES
            and span.scope == prev.scope
            and span.start > prev.end
            and all(not ln.strip() for ln in lines[prev.end + 1 : span.start])
            and span.start - prev.end <= 2
            and (prev.end - prev.start + 1 <= TINY_LINES or ", " in prev.symbol)
        ):
            if span.symbol not in prev.symbol.split(", "):
                prev.symbol = f"{prev.symbol}, {span.symbol}"
            prev.end = span.end
            continue
        merged.append(_Span(span.start, span.end, span.symbol, span.scope))
    return merged


def _window_spans(
    lines: list[str],
    start: int,
    end: int,
    symbol: str,
    scope: tuple[str, ...] = (),
    size: int = WINDOW_LINES,
) -> list[_Span]:
    """Windows of at most ``size`` lines, preferring to end just before a blank line."""
    out: list[_Span] = []
    row = start
    while row <= end:
        stop = min(row + size - 1, end)
        if stop < end:
            for cand in range(stop, row + size // 2, -1):
                if not lines[cand + 1].strip():
                    stop = cand
                    break
        while row <= stop and not lines[row].strip():
            row += 1
        last = stop
        while last >= row and not lines[last].strip():
            last -= 1
        if last >= row:
            out.append(_Span(row, last, symbol, scope))
        row = stop + 1
    return out


# --- markdown and config ----------------------------------------------------------------


def _markdown_spans(path: str, lines: list[str]) -> list[_Span]:
    stem = PurePosixPath(path).stem
    headings: list[tuple[int, int, str]] = []  # row, level, title
    fenced = False
    for row, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            headings.append((row, len(m.group(1)), m.group(2)))
    if not headings:
        return _window_spans(lines, 0, len(lines) - 1, stem)
    spans: list[_Span] = []
    if headings[0][0] > 0:
        spans += _window_spans(lines, 0, headings[0][0] - 1, stem)
    chain: list[tuple[int, str]] = []
    for i, (row, level, title) in enumerate(headings):
        chain = [c for c in chain if c[0] < level] + [(level, title)]
        titles = [t for lvl, t in chain if lvl > 1] or [title]
        symbol = " > ".join([stem, *titles])
        end = headings[i + 1][0] - 1 if i + 1 < len(headings) else len(lines) - 1
        while end > row and not lines[end].strip():
            end -= 1
        spans += _window_spans(lines, row, end, symbol, size=MAX_LINES)
    return _merge_tiny(spans, lines)


_YAML_KEY = re.compile(r"^([A-Za-z0-9_\"'][^:#]*?):(\s|$)")
_TOML_TABLE = re.compile(r"^\s*\[\[?([^\]]+)\]\]?")
_JSON_KEY = re.compile(r'^\s{0,4}"([^"]+)"\s*:')


def _config_spans(path: str, lines: list[str], language: str) -> list[_Span]:
    name = PurePosixPath(path).name
    if len(lines) <= WHOLE_CONFIG_LINES:
        return _window_spans(lines, 0, len(lines) - 1, name, size=WHOLE_CONFIG_LINES)
    json_indent = _json_key_indent(lines) if language == "json" else None
    starts: list[tuple[int, str]] = []
    for row, line in enumerate(lines):
        if language == "yaml":
            m = _YAML_KEY.match(line)
        elif language == "toml":
            m = _TOML_TABLE.match(line)
        else:
            indent = len(line) - len(line.lstrip())
            m = _JSON_KEY.match(line) if indent == json_indent else None
        if m:
            starts.append((row, m.group(1).strip("\"' ")))
    if not starts:
        return _window_spans(lines, 0, len(lines) - 1, name)
    spans: list[_Span] = []
    if starts[0][0] > 0:
        spans += _window_spans(lines, 0, starts[0][0] - 1, name)
    for i, (row, key) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
        spans += _window_spans(lines, row, end, f"{name} > {key}", size=MAX_LINES)
    return _merge_tiny(spans, lines)


def _json_key_indent(lines: list[str]) -> int | None:
    """Indentation of the top-level object's keys: that of the first key line."""
    for line in lines:
        if _JSON_KEY.match(line):
            return len(line) - len(line.lstrip())
    return None
