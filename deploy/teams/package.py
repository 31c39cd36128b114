"""Build the Teams app package (``codeask-teams.zip``) to upload in Teams or the Developer Portal.

Fills every ``${{NAME}}`` in ``manifest.json`` from the environment and zips it with the
two icons:

    CODEASK_TEAMS_APP_ID=<bot app id> CODEASK_PUBLIC_URL=https://codeask.example.com \\
        python deploy/teams/package.py [OUTPUT.zip]
"""

from __future__ import annotations

import json
import os
import re
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"\$\{\{([A-Z0-9_]+)\}\}")
GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def render_manifest(template: str, env: dict[str, str]) -> str:
    missing = sorted({m for m in PLACEHOLDER.findall(template) if not env.get(m)})
    if missing:
        raise SystemExit(f"set {', '.join(missing)} to build the Teams package")
    text = PLACEHOLDER.sub(lambda m: env[m.group(1)].rstrip("/"), template)
    manifest = json.loads(text)
    if not GUID.match(manifest["id"]):
        raise SystemExit("CODEASK_TEAMS_APP_ID must be the bot's Microsoft App ID (a GUID)")
    if not manifest["developer"]["websiteUrl"].startswith("https://"):
        raise SystemExit("CODEASK_PUBLIC_URL must be an https URL")
    return text


def main(argv: list[str]) -> None:
    output = Path(argv[1]) if len(argv) > 1 else Path("codeask-teams.zip")
    manifest = render_manifest((HERE / "manifest.json").read_text(), dict(os.environ))
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("manifest.json", manifest)
        for icon in ("color.png", "outline.png"):
            package.write(HERE / icon, icon)
    print(f"wrote {output}")


if __name__ == "__main__":
    main(sys.argv)
