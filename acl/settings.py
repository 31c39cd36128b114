"""Settings of access control: GitHub credentials, OAuth, webhook secret, cache TTLs."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.errors import ConfigError


class AclSettings(BaseSettings):
    """How codeask talks to GitHub and where identity links and the audit log live."""

    model_config = SettingsConfigDict(env_prefix="CODEASK_", extra="ignore")

    github_api_url: str = "https://api.github.com"
    github_web_url: str = "https://github.com"
    github_token: str = ""
    github_app_id: str = ""
    github_app_private_key: str = ""  # PEM text
    github_app_private_key_path: Path | None = None
    github_installation_id: str = ""
    github_oauth_client_id: str = ""
    github_oauth_client_secret: str = ""
    github_oauth_redirect_url: str = ""
    github_webhook_secret: str = ""
    github_timeout_seconds: float = 10.0
    permission_ttl_seconds: int = 300
    link_state_ttl_seconds: int = 600

    def private_key_pem(self) -> str:
        """The App's private key, from the setting itself or the file it points to."""
        if self.github_app_private_key:
            return self.github_app_private_key
        if self.github_app_private_key_path is not None:
            try:
                return self.github_app_private_key_path.read_text()
            except OSError as exc:
                raise ConfigError(
                    f"Cannot read CODEASK_GITHUB_APP_PRIVATE_KEY_PATH "
                    f"({self.github_app_private_key_path}): {exc.strerror}"
                ) from exc
        return ""

    @property
    def uses_app_auth(self) -> bool:
        return bool(self.github_app_id and self.github_installation_id)

    @property
    def github_configured(self) -> bool:
        return self.uses_app_auth or bool(self.github_token)
