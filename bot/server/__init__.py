"""The aiohttp ``codeask serve`` app: adapters mount on it; GitHub webhooks, health, reconcile."""

from __future__ import annotations

from bot.server.app import create_app, run, run_reconcile

__all__ = ["create_app", "run", "run_reconcile"]
