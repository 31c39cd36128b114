"""Checks on a request's raw bytes, made before any parser (ours, bolt's, botbuilder's)
sees them: Slack's signature, strict UTF-8, JSON without deep nesting, and the shapes of
Slack's three kinds of request.

Pure functions; the HTTP shell turns :class:`BadRequest` into its ``status``. JSON is
scanned for nesting depth without recursion before ``json.loads`` runs, because the C
decoder recurses once per level and a body of ``[[[[…`` would otherwise exhaust the stack.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from indexer.errors import AccessDenied, InvalidInput

MAX_JSON_DEPTH = 64  # Slack blocks, Teams cards and GitHub payloads nest far less
MAX_FORM_FIELDS = 64
SLACK_MAX_AGE_SECONDS = 300  # Slack's documented window for X-Slack-Request-Timestamp
SLACK_JSON = "application/json"
SLACK_FORM = "application/x-www-form-urlencoded"
SLACK_COMMAND_FIELDS = ("command", "team_id", "user_id", "channel_id")
# What our listeners read from an event without checking it is there (a message is read
# only when it is a question: a person's direct message, see SlackBot._on_message).
SLACK_EVENT_FIELDS = {
    "app_mention": ("channel", "ts"),
    "app_home_opened": ("user",),
    "question": ("channel", "ts", "user"),
}
# Where bolt's context builders look for ids (a string, or an object with an "id") and
# which nested objects they search in turn.
_ID_FIELDS = ("enterprise", "team", "user", "channel")
_NESTED_OBJECTS = ("event", "message", "previous_message", "item", "assistant_thread", "view")

# A JSON string (closing quote optional, so an unterminated one ends the scan in linear
# time) or a bracket; brackets inside strings are skipped with the string.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class BadRequest(InvalidInput):
    """A request refused before parsing; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode_utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(400, "the body is not UTF-8") from None


def check_json_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """BadRequest when arrays and objects nest deeper than ``max_depth``."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                raise BadRequest(400, f"the JSON body nests deeper than {max_depth} levels")
        elif bracket in "]}":
            depth -= 1


def parse_json_object(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """The JSON object in ``raw``; BadRequest (400) for anything else, however malformed."""
    text = decode_utf8(raw) if isinstance(raw, bytes) else raw
    check_json_depth(text, max_depth)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise BadRequest(400, "the body is not JSON") from None
    if _SURROGATE_ESCAPE.search(text):
        try:  # half a surrogate pair decodes, then fails wherever the text is encoded
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest(400, "the JSON body holds an unpaired surrogate") from None
    if not isinstance(value, dict):
        raise BadRequest(400, "the body is not a JSON object")
    return value


def verify_slack_signature(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> str:
    """The verified ``X-Slack-Signature`` (v0 HMAC-SHA256 of ``v0:{timestamp}:{body}``);
    AccessDenied when it is missing, forged or older than five minutes."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    # isdigit alone accepts other scripts' digits, and int() refuses over 4300 of them.
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise AccessDenied("missing or malformed X-Slack-Request-Timestamp")
    if abs(now - int(timestamp)) > SLACK_MAX_AGE_SECONDS:
        raise AccessDenied("X-Slack-Request-Timestamp is outside the five-minute window")
    if not signature.isascii():  # surrogate-escaped header bytes cannot be compared
        raise AccessDenied("bad X-Slack-Signature")
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        raise AccessDenied("bad X-Slack-Signature")
    return signature


def slack_body(content_type: str, text: str) -> dict[str, Any]:
    """The body bolt will parse from ``text``, checked to be an event (JSON), a slash
    command (a form) or an interaction (a form whose ``payload`` is JSON)."""
    media = content_type.split(";")[0]  # bolt compares exactly this, case and all
    if media == SLACK_JSON:
        body = parse_json_object(text)
        _check_envelope(body)
        return body
    if media != SLACK_FORM:
        raise BadRequest(415, "expected application/json or application/x-www-form-urlencoded")
    if text.startswith("{"):
        raise BadRequest(400, "a form body cannot start with '{'")  # bolt would read JSON
    try:
        pairs = parse_qsl(
            text, keep_blank_values=True, errors="strict", max_num_fields=MAX_FORM_FIELDS
        )
    except ValueError:  # UnicodeDecodeError for bad escapes, too many fields
        raise BadRequest(400, "the form is malformed") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise BadRequest(400, "the form repeats a field")
    if "payload" in fields:
        body = parse_json_object(fields["payload"])
        _check_envelope(body)
        _check_interaction(body)
        return body
    if fields.get("ssl_check") == "1":
        return fields
    missing = [name for name in SLACK_COMMAND_FIELDS if not fields.get(name)]
    if missing:
        raise BadRequest(400, f"the slash command lacks {', '.join(missing)}")
    return fields


def _check_envelope(body: dict[str, Any]) -> None:
    if not isinstance(body.get("type"), str):
        raise BadRequest(400, "the payload has no type")
    _check_ids(body)
    if body["type"] == "event_callback":
        event = body.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise BadRequest(400, "the event callback has no event type")
        kind = "question" if _is_question(event) else event["type"]
        _require_text(event, SLACK_EVENT_FIELDS.get(kind, ()), "the event")
    urls = body.get("response_urls")
    if urls is not None and not _list_of_objects(urls):
        raise BadRequest(400, "response_urls is not a list of objects")


def _check_ids(obj: dict[str, Any]) -> None:
    """Every place bolt reads an id from is a string or an object with a string id."""
    for name in _ID_FIELDS:
        value = obj.get(name)
        if isinstance(value, dict):
            if value.get("id") is not None and not isinstance(value["id"], str):
                raise BadRequest(400, f"{name}.id is not a string")
        elif value is not None and not isinstance(value, str):
            raise BadRequest(400, f"{name} is neither a string nor an object")
    authorizations = obj.get("authorizations")
    if authorizations is not None:
        if not _list_of_objects(authorizations):
            raise BadRequest(400, "authorizations is not a list of objects")
        for item in authorizations[:1]:
            _check_ids(item)
    for name in _NESTED_OBJECTS:
        value = obj.get(name)
        if value is not None and not isinstance(value, dict):
            raise BadRequest(400, f"{name} is not an object")
        if value is not None:  # as deep as the JSON nests, at most
            _check_ids(value)


def _check_interaction(body: dict[str, Any]) -> None:
    if body["type"] not in ("block_actions", "interactive_message"):
        return
    user = body.get("user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str):
        raise BadRequest(400, "the interaction names no user")
    actions = body.get("actions")
    if not _list_of_objects(actions) or not actions:
        raise BadRequest(400, "the interaction has no actions")
    for action in actions:
        if not isinstance(action.get("action_id", ""), str):
            raise BadRequest(400, "an action_id is not a string")


def _is_question(event: dict[str, Any]) -> bool:
    return (
        event["type"] == "message"
        and event.get("channel_type") == "im"
        and not event.get("bot_id")
        and event.get("subtype") in (None, "file_share")
    )


def _require_text(obj: dict[str, Any], names: tuple[str, ...], what: str) -> None:
    missing = [name for name in names if not isinstance(obj.get(name), str)]
    if missing:
        raise BadRequest(400, f"{what} lacks {', '.join(missing)}")


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)
