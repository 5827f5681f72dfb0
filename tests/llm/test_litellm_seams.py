"""The two places litellm makes its async HTTP clients, where ``_litellm`` gives them the body
bounds and the no-redirect rule (``_body_bound``), are checked when litellm is loaded: another
litellm release that moved them would otherwise run every litellm-lane call unbounded,
silently. The check names what is gone and the release to install."""

from __future__ import annotations

import pytest

from agentensemble.errors import ConfigurationError
from agentensemble.llm import _litellm


def test_the_pinned_litellm_still_makes_its_clients_where_we_bound_them() -> None:
    handler, openai_base = _litellm._client_makers()
    assert handler.__name__ == "AsyncHTTPHandler" and openai_base.__name__ == "BaseOpenAILLM"


@pytest.mark.parametrize(
    ("maker", "gone"),
    [
        (
            ("litellm.llms.custom_httpx.no_such_module", "AsyncHTTPHandler", "create_client"),
            "litellm.llms.custom_httpx.no_such_module.AsyncHTTPHandler is gone",
        ),
        (
            ("litellm.llms.custom_httpx.http_handler", "NoSuchHandler", "create_client"),
            "litellm.llms.custom_httpx.http_handler.NoSuchHandler is gone",
        ),
        (
            ("litellm.llms.custom_httpx.http_handler", "AsyncHTTPHandler", "make_client"),
            "AsyncHTTPHandler.make_client is gone",
        ),
    ],
    ids=["module moved", "class renamed", "method renamed"],
)
def test_a_litellm_that_moved_them_is_refused_naming_what_is_gone(
    monkeypatch: pytest.MonkeyPatch, maker: tuple[str, str, str], gone: str
) -> None:
    monkeypatch.setattr(_litellm, "CLIENT_MAKERS", (maker, _litellm.CLIENT_MAKERS[1]))
    with pytest.raises(_litellm.LiteLLMShapeError) as caught:
        _litellm._client_makers()
    assert isinstance(caught.value, ConfigurationError)
    assert gone in str(caught.value) and "litellm[mcp]==1.106.2" in str(caught.value)
