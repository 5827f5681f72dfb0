"""``MCPServerHTTP(auth=...)`` against an OAuth-protected MCP server in its own process
(``mcp_auth_server.py``, the ``mcp`` package's server-side auth): a bearer token, and the full
authorization-code flow of the SDK's ``OAuthClientProvider`` with a headless redirect handler.
A refused credential is a one-line error naming the server, fast; no token is ever shown."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_helpers import serve_script

from agentensemble import Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError
from agentensemble.mcp import MCPServerError, MCPServerHTTP
from agentensemble.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.anyio

AUTH_SERVER = Path(__file__).with_name("mcp_auth_server.py")
TOKEN = "bearer-s3cret-for-the-tests-0123456789"


@pytest.fixture(scope="module")
def bearer_url() -> Iterator[str]:
    yield from serve_script(AUTH_SERVER, "bearer", TOKEN)


@pytest.fixture(scope="module")
def oauth_url() -> Iterator[str]:
    yield from serve_script(AUTH_SERVER, "oauth")


CLIENT_ID, CLIENT_SECRET = "crew-client", "crew-client-s3cret-0123456789"


@pytest.fixture(scope="module")
def machine_url() -> Iterator[str]:
    yield from serve_script(AUTH_SERVER, "client-credentials", CLIENT_ID, CLIENT_SECRET)


class Events:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.seen.append(event)


async def whoami(server: MCPServerHTTP, **ensemble: Any) -> tuple[str, Any]:
    model = ScriptedChatModel([tool_call("whoami", {}), "done"])
    agent = Agent(role="Caller", goal="Call", tools=[server], llm=model)
    output = await Ensemble(tasks=[Task(description="Who?", agent=agent)], **ensemble).arun()
    return model.requests[1].tool_results[0], output


async def test_a_bearer_token_opens_the_server_and_is_never_shown(
    bearer_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    events = Events()
    result, output = await whoami(MCPServerHTTP(bearer_url, auth=TOKEN), listeners=[events])

    assert result == "static-client"
    shown = " ".join(
        [caplog.text, *(str(r.__dict__) for r in caplog.records), repr(output.model_dump())]
        + [repr(event) for event in events.seen]
    )
    assert TOKEN not in shown


@pytest.mark.parametrize("auth", [None, "a-wrong-token-0123456789", f"Bearer {TOKEN}x"])
async def test_a_missing_or_wrong_token_is_a_one_line_error_naming_the_server(
    bearer_url: str, auth: str | None
) -> None:
    started = time.monotonic()
    with pytest.raises(MCPServerError) as caught:
        await whoami(MCPServerHTTP(bearer_url, auth=auth, startup_timeout=20))
    message = str(caught.value)

    assert message == (
        f"MCP server {bearer_url!r} could not start: HTTP 401 Unauthorized: the server "
        "refused our credentials (missing, wrong or expired: check auth=)"
    )
    assert time.monotonic() - started < 15  # refused at once, not after the startup timeout
    assert TOKEN not in message and (auth is None or auth not in message)


async def test_a_token_revoked_mid_run_fails_the_next_call_saying_why() -> None:
    servers = serve_script(AUTH_SERVER, "bearer", TOKEN)  # its own: this test revokes the token
    url = next(servers)
    try:
        model = ScriptedChatModel(
            [tool_call("revoke", {}), tool_call("whoami", {}), "The token expired."]
        )
        agent = Agent(role="Caller", goal="Call", tools=[MCPServerHTTP(url, auth=TOKEN)], llm=model)
        output = await Ensemble(tasks=[Task(description="Who?", agent=agent)]).arun()
    finally:
        next(servers, None)

    assert model.requests[1].tool_results == ["revoked"]
    (failed,) = model.requests[2].tool_results
    assert failed == (
        f"Error: MCP server {url!r} failed to answer the call to 'whoami': HTTP 401 "
        "Unauthorized: the server refused our credentials (missing, wrong or expired: check auth=)"
    )
    assert output.raw == "The token expired." and TOKEN not in repr(output.model_dump())


async def test_resources_and_prompts_use_the_same_auth(bearer_url: str) -> None:
    assert await MCPServerHTTP(bearer_url, auth=f"Bearer {TOKEN}").list_prompts() == []
    with pytest.raises(MCPServerError, match="HTTP 401"):
        await MCPServerHTTP(bearer_url).list_resources()


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        (httpx.BasicAuth("u", "p"), "auth is an httpx.Auth, but the mcp client speaks httpx2"),
        (12345, "auth must be a bearer token .*got int"),
        ("  ", "auth must be a bearer token"),
        ("two words", "auth must be a bearer token"),
    ],
)
def test_bad_auth_settings_are_refused_at_construction(auth: object, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        MCPServerHTTP("http://127.0.0.1:9/mcp", auth=auth)


# -- the MCP authorization flow, as docs/tools.md shows it ----------------------------------


class InMemoryTokenStorage:
    """The SDK's TokenStorage protocol, kept in memory (one process)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class FileTokenStorage:
    """The SDK's TokenStorage protocol in a JSON file only its owner can read (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def _save(self, key: str, value: Any) -> None:
        data = self._load() | {key: value.model_dump(mode="json", exclude_none=True)}
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(data, file)

    async def get_tokens(self) -> OAuthToken | None:
        found = self._load().get("tokens")
        return OAuthToken.model_validate(found) if found else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._save("tokens", tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        found = self._load().get("client")
        return OAuthClientInformationFull.model_validate(found) if found else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._save("client", client_info)


class HeadlessConsent:
    """Follows the authorization URL with an HTTP client instead of a browser (the local test
    server consents at once) and hands the code from its redirect to the SDK."""

    def __init__(self) -> None:
        self.redirects = 0
        self._location = ""

    async def redirect(self, authorization_url: str) -> None:
        self.redirects += 1
        async with httpx2.AsyncClient(timeout=10) as client:
            response = await client.get(authorization_url)
        self._location = response.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        query = parse_qs(urlparse(self._location).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=(query.get("iss") or [None])[0]
        )


def oauth(url: str, storage: Any, consent: HeadlessConsent) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="agentensemble tests",
            redirect_uris=["http://127.0.0.1:9/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope="mcp",
        ),
        storage=storage,
        redirect_handler=consent.redirect,
        callback_handler=consent.callback,
    )


async def test_the_authorization_code_flow_registers_consents_and_keeps_tokens_secret(
    oauth_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    storage, consent = InMemoryTokenStorage(), HeadlessConsent()
    events = Events()
    result, output = await whoami(
        MCPServerHTTP(oauth_url, auth=oauth(oauth_url, storage, consent)), listeners=[events]
    )

    assert storage.client is not None and result == storage.client.client_id
    assert storage.tokens is not None and consent.redirects == 1
    shown = " ".join(
        [caplog.text, *(str(r.__dict__) for r in caplog.records), repr(output.model_dump())]
        + [repr(event) for event in events.seen]
    )
    for secret in (storage.tokens.access_token, storage.tokens.refresh_token):
        assert secret and secret not in shown

    # the next connection uses the stored token: no second consent
    again, _ = await whoami(MCPServerHTTP(oauth_url, auth=oauth(oauth_url, storage, consent)))
    assert again == result and consent.redirects == 1


async def test_tokens_kept_in_a_file_only_its_owner_reads(oauth_url: str, tmp_path: Path) -> None:
    storage, consent = FileTokenStorage(tmp_path / "tokens.json"), HeadlessConsent()
    async with MCPServerHTTP(oauth_url, auth=oauth(oauth_url, storage, consent)) as server:
        assert await server.list_resources() == []

    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert (await storage.get_tokens()) is not None
    fresh = HeadlessConsent()
    result, _ = await whoami(MCPServerHTTP(oauth_url, auth=oauth(oauth_url, storage, fresh)))
    assert fresh.redirects == 0 and result == (await storage.get_client_info()).client_id  # type: ignore[union-attr]


async def test_an_expired_token_with_no_way_to_consent_fails_fast_naming_the_server(
    oauth_url: str,
) -> None:
    storage = InMemoryTokenStorage()
    storage.tokens = OAuthToken(access_token="expired-or-revoked-token-0123", token_type="Bearer")
    provider = OAuthClientProvider(
        server_url=oauth_url,
        client_metadata=OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"]),
        storage=storage,
    )  # no redirect handler: nobody can consent again
    with pytest.raises(MCPServerError) as caught:
        await whoami(MCPServerHTTP(oauth_url, auth=provider, startup_timeout=20))
    message = str(caught.value)
    assert message.startswith(f"MCP server {oauth_url!r} could not start: ")
    assert "\n" not in message and "expired-or-revoked-token-0123" not in message


# -- machine to machine: the client-credentials grant ---------------------------------------


def machine(url: str, secret: str, method: str = "client_secret_basic") -> Any:
    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=InMemoryTokenStorage(),
        client_id=CLIENT_ID,
        client_secret=secret,
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
        scope="mcp",
        issuer=url.removesuffix("/mcp"),
    )


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_the_client_credentials_grant_gets_a_token_and_keeps_the_secret(
    machine_url: str, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = machine(machine_url, CLIENT_SECRET, method)
    result, output = await whoami(MCPServerHTTP(machine_url, auth=provider))

    assert result == CLIENT_ID
    tokens = await provider.context.storage.get_tokens()
    shown = " ".join(
        [caplog.text, *(str(r.__dict__) for r in caplog.records), repr(output.model_dump())]
    )
    assert CLIENT_SECRET not in shown and tokens.access_token not in shown


@pytest.fixture(scope="module")
def cleartext_url() -> Iterator[str]:
    yield from serve_script(AUTH_SERVER, "client-credentials-cleartext", CLIENT_ID, CLIENT_SECRET)


async def test_a_token_endpoint_over_plain_http_elsewhere_is_never_sent_the_secret(
    cleartext_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's metadata named ``http://token.invalid/token``: the SDK posted the client
    secret there in clear. The flow's credential-carrying requests go over https, or stay on
    this machine."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(MCPServerError) as caught:
        await whoami(
            MCPServerHTTP(
                cleartext_url, auth=machine(cleartext_url, CLIENT_SECRET), startup_timeout=20
            )
        )
    message = str(caught.value)
    assert "refused to send the authorization flow's POST to http://token.invalid/token" in message
    assert "in clear" in message and CLIENT_SECRET not in message + caplog.text


async def test_a_wrong_client_secret_is_a_one_line_error_naming_the_server(
    machine_url: str,
) -> None:
    wrong = "not-the-client-s3cret-0123456789"
    with pytest.raises(MCPServerError) as caught:
        await whoami(
            MCPServerHTTP(machine_url, auth=machine(machine_url, wrong), startup_timeout=20)
        )
    message = str(caught.value)
    assert message.startswith(
        f"MCP server {machine_url!r} could not start: HTTP 401 Unauthorized: the server refused "
        "our credentials (missing, wrong or expired: check auth=); OAuthTokenError: Token "
        "exchange failed (401)"
    )
    assert "invalid_client" in message and "\n" not in message and wrong not in message
