"""The sources of a Teams answer card: one row per cited source, and "Show sources".

"Show sources" is an ``Action.ShowCard``: a view inside the card, so it needs no round
trip and holds nothing but the answer's own sources (chosen for the card's audience).
Each source shows its row, up to :data:`bot.chat.SHOWN_LINES` cited lines in a
``CodeBlock`` numbered from the range's first line, and a "View on GitHub" button to
the commit-pinned lines the application built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.answer import Source
from bot.chat import answer_links, excerpt, searched_repos, source_row
from bot.teams.elements import Element, code_language, escape, text_block

SHOW_SOURCES = "Show sources"

_text = text_block


def searched_text(repos: Sequence[str]) -> str:
    """``Searched: a/b, c/d and 3 more``: the repositories of the answer's place."""
    names, more = searched_repos(repos)
    return (
        "Searched: " + ", ".join(escape(n) for n in names) + (f" and {more} more" if more else "")
    )


def sources_view(sources: list[Source], web_base: str, *, code: bool) -> dict[str, Any]:
    """ "Show sources": every source's row, cited lines (numbered) and GitHub link."""
    links = answer_links(sources, web_base)
    items: list[Element] = []
    for s in sources:
        where, symbol, repo = source_row(s)
        items.append(_text(f"**[{s.number}]** {escape(where)}", spacing="Medium"))
        items.append(_text(escape(" · ".join(p for p in (symbol, repo) if p)), subtle=True))
        if code:
            shown = excerpt(s, links)
            items.append(
                {
                    "type": "CodeBlock",
                    "codeSnippet": "\n".join(shown.lines),
                    "language": code_language(s.chunk.language),
                    "startLineNumber": shown.first_line,
                }
            )
            if shown.more:
                items.append(_text(f"… {shown.more} more lines in the cited range", subtle=True))
        url = source_url(s, web_base)
        if url.startswith(("http://", "https://")):
            items.append(
                {
                    "type": "ActionSet",
                    "actions": [{"type": "Action.OpenUrl", "title": "View on GitHub", "url": url}],
                }
            )
    return {
        "type": "Action.ShowCard",
        "title": SHOW_SOURCES,
        "card": {"type": "AdaptiveCard", "body": items},
    }


def source_fact(source: Source, web_base: str) -> str:
    """``[path:start-end](pinned link) · symbol · repo``."""
    where, symbol, repo = source_row(source)
    rest = "".join(f" · {escape(p)}" for p in (symbol, repo) if p)
    return f"[{escape(where)}]({source_url(source, web_base)}){rest}"


def source_url(source: Source, web_base: str) -> str:
    """The commit-pinned link to the source's lines, safe inside a Markdown link."""
    return safe_url(source.link(web_base))


def safe_url(url: str) -> str:
    # Spaces and parentheses would end a Markdown link early.
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
