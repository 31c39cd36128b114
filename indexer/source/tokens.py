"""Code-aware tokenization for BM25: identifiers are split and also kept whole."""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Words that carry no signal in a question about code; they are dropped from queries only.
STOPWORDS = frozenset(
    """a an and are as at be by can do does for from how i if in into is it its me my of on
    or our so that the their them then there these this to up us was we what when where which
    who why will with you your get got there's whats where's code function method class file
    implemented implement defined define work works happen happens use used using please
    find show tell should would could""".split()
)


def split_identifier(word: str) -> list[str]:
    """``parseHTTPRequest_v2`` → ``['parse', 'http', 'request', 'v2']`` (lower case)."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return [p for p in parts if p]


def code_tokens(text: str) -> list[str]:
    """Every identifier lower-cased whole, followed by its parts when it has several."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        whole = word.lower().strip("_")
        if not whole:
            continue
        out.append(whole)
        parts = split_identifier(word)
        if len(parts) > 1:
            out.extend(parts)
    return out


def query_terms(text: str) -> list[str]:
    """Distinct query tokens without stop words, in first-seen order."""
    seen: dict[str, None] = {}
    for tok in code_tokens(text):
        if tok not in STOPWORDS and len(tok) > 1:
            seen.setdefault(tok, None)
    return list(seen)


def identifiers_in(text: str) -> list[str]:
    """Tokens in a question that look like code identifiers (snake, camel, dotted, CONST)."""
    found = re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_]\w*", text)
    return [
        f
        for f in found
        if "." in f or "_" in f or re.search(r"[a-z][A-Z]", f) or (f.isupper() and len(f) > 2)
    ]
