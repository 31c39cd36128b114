"""The Microsoft Teams adapter (Bot Framework): endpoint, turns, auth, render."""

from __future__ import annotations

from bot.teams.endpoint import mount_teams

__all__ = ["mount_teams"]
