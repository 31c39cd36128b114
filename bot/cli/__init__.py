"""The ``codeask`` command line: short commands over the face of each package."""

from bot.cli.app import app, main

__all__ = ["app", "main"]
