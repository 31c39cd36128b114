"""The fixed messages the preview shows, each built by the product's own renderers.

Only the inputs are fixed here (answers, sources, Home data); the JSON comes from
``bot.slack`` and ``bot.teams`` every run, so a renderer change shows up in the pictures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.answer import Answer, Source
from bot.answer.asking import LLM_DOWN_TEXT
from bot.answer.result import not_found_answer, source_list
from bot.chat.commands import help_result
from bot.chat.repositories import ADDED_CLI, ADDED_REGISTERED
from bot.slack.app import COMMAND
from bot.slack.home import HomeData, RepoFreshness, home_view
from bot.slack.render import SlackMessage, answer_messages, help_message
from bot.teams.render import answer_card, help_card, text_card
from bot.teams.turns import WELCOME
from indexer.models import Chunk

WEB = "https://github.com"
COMMIT = "3f9c2a1e7b4d5c6a8e9f0b1c2d3e4f5a6b7c8d9e"
QUESTION_ID = "preview"

ANSWER_TEXT = """\
## How retries work

The HTTP client retries **`send()`** up to five times before it gives up [1]. The delay
between attempts comes from `RetryPolicy.backoff_delay` [2]:

- The first retry waits `base_delay` (0.5 s by default)
- Each later one doubles it:
  - capped at `max_delay` (30 s) [2]
  - with up to 10% random jitter, so clients do not retry in step
- Only *idempotent* requests are retried; a `POST` is not [1]

> A retried `POST` could charge a card twice, so payments use an idempotency key instead [1].

### The code

```python
def backoff_delay(self, attempt: int) -> float:
    delay = min(self.max_delay, self.base_delay * 2 ** attempt)
    return delay * random.uniform(0.9, 1.1)
```

The Go worker mirrors it:

```go
func Backoff(attempt int) time.Duration {
    d := math.Min(maxDelay, baseDelay*math.Pow(2, float64(attempt)))
    return time.Duration(d * float64(time.Second))
}
```

### Settings

| Setting | Default | Where |
|---|---|---|
| `max_attempts` | 5 | `config.py` [1] |
| **`base_delay`** | 0.5 s | `retry.py` [2] |
| `max_delay` | 30 s | `retry.py` [2] |

To change them, set `PAYMENTS_RETRY_MAX_ATTEMPTS` and friends; see [the repository](https://github.com/acme/payments) [1][2].
"""

NOT_FOUND_QUESTION = "where do we rotate the webhook signing secret?"
DOWN_QUESTION = "how is the retry delay computed?"


@dataclass(frozen=True)
class View:
    """One picture: ``payload`` is what the renderer produced, as the platform gets it."""

    name: str  # file stem: slack-answer, teams-help-admin, ...
    platform: str  # slack | teams
    kind: str  # messages (Slack), home (Slack), card (Teams)
    payload: Any
    note: str = ""  # shown above the message: "Only visible to you"
    question: str = ""  # the asker's message shown before the answer


def _source(n: int, path: str, symbol: str, start: int, text: str, language: str) -> Source:
    chunk = Chunk(
        repo="acme/payments",
        path=path,
        start_line=start,
        end_line=start + text.count("\n"),
        text=text,
        symbol=symbol,
        language=language,
        kind="source",
        visibility="private",
        commit=COMMIT,
    )
    return Source(n, chunk, 1.0 / n)


SOURCES = [
    _source(
        1,
        "payments/http/client.py",
        "Client.send",
        88,
        "def send(self, request):\n    for attempt in range(self.config.max_attempts):\n"
        "        ...",
        "python",
    ),
    _source(
        2,
        "payments/http/retry.py",
        "RetryPolicy.backoff_delay",
        41,
        "def backoff_delay(self, attempt: int) -> float:\n"
        "    delay = min(self.max_delay, self.base_delay * 2 ** attempt)\n"
        "    return delay * random.uniform(0.9, 1.1)",
        "python",
    ),
]
CLOSEST = [
    _source(
        1,
        "payments/webhooks/verify.py",
        "verify_signature",
        12,
        "def verify_signature(...)",
        "python",
    ),
    _source(2, "deploy/secrets.yaml", "", 1, "webhookSecret: ...", "yaml"),
]


def answers() -> dict[str, Answer]:
    """The answered, not-found and model-down answers, as the asker builds them."""
    answered = Answer(
        "how does the client retry failed requests?",
        ANSWER_TEXT,
        SOURCES,
        used_llm=True,
        mode="agent",
    )
    not_found = not_found_answer(NOT_FOUND_QUESTION, CLOSEST)
    # What Asker._without_model returns when the language model cannot be reached.
    down_text = f"{LLM_DOWN_TEXT}\n{source_list(SOURCES)}"
    down = Answer(
        DOWN_QUESTION, down_text, SOURCES, found=False, unavailable=True, lead=LLM_DOWN_TEXT
    )
    return {"answer": answered, "not-found": not_found, "model-down": down}


def home_data() -> HomeData:
    """An admin's Home tab: a linked account, three repositories, one failure."""
    return HomeData(
        github_login="maria-k",
        repos=[
            RepoFreshness("acme/payments", "private", COMMIT[:12], "4 min ago"),
            RepoFreshness("acme/web", "public", "9e8d7c6b5a49", "2 h ago", "3 commits behind"),
            RepoFreshness("acme/infra", "private", "", "never"),
        ],
        admin=True,
        # The lines gather_home writes from bot.chat.admin_repos.
        index_status=[
            f"acme/infra: error, main@-, indexed never, 0 chunks, {ADDED_REGISTERED}",
            f"acme/payments: ready, main@{COMMIT[:12]}, indexed 4 min ago, 18204 chunks, "
            f"{ADDED_REGISTERED}",
            f"acme/web: ready, main@9e8d7c6b5a49, indexed 2 h ago, 6911 chunks, {ADDED_REGISTERED}",
            f"local/docs-site: ready, 51c0ffee4a2b, indexed 3 d ago, 412 chunks, {ADDED_CLI}",
        ],
        failures=["acme/infra: clone failed: repository not found or no access"],
        queued_jobs=1,
    )


def _slack_messages(messages: list[SlackMessage]) -> list[dict[str, Any]]:
    return [{"text": m.text, "blocks": m.blocks} for m in messages]


def slack_views() -> list[View]:
    out = []
    for key, answer in answers().items():
        messages = _slack_messages(answer_messages(answer, QUESTION_ID, WEB))
        out.append(View(f"slack-{key}", "slack", "messages", messages, question=answer.question))
    for admin in (False, True):
        help_reply = _slack_messages([help_message(help_result(admin=admin).rows, COMMAND)])
        name = f"slack-help-{'admin' if admin else 'user'}"
        out.append(View(name, "slack", "messages", help_reply, note="Only visible to you"))
    out.append(View("slack-home", "slack", "home", home_view(home_data())))
    return out


def teams_views() -> list[View]:
    out = []
    for key, answer in answers().items():
        card = answer_card(answer, QUESTION_ID, web_base=WEB)
        out.append(View(f"teams-{key}", "teams", "card", card, question=answer.question))
    for admin in (False, True):
        card = help_card(help_result(admin=admin).rows)
        out.append(View(f"teams-help-{'admin' if admin else 'user'}", "teams", "card", card))
    # Teams has no Home tab: a new personal chat gets the welcome card instead.
    out.append(View("teams-welcome", "teams", "card", text_card(WELCOME)))
    return out


def all_views() -> list[View]:
    return [*slack_views(), *teams_views()]
