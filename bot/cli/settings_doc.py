"""Every ``CODEASK_*`` setting, gathered from the settings classes (for docs and checks)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from pydantic_settings import BaseSettings

SETTINGS_CLASSES = (
    "indexer.settings:IndexerSettings",
    "acl.settings:AclSettings",
    "bot.settings:BotSettings",
)
SECRET_SUFFIXES = ("_token", "_secret", "_password", "_key", "_key_path")


@dataclass(frozen=True)
class SettingDoc:
    env: str
    default: str
    owner: str
    secret: bool


def settings_classes() -> list[type[BaseSettings]]:
    classes = []
    for spec in SETTINGS_CLASSES:
        module, name = spec.split(":")
        classes.append(getattr(importlib.import_module(module), name))
    return classes


def all_settings() -> list[SettingDoc]:
    """One row per environment variable, in class then field order."""
    rows: list[SettingDoc] = []
    for cls in settings_classes():
        prefix = str(cls.model_config.get("env_prefix", ""))
        for name, field in cls.model_fields.items():
            alias = field.validation_alias
            if alias is not None and not isinstance(alias, str):
                continue  # standard variables (XDG_DATA_HOME) are not codeask settings
            env = (alias if isinstance(alias, str) else prefix + name).upper()
            default = field.get_default(call_default_factory=False)
            shown = "" if default is None else str(default)
            if name == "data_dir":
                shown = "$XDG_DATA_HOME/codeask"
            if isinstance(default, list):
                shown = ",".join(map(str, default))
            rows.append(
                SettingDoc(
                    env=env,
                    default=shown,
                    owner=cls.__name__,
                    secret=name.endswith(SECRET_SUFFIXES) or field.repr is False,
                )
            )
    return rows


def markdown_table() -> str:
    lines = ["| variable | default | read by |", "| --- | --- | --- |"]
    for row in all_settings():
        default = "(secret)" if row.secret and row.default else (row.default or "—")
        lines.append(f"| `{row.env}` | `{default}` | {row.owner} |".replace("`—`", "—"))
    return "\n".join(lines)


START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def with_table(readme: str) -> str:
    """``readme`` with the text between the settings-table markers regenerated."""
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{markdown_table()}\n{END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if len(sys.argv) > 1:  # python -m bot.cli.settings_doc README.md: rewrite the table in place
        target = Path(sys.argv[1])
        target.write_text(with_table(target.read_text()))
    else:
        print(markdown_table())
