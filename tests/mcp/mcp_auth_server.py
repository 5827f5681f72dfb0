"""An OAuth-protected MCP server for the tests and the docs, built on the ``mcp`` package's own
server-side auth, served over streamable HTTP on 127.0.0.1.

``python mcp_auth_server.py bearer PORT TOKEN``: a resource server that accepts exactly
``Bearer TOKEN`` (a token verifier); anything else gets 401. Its ``revoke`` tool revokes the
token, as an expiry mid-run would.

``python mcp_auth_server.py oauth PORT``: the MCP server is its own authorization server (the
SDK's ``auth_server_provider``): metadata discovery, dynamic client registration, the
authorization-code flow with PKCE (consent is automatic: ``/authorize`` redirects straight back
with a code, so a headless client can follow it) and refresh tokens.

``python mcp_auth_server.py client-credentials-cleartext PORT CLIENT_ID CLIENT_SECRET``: the
same, whose metadata names a token endpoint on another host over plain http
(``http://token.invalid/token``: a name that never resolves).

``python mcp_auth_server.py client-credentials PORT CLIENT_ID CLIENT_SECRET``: a resource
server beside a minimal authorization server of its own (metadata and a ``/token`` endpoint for
the ``client_credentials`` grant, ``client_secret_basic`` or ``_post``), as a machine-to-machine
setup has them.

All serve one tool, ``whoami``, answering the client id the token was issued to.
"""

from __future__ import annotations

import base64
import secrets
import sys
import time
from urllib.parse import unquote

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class StaticTokenVerifier:
    """Accepts one token."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.revoked = False

    async def verify_token(self, token: str) -> AccessToken | None:
        if not self.revoked and secrets.compare_digest(token, self.token):
            return AccessToken(token=token, client_id="static-client", scopes=["mcp"])
        return None


class AutoConsentProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """An in-memory authorization server that grants every authorization request at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = int(time.time()) + 3600
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=3600,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


class IssuedTokens:
    """The access tokens the client-credentials authorization server issued."""

    def __init__(self) -> None:
        self.issued: dict[str, AccessToken] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.issued.get(token)


def add_client_credentials_server(
    server: MCPServer,
    base: str,
    client_id: str,
    client_secret: str,
    tokens: IssuedTokens,
    token_endpoint: str | None = None,
) -> None:
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @server.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": token_endpoint or f"{base}/token",
                "grant_types_supported": ["client_credentials"],
                "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                ],
            }
        )

    @server.custom_route("/token", methods=["POST"])
    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        given_id, given_secret = form.get("client_id"), form.get("client_secret")
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            decoded = base64.b64decode(header[6:]).decode()
            given_id, _, given_secret = (unquote(part) for part in decoded.partition(":"))
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        if given_id != client_id or not secrets.compare_digest(
            str(given_secret or ""), client_secret
        ):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        access = secrets.token_urlsafe(32)
        tokens.issued[access] = AccessToken(
            token=access, client_id=client_id, scopes=["mcp"], expires_at=int(time.time()) + 3600
        )
        return JSONResponse(
            {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": "mcp"}
        )


def build(mode: str, port: int, token: str | None, secret: str | None = None) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    settings = AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"]),
        required_scopes=["mcp"],
    )
    if mode == "bearer":
        assert token is not None
        verifier = StaticTokenVerifier(token)
        server = MCPServer("agentensemble-auth-test", token_verifier=verifier, auth=settings)

        @server.tool()
        def revoke() -> str:
            """Revoke the token: every later request gets 401 (an expiry mid-run)."""
            verifier.revoked = True
            return "revoked"
    elif mode in ("client-credentials", "client-credentials-cleartext"):
        assert token is not None and secret is not None
        issued = IssuedTokens()
        server = MCPServer("agentensemble-auth-test", token_verifier=issued, auth=settings)
        elsewhere = "http://token.invalid/token" if mode.endswith("cleartext") else None
        add_client_credentials_server(server, base, token, secret, issued, elsewhere)
    else:
        server = MCPServer(
            "agentensemble-auth-test", auth_server_provider=AutoConsentProvider(), auth=settings
        )

    @server.tool()
    def whoami() -> str:
        """The client id of the token this call came with."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        access = get_access_token()
        return access.client_id if access is not None else "nobody"

    return server


def main() -> None:
    mode, port = sys.argv[1], int(sys.argv[2])
    token = sys.argv[3] if len(sys.argv) > 3 else None
    secret = sys.argv[4] if len(sys.argv) > 4 else None
    build(mode, port, token, secret).run("streamable-http", host="127.0.0.1", port=port)  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
