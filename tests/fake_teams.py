"""A local stand-in for Microsoft's side of a Teams bot, speaking the real wire formats.

One HTTP server (on its own thread: the Bot Framework SDK fetches OpenID metadata with
blocking ``requests`` calls from the event loop) plays three roles:

* the Bot Connector's OpenID metadata and signing keys, so the SDK's real JWT validation
  runs against tokens this class signs like the Bot Connector does;
* the Microsoft login token endpoint (OAuth2 client credentials) for the bot's replies;
* the Bot Connector REST API at the activities' ``serviceUrl``: it records every reply,
  threaded reply, update and new conversation.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://api.botframework.com"
SERVICE_PREFIX = "/amer"  # Teams service URLs carry a region path


@dataclass
class ConnectorCall:
    method: str
    conversation_id: str
    activity_id: str  # the replyToId (POST) or the edited activity (PUT); empty otherwise
    body: dict[str, Any]
    authorization: str
    response_id: str = ""  # the id this server gave the new activity


@dataclass
class FakeBotConnector:
    app_id: str = "11111111-2222-3333-4444-555555555555"
    app_password: str = "bot-password"
    key_id: str = "test-signing-key"
    calls: list[ConnectorCall] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    issued_tokens: set[str] = field(default_factory=set)
    created_conversations: list[dict[str, Any]] = field(default_factory=list)
    # How many of the next create-conversation calls answer 403 (a user who blocked the bot).
    refuse_conversations: int = 0
    port: int = 0

    def __post_init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- addresses the bot is configured with --------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openid_url(self) -> str:
        return f"{self.base_url}/v1/.well-known/openidconfiguration"

    @property
    def login_url(self) -> str:
        return f"{self.base_url}/botframework.com"

    @property
    def service_url(self) -> str:
        return f"{self.base_url}{SERVICE_PREFIX}/"

    # --- tokens --------------------------------------------------------------------------

    def sign(
        self,
        *,
        audience: str | None = None,
        issuer: str = ISSUER,
        service_url: str | None = None,
        key: rsa.RSAPrivateKey | None = None,
        expires_in: int = 3600,
    ) -> str:
        """A token like the Bot Connector sends with every activity."""
        now = int(time.time())
        claims = {
            "iss": issuer,
            "aud": audience or self.app_id,
            "serviceurl": service_url or self.service_url,
            "nbf": now - 10,
            "exp": now + expires_in,
        }
        pem = (key or self.key).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": self.key_id})

    # --- what the bot sent ---------------------------------------------------------------

    def sent(self, conversation_id: str | None = None) -> list[ConnectorCall]:
        with self._lock:
            return [c for c in self.calls if conversation_id in (None, c.conversation_id)]

    def messages(self, conversation_id: str | None = None) -> list[ConnectorCall]:
        return [c for c in self.sent(conversation_id) if c.body.get("type") == "message"]

    # --- handlers ------------------------------------------------------------------------

    async def _openid(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": ISSUER,
                "authorization_endpoint": f"{self.base_url}/auth",
                "jwks_uri": f"{self.base_url}/v1/.well-known/keys",
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            }
        )

    async def _keys(self, request: web.Request) -> web.Response:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": self.key_id, "use": "sig", "endorsements": ["msteams"]})
        return web.json_response({"keys": [jwk]})

    async def _token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        with self._lock:
            self.token_requests.append(form)
        if (
            form.get("grant_type") != "client_credentials"
            or form.get("client_id") != self.app_id
            or form.get("client_secret") != self.app_password
        ):
            return web.json_response(
                {"error": "invalid_client", "error_description": "AADSTS7000215"}, status=401
            )
        token = secrets.token_urlsafe(24)
        with self._lock:
            self.issued_tokens.add(token)
        return web.json_response(
            {
                "token_type": "Bearer",
                "expires_in": 3599,
                "ext_expires_in": 3599,
                "access_token": token,
            }
        )

    def _next_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"1700000{self._counter:06d}"

    async def _record(self, request: web.Request) -> web.Response:
        body = await request.json()
        auth = request.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.issued_tokens:
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        activity_id = request.match_info.get("activity", "")
        new_id = activity_id if request.method == "PUT" else self._next_id()
        call = ConnectorCall(
            request.method, request.match_info["conversation"], activity_id, body, auth, new_id
        )
        with self._lock:
            self.calls.append(call)
        return web.json_response({"id": new_id})

    async def _create_conversation(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.issued_tokens:
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        body = await request.json()
        with self._lock:
            if self.refuse_conversations > 0:
                self.refuse_conversations -= 1
                return web.json_response(
                    {"error": {"code": "Forbidden", "message": "the user blocked the bot"}},
                    status=403,
                )
            self.created_conversations.append(body)
        member = (body.get("members") or [{}])[0].get("id", "")
        return web.json_response({"id": f"a:personal-{member}"}, status=201)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_get("/v1/.well-known/openidconfiguration", self._openid)
            app.router.add_get("/v1/.well-known/keys", self._keys)
            app.router.add_post("/botframework.com/oauth2/v2.0/token", self._token)
            conversations = f"{SERVICE_PREFIX}/v3/conversations"
            app.router.add_post(conversations, self._create_conversation)
            app.router.add_post(conversations + "/{conversation}/activities", self._record)
            app.router.add_post(
                conversations + "/{conversation}/activities/{activity}", self._record
            )
            app.router.add_put(
                conversations + "/{conversation}/activities/{activity}", self._record
            )
            runner = web.AppRunner(app)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = runner.addresses[0][1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
