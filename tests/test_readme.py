"""The README stays true: its settings table is the settings classes, its commands exist."""

from __future__ import annotations

from pathlib import Path

from bot.cli.settings_doc import all_settings, with_table

ROOT = Path(__file__).resolve().parent.parent


def test_readme_settings_table_lists_every_setting() -> None:
    readme = (ROOT / "README.md").read_text()
    assert with_table(readme) == readme, "run: .venv/bin/python -m bot.cli.settings_doc README.md"
    names = [s.env for s in all_settings()]
    assert len(names) == len(set(names)), "two settings classes read the same variable"
    for required in ("CODEASK_DATA_DIR", "CODEASK_STORE", "CODEASK_EMBED_MODEL"):
        assert f"`{required}`" in readme


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make test" in ci
    assert "make demo" in readme
