"""Bot Framework authentication for the Teams adapter, configured from ``BotSettings``.

Incoming: the SDK's own validation (``BotFrameworkAuthenticationFactory``, parameterized
form) checks every request's JWT against the OpenID metadata at
``teams_openid_metadata_url``: signature, issuer ``teams_token_issuer``, audience = our app
id and the ``serviceurl`` claim. Those parameters are the SDK's supported way to point it
at a sovereign cloud, and the way tests point it at a local key server.

Outgoing: replies carry a token from the OAuth2 client-credentials grant at
``{teams_login_url}/oauth2/v2.0/token`` (the request MSAL makes for the SDK's default
credentials). It is done here, through the SDK's ``ServiceClientCredentialsFactory``
extension point, because MSAL only accepts https authorities on Microsoft hosts, which
would leave the reply path untestable without the internet.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
from botbuilder.schema import CallerIdConstants
from botframework.connector.auth import (
    AppCredentials,
    AuthenticationConstants,
    BotFrameworkAuthentication,
    BotFrameworkAuthenticationFactory,
    ServiceClientCredentialsFactory,
)

from bot.settings import BotSettings
from indexer.errors import ConfigError, UpstreamUnavailable

TOKEN_PATH = "/oauth2/v2.0/token"
LOGIN_BASE = "https://login.microsoftonline.com"
RENEW_BEFORE_SECONDS = 300  # fetch a new token this long before the old one expires


def login_url(settings: BotSettings) -> str:
    """The authority that issues the bot's outgoing tokens."""
    if settings.teams_login_url:
        return settings.teams_login_url.rstrip("/")
    tenant = settings.teams_tenant_id or AuthenticationConstants.DEFAULT_CHANNEL_AUTH_TENANT
    return f"{LOGIN_BASE}/{tenant}"


def bot_framework_authentication(settings: BotSettings) -> BotFrameworkAuthentication:
    """Incoming-request validation and outgoing credentials for the configured bot."""
    if not (settings.teams_app_id and settings.teams_app_password):
        raise ConfigError(
            "Teams is not configured: set CODEASK_TEAMS_APP_ID and CODEASK_TEAMS_APP_PASSWORD."
        )
    login = login_url(settings)
    credentials = ClientCredentialsFactory(
        settings.teams_app_id, settings.teams_app_password, login + TOKEN_PATH
    )
    return BotFrameworkAuthenticationFactory.create(
        validate_authority=True,
        to_channel_from_bot_login_url=login,
        to_channel_from_bot_oauth_scope=settings.teams_oauth_scope,
        to_bot_from_channel_token_issuer=settings.teams_token_issuer,
        oauth_url=AuthenticationConstants.OAUTH_URL,
        to_bot_from_channel_open_id_metadata_url=settings.teams_openid_metadata_url,
        to_bot_from_emulator_open_id_metadata_url=settings.teams_emulator_openid_metadata_url,
        caller_id=CallerIdConstants.public_azure_channel,
        credential_factory=credentials,
    )


@dataclass
class _Token:
    value: str
    expires_at: float


class TokenClient:
    """Client-credentials tokens per scope, cached until shortly before they expire."""

    def __init__(self, app_id: str, password: str, token_url: str, timeout: float = 10.0) -> None:
        self.app_id = app_id
        self._password = password
        self.token_url = token_url
        self.timeout = timeout
        self._tokens: dict[str, _Token] = {}
        self._lock = threading.Lock()

    def token(self, scope: str) -> str:
        with self._lock:
            cached = self._tokens.get(scope)
            if cached is not None and cached.expires_at - RENEW_BEFORE_SECONDS > time.time():
                return cached.value
            fresh = self._fetch(scope)
            self._tokens[scope] = fresh
            return fresh.value

    def _fetch(self, scope: str) -> _Token:
        form = {
            "grant_type": "client_credentials",
            "client_id": self.app_id,
            "client_secret": self._password,
            "scope": scope if scope.endswith("/.default") else f"{scope}/.default",
        }
        try:
            response = httpx.post(self.token_url, data=form, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(
                f"Could not reach the Microsoft login service to send a Teams reply: {exc}"
            ) from exc
        body = _json(response)
        token = body.get("access_token")
        if response.status_code != 200 or not isinstance(token, str):
            error = body.get("error") or f"HTTP {response.status_code}"
            # The error code only: descriptions can echo request details.
            raise UpstreamUnavailable(
                f"The Microsoft login service refused the bot's credentials ({error}); "
                "check CODEASK_TEAMS_APP_ID / CODEASK_TEAMS_APP_PASSWORD."
            )
        lifetime = body.get("expires_in", 3600)
        seconds = float(lifetime) if isinstance(lifetime, int | float | str) else 3600.0
        return _Token(token, time.time() + seconds)


def _json(response: httpx.Response) -> dict[str, object]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class ClientCredentials(AppCredentials):
    """What the SDK's connector calls to sign each outgoing request."""

    def __init__(self, tokens: TokenClient, scope: str) -> None:
        super().__init__(app_id=tokens.app_id, oauth_scope=scope)
        self._tokens = tokens

    def get_access_token(self, force_refresh: bool = False) -> str:
        return self._tokens.token(self.oauth_scope)


class ClientCredentialsFactory(ServiceClientCredentialsFactory):
    """Credentials for our one app id; authentication is never disabled."""

    def __init__(self, app_id: str, password: str, token_url: str) -> None:
        self.app_id = app_id
        self.tokens = TokenClient(app_id, password, token_url)

    async def is_valid_app_id(self, app_id: str) -> bool:
        return bool(app_id) and app_id == self.app_id

    async def is_authentication_disabled(self) -> bool:
        return False

    async def create_credentials(
        self, app_id: str, oauth_scope: str, login_endpoint: str, validate_authority: bool
    ) -> AppCredentials:
        if app_id != self.app_id:
            raise PermissionError("Credentials requested for an unknown app id.")
        return ClientCredentials(
            self.tokens, oauth_scope or AuthenticationConstants.TO_CHANNEL_FROM_BOT_OAUTH_SCOPE
        )
