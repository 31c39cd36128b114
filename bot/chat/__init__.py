"""Platform-free parts every chat adapter shares: admin commands, feedback, the link policy,
request checks, replay claims, what an answer shows of its sources and the HTTP plumbing."""

from __future__ import annotations

from bot.chat.commands import (
    CommandResult,
    Commands,
    Invoker,
    command_context,
    commands_for,
    is_admin,
)
from bot.chat.deliveries import claim_delivery, forget_delivery
from bot.chat.feedback import record_feedback, remove_feedback, vote_of
from bot.chat.links import (
    APP_TEXT,
    NO_LINKS,
    URL,
    LinkPolicy,
    answer_links,
    defang,
    inert,
    split_url,
    strip_controls,
)
from bot.chat.repositories import (
    ADDED_CLI,
    ADDED_REGISTERED,
    AdminRepo,
    admin_repos,
    searched_repo,
)
from bot.chat.request_checks import (
    SLACK_MAX_AGE_SECONDS,
    BadRequest,
    decode_utf8,
    parse_json_object,
    slack_body,
    verify_slack_signature,
)
from bot.chat.sources import (
    SHOWN_LINES,
    Excerpt,
    cited_sources,
    excerpt,
    is_notice,
    lead_text,
    searched_repos,
    source_row,
    uncited_sources,
)
from bot.chat.web import SERVICES, Mount, bad_request, error_response, read_body

__all__ = [
    "ADDED_CLI",
    "ADDED_REGISTERED",
    "APP_TEXT",
    "NO_LINKS",
    "SERVICES",
    "SHOWN_LINES",
    "SLACK_MAX_AGE_SECONDS",
    "URL",
    "AdminRepo",
    "BadRequest",
    "CommandResult",
    "Commands",
    "Excerpt",
    "Invoker",
    "LinkPolicy",
    "Mount",
    "admin_repos",
    "answer_links",
    "bad_request",
    "cited_sources",
    "claim_delivery",
    "command_context",
    "commands_for",
    "decode_utf8",
    "defang",
    "error_response",
    "excerpt",
    "forget_delivery",
    "inert",
    "is_admin",
    "is_notice",
    "lead_text",
    "parse_json_object",
    "read_body",
    "record_feedback",
    "remove_feedback",
    "searched_repo",
    "searched_repos",
    "slack_body",
    "source_row",
    "split_url",
    "strip_controls",
    "uncited_sources",
    "verify_slack_signature",
    "vote_of",
]
