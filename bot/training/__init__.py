"""Training a reranker on the organization's own code: pair mining, training, model card."""

from __future__ import annotations

from bot.training.commands import train_app

__all__ = ["train_app"]
