"""The Slack adapter (slack-bolt AsyncApp): app, render, stream, threads, home."""

from __future__ import annotations

from bot.slack.app import slack_mount

__all__ = ["slack_mount"]
