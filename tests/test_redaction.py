"""The one outward-redaction policy (``agentensemble.redaction``): its rules as tables, and the
guarantee that no other module keeps a copy of them (so a new surface inherits every rule)."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentensemble
from agentensemble._base.log_redaction import install_log_redaction
from agentensemble.redaction import (
    REDACTED,
    is_secret_name,
    looks_like_credential,
    redact,
    redact_command,
    redact_text,
    register_argument_secrets,
    register_secret,
    register_url_secrets,
    safe_url,
)

REPO = Path(agentensemble.__file__).absolute().parent.parent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://app:s3cret@db:5432/x", "postgresql://app:***@db:5432/x"),
        (
            "mongodb+srv://reader:pw9@c0.example.net/db",
            "mongodb+srv://reader:***@c0.example.net/db",
        ),
        ("redis://:hunter2@cache:6379/0", "redis://:***@cache:6379/0"),
        ("proxy http://u:p%40ss@proxy:3128 set", "proxy http://u:***@proxy:3128 set"),
        # an unescaped "@" in the password: masked whole, not up to its first "@" (issue 38)
        ("postgresql://app:pa@ss99word@db:5432/x", "postgresql://app:***@db:5432/x"),
        ("db at postgresql://app:a@b@c@[::1/x now", "db at postgresql://app:***@[::1/x now"),
        ("Authorization: Bearer abc.def-123456", "Authorization: Bearer ***"),
        ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
        ("key sk-proj-0123456789abcdef", "key ***"),
        ("AIzaSyA0123456789abcdefghijklmnopq", "***"),
        ("ghp_0123456789abcdefghijABCDEFGHIJ", "***"),
        ("xoxb-1234567890-abcdefghij", "***"),
        ("AKIAABCDEFGHIJKLMNOP", "***"),
        ('{"api_key": "zzzz1234"}', '{"api_key": "***"}'),
        ("password=hunter22 user=bob", "password=*** user=bob"),
        ("GET /hook?token=abc123&x=1", "GET /hook?token=***&x=1"),
        ("https://h/p?X-Amz-Signature=deadbeef", "https://h/p?X-Amz-Signature=***"),
    ],
)
def test_credentials_are_recognised_by_their_shape(text: str, expected: str) -> None:
    assert redact_text(text) == expected
    assert looks_like_credential(text)


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/docs?page=2",
        "mailto:someone@example.com",
        "the tokens used: 1200, max_tokens=4096",
        "ssh user@host",
        "http://localhost:8000/v1",
        "a basic idea",
        "***",
        "pass LLM('openai/gpt-4o-mini', api_key=...) to set it",  # a placeholder in advice
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text
    assert not looks_like_credential(text)


def test_extra_secrets_and_registered_ones_are_replaced_longest_first() -> None:
    from agentensemble.redaction import register_secret

    register_secret("abcdef-registered")
    register_secret("abcdef-registered-longer")
    assert redact_text("x abcdef-registered-longer y") == "x *** y"
    assert redact_text("one-off value", extra=["one-off"]) == "*** value"
    register_secret("short")  # under six characters: ignored, it would mangle text
    assert redact_text("a short text") == "a short text"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("x-api-key", True),
        ("Authorization", True),
        ("SENTRY_DSN", True),
        ("SQLALCHEMY_DATABASE_URI", True),
        ("session_cookie", True),
        ("max_tokens", False),
        ("total_tokens", False),
        ("KEYBOARD_LAYOUT", False),
        ("session_id", False),
        ("PATH", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_structured_values_are_redacted_by_key_and_by_shape() -> None:
    value = {
        "api_key": "anything",
        "headers": {"Authorization": "Bearer zzzzzzzz"},
        "urls": ["postgresql://a:b1234@h/d"],
        "usage": {"total_tokens": 12},
    }
    assert redact(value) == {
        "api_key": REDACTED,
        "headers": {"Authorization": REDACTED},
        "urls": ["postgresql://a:***@h/d"],
        "usage": {"total_tokens": 12},
    }


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://u:p@hooks.example.com/hooks/catch/123456/opensesame/?k=v#f",
            "https://hooks.example.com/hooks/catch/***/***/",
        ),
        ("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"),
        ("https://mcp.example.com/v1/tenant-42/sse", "https://mcp.example.com/v1/***/sse"),
        ("not a url", "<invalid URL>"),
    ],
)
def test_urls_are_shown_without_credentials(url: str, shown: str) -> None:
    assert safe_url(url) == shown


def test_a_url_s_credentials_are_registered_wherever_they_sit() -> None:
    register_url_secrets("https://user:pw-url-123@h.example/t/tenant-url-777/mcp?key=q-url-555")
    echoed = "echo pw-url-123 tenant-url-777 q-url-555 mcp"
    assert redact_text(echoed) == "echo *** *** *** mcp"


def test_a_command_line_s_credentials_are_registered() -> None:
    register_argument_secrets(
        ["server", "--db=postgresql://app:pw-arg-0001@db/x", "--password", "plainpw-arg-02", "-v"]
    )
    assert redact_text("pw-arg-0001 plainpw-arg-02") == "*** ***"
    shown = redact_command(["server", "--password", "plainpw-arg-02", "-v"])
    assert shown == "server --password *** -v"


def test_third_party_log_lines_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    install_log_redaction(["agentensemble-test-thirdparty"])
    install_log_redaction(["agentensemble-test-thirdparty"])  # idempotent
    logger = logging.getLogger("agentensemble-test-thirdparty")
    assert len(logger.filters) == 1
    with caplog.at_level(logging.INFO, logger="agentensemble-test-thirdparty"):
        logger.info("HTTP Request: POST %s", "https://h/x?token=tok-in-log-9")
    assert "tok-in-log-9" not in caplog.text and "token=***" in caplog.text


def test_the_policy_is_stdlib_only_so_every_package_and_layer_may_import_it() -> None:
    # the policy and its rules module (what a credential looks like), which it alone imports
    rules = "agentensemble._base.credential_rules"
    imported: set[str] = set()
    for path in ("redaction.py", "_base/credential_rules.py"):
        source = (REPO / "agentensemble" / path).read_text(encoding="utf-8")
        imported |= set(re.findall(r"^(?:from|import) ([\w.]+)", source, re.MULTILINE))
    assert imported - {rules} <= {
        "__future__",
        "logging",
        "re",
        "sys",
        "threading",
        "unicodedata",
        "urllib.parse",
        "collections.abc",
        "typing",
    }


# Rules of the policy that must live in one place: a second copy is how one channel came to mask
# a secret its neighbour leaked.
_COPIES = re.compile(r"re\.compile\([^)]*(?:[Bb]earer|sk-|AIza|api\[_-\]\?key)")


def test_no_other_module_keeps_its_own_copy_of_the_rules() -> None:
    offenders = []
    for package in ("agentensemble", "agentensemble_review", "agentensemble_web"):
        for path in (REPO / package).rglob("*.py"):
            if path.name in ("redaction.py", "credential_rules.py"):  # the policy's own
                continue
            text = path.read_text(encoding="utf-8")
            if _COPIES.search(text) or re.search(
                r"^def (register_secret|redact_text)\(", text, re.M
            ):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


@pytest.mark.parametrize(
    "hostile",
    [
        "a." * 500_000,  # a word boundary at every character
        "a+" * 500_000,  # a URL scheme's characters, never "://"
        "?" + "key" * 300_000,  # a query parameter name that never ends
        "://" + "a:" * 300_000,  # user info that never reaches "@"
        "&a" * 300_000,
        "Bearer " + " " * 500_000,
    ],
)
def test_redaction_is_linear_on_hostile_text(hostile: str) -> None:
    """Tool outputs and model text reach the policy unbounded in shape: no rule may backtrack
    quadratically (on a megabyte, that is hours; each of these takes well under a second)."""
    import time

    started = time.monotonic()
    redact_text(hostile)
    assert time.monotonic() - started < 20  # a bound for a frozen process, not a speed target


def test_a_credential_url_is_masked_where_written_without_masking_its_words_elsewhere() -> None:
    """``/hooks/agentensemble`` holds no token: registering the word would mask it in every
    message. The URL itself, wherever it is written out (httpx's log line), reads as shown."""
    register_url_secrets("https://reviews.example.com/hooks/agentensemble")
    text = "agentensemble: POST https://reviews.example.com/hooks/agentensemble/r-1/withdraw"
    assert (
        redact_text(text)
        == "agentensemble: POST https://reviews.example.com/hooks/***/r-1/withdraw"
    )


_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0"


@pytest.mark.parametrize(
    "hidden",
    [
        "\u200b",  # zero-width space
        "\u200d",  # zero-width joiner
        "\u202e",  # right-to-left override
        "\u2066",  # left-to-right isolate
        "\ufeff",  # byte order mark
        "\x1b",  # ANSI escape
        "\r",  # carriage return
        "\x85",  # C1 next line
        "\u2028",  # line separator
    ],
)
def test_a_secret_split_by_a_hidden_character_is_still_redacted(hidden: str) -> None:
    """The attack: a tool's output splits a key with an invisible character, so no rule sees it
    whole, while a terminal, a web page or a model reads it whole again."""
    registered = "hunter2-registered-value"
    register_secret(registered)
    split_key = _KEY[:6] + hidden + _KEY[6:]
    split_registered = registered[:7] + hidden + registered[7:]
    for text in (f"the key is {split_key}.", f"password: {split_registered} (keep it)"):
        shown = redact_text(text)
        assert REDACTED in shown
        assert _KEY not in shown.replace(hidden, "")
        assert registered not in shown.replace(hidden, "")


@pytest.mark.parametrize(
    "text",
    [
        "family: \U0001f468\u200d\U0001f469\u200d\U0001f467",  # emoji joined by ZWJ
        "\u202eright to left\u202c and a tab\there",
        "plain ascii with no secret",
    ],
)
def test_hidden_characters_without_a_secret_behind_them_are_kept(text: str) -> None:
    """Only a text that hides a secret loses its hidden characters; the others reach the
    display untouched, which escapes them so a reader sees they are there."""
    assert redact_text(text) == text


def test_every_display_that_escapes_hidden_characters_redacts_the_joined_secret() -> None:
    """The siblings: the verbose transcript and the console review escape hidden characters,
    and escaping after a redaction that missed the secret showed it with one escape inside."""
    from agentensemble.execution._verbose import visible
    from agentensemble_review.console import shown

    text = f"call with {_KEY[:10]}\u200b{_KEY[10:]}"
    for display in (visible, shown):
        out = display(text)
        assert REDACTED in out
        assert _KEY[10:] not in out


def _every_rule(text: str) -> str:
    """The shape rules applied without the literal pre-check (what redact_text must equal)."""
    from agentensemble._base import credential_rules as rules

    for pattern, replacement in rules._shapes():
        text = pattern.sub(replacement, text)
    return rules._QUERY_PARAMETER.sub(rules._query_value, text)


def test_skipping_rules_whose_literal_is_absent_never_changes_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # redact_text skips a rule when an ASCII text lacks every literal the rule needs; pieces of
    # credentials and look-alikes, mixed case, non-ASCII, glued in random orders. The shape
    # rules alone are compared: values other tests registered (``tok123456``...) are set aside.
    import random

    from agentensemble import redaction

    monkeypatch.setattr(redaction, "_known_sorted", ())
    monkeypatch.setattr(redaction, "_urls_sorted", ())
    monkeypatch.setattr(redaction, "_clean", {})

    pieces = [
        "sk-abcdefgh12", "Bearer abcdefghij", "BASIC xyz12345", "api_key=", "API-KEY: 'zz1234'",
        "?token=abc", "&x=1", "://u:p@h", "postgres://me:pw@db/x", "ghp_" + "a" * 22,
        "github_pat_" + "b" * 22, "xoxb-" + "c" * 12, "AKIA" + "A" * 16, "ASIA" + "B" * 16,
        "AIza" + "d" * 22, "password", "Passwd = hunter22", "secret", "Client_Secret",
        "refresh-token:", "access_token=", " ", "\n", '"', "'", "=", ":", "answer", "é", "\u017f",
        "\u212a", "x-api-key", "Authorization: Bearer tok123456",
    ]  # fmt: skip
    chooser = random.Random(27)
    for _ in range(5000):
        text = "".join(chooser.choice(pieces) for _ in range(chooser.randint(1, 8)))
        assert redact_text(text) == _every_rule(text), text


# -- long texts redacted section by section ------------------------------------------------------

_SECTION_PIECES = [
    "sk-abcdefgh12", "Bearer", "Bearer abcdefghij", "basic ", "api_key=", "password:",
    "password: ", "API-KEY: 'zz1234'", "?token=abc", "&x=1", "://u:p@h", "postgres://me:pw@db/x",
    "ghp_" + "a" * 22, "AKIA" + "A" * 16, "AIza" + "d" * 22, "secret", "access_token=",
    "registered-value-1", "registered-", "value-1", "\n", "\n\n", "\n\n###", "\n\n### ", "### ",
    "#", "##", "#####", " ", '"', "'", "=", ":", "***", "...", "answer", "é", "\u200b", "\x1b",
    "bearer ", "###x", "####",
]  # fmt: skip


def test_a_sectioned_text_is_redacted_as_the_whole_text_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long prompt is cut at each ``\\n\\n### `` and redacted section by section (each earlier
    output scanned once, not once per later task): the result must equal the whole text's,
    whatever sits on either side of a cut: every rule's texts, hidden characters, registered
    values, look-alikes of the cut itself, glued in random orders."""
    import random

    from agentensemble import redaction

    monkeypatch.setattr(redaction, "_known_sorted", ("registered-value-1",))
    monkeypatch.setattr(redaction, "_urls_sorted", ())
    monkeypatch.setattr(redaction, "_clean_sections", {})
    monkeypatch.setattr(redaction, "_clean_heads", ())
    monkeypatch.setattr(redaction, "_SECTIONS_FROM", 0)  # short texts cut too
    chooser = random.Random(2727)

    plain = ["answer", " ", "\n", "#", "words", "step 1 (Writer)"]

    def piece(pieces: list[str] = _SECTION_PIECES) -> str:
        return "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 5)))

    for round_ in range(2000):
        # a chain of prompts, each holding the previous one's sections and one more, as the
        # tasks of a sequential run do; in every other chain the earlier sections are plain
        # (so they are remembered clean) and only the newest ones and the tail vary
        earlier = plain if round_ % 2 else _SECTION_PIECES
        cores = [piece(earlier)]
        for _ in range(chooser.randint(1, 6)):
            cores.append(piece(earlier if chooser.random() < 0.7 else _SECTION_PIECES))
            text = redaction.SECTION_BREAK.join([*cores, piece(earlier)])
            shown = [redaction.redact_text(text), redaction.redact_text(text)]
            assert shown == [redaction._redact_whole(text, ())] * 2, repr(text)  # then cached
            extra = ("value-1",)
            assert redaction.redact_text(text, extra) == redaction._redact_whole(text, extra), repr(
                text
            )


def _long_prompt(outputs: list[str]) -> str:
    from agentensemble.execution.prompts import ContextItem, build_user_prompt

    items = [ContextItem(f"step {n}", "Writer", out) for n, out in enumerate(outputs)]
    return build_user_prompt("the last step", "one line", items)


def test_a_secret_registered_after_a_section_was_found_clean_is_still_redacted() -> None:
    """Sections found clean are remembered under the policy as it was: a secret registered
    meanwhile (between two tasks of a run) makes them stale, so a later prompt holding the
    same earlier output does not leak it."""
    late = "late-registered-secret-2727"
    outputs = [f"output {n}: " + "words " * 40 for n in range(40)]
    outputs[3] += late
    prompt = _long_prompt(outputs)
    assert len(prompt) > 4096 and "\n\n### " in prompt
    assert redact_text(prompt) == prompt  # every section now remembered clean
    register_secret(late)
    shown = redact_text(prompt)
    assert late not in shown and REDACTED in shown
    assert shown == prompt.replace(late, REDACTED)


def test_a_secret_that_could_span_a_cut_turns_the_cutting_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A registered value holding a line end followed by ``#`` could straddle a cut: the whole
    text is then scanned at once."""
    from agentensemble import redaction

    spanning = "tail-of-one\n\n### step 7"
    outputs = ["plain words " * 40 for _ in range(40)]
    outputs[6] += "tail-of-one"
    prompt = _long_prompt(outputs)
    assert spanning in prompt
    monkeypatch.setattr(redaction, "_known_sorted", (spanning,))
    monkeypatch.setattr(redaction, "_generation", redaction._generation + 1)
    assert spanning not in redact_text(prompt)


def test_a_sectioned_prompt_with_a_credential_is_redacted_everywhere_it_shows() -> None:
    outputs = ["plain words " * 40 for _ in range(40)]
    outputs[5] += " Authorization: Bearer abcdefghijklmnop"
    outputs[30] = "token sk-" + "Z" * 24
    prompt = _long_prompt(outputs)
    for _ in range(2):  # the second time, the clean sections are remembered
        shown = redact_text(prompt)
        assert "abcdefghijklmnop" not in shown and "Z" * 24 not in shown
        assert shown.count("plain words") == prompt.count("plain words")


def test_a_text_sharing_a_remembered_start_is_cut_only_where_a_section_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A prompt found clean is remembered up to its last section; a later text starting the
    same way is checked from there on only when a section (``### ``) starts there too: a text
    that goes on otherwise may continue a credential across that place."""
    from agentensemble import redaction

    monkeypatch.setattr(redaction, "_clean_heads", ())
    monkeypatch.setattr(redaction, "_clean_sections", {})
    filler = "plain words " * 200
    first = _long_prompt([filler, filler + "Authorization: Bearer", "short"])
    assert redact_text(first) == first  # clean: "Bearer" ends its section
    cut = first.rfind(redaction.SECTION_BREAK) + 2
    for rest in ("abcdefghijkl and more", "### step 9 (Writer)\nabcdefghijkl"):
        text = first[:cut] + rest
        assert redact_text(text) == redaction._redact_whole(text, ())
    assert "abcdefghijkl" not in redact_text(first[:cut] + "abcdefghijkl and more")


def test_two_long_texts_are_alike_up_to_a_place_only_when_every_character_before_it_is() -> None:
    from agentensemble.redaction import starts_alike as _starts_alike

    seen = "".join(chr(65 + n % 26) for n in range(40_000))
    for cut in (1, 8191, 8192, 8193, 20_000, 40_000):
        assert _starts_alike(seen + "tail", seen, cut)
        for place in {0, cut // 2, cut - 1, 8191 % cut, 8192 % cut}:
            changed = seen[:place] + "!" + seen[place + 1 :]
            assert not _starts_alike(changed, seen, cut), (cut, place)
    # a start shorter than the place: never alike (the text may hold more there)
    assert not _starts_alike(seen[:100], seen[:100], 101)
    assert not _starts_alike(seen[:100] + "x", seen[:100], 101)


def test_the_patterns_compile_on_first_use_and_redact_as_compiled_ones() -> None:
    # a fresh interpreter: importing the policy compiles no pattern (a script's first line pays
    # nothing for them); the first redaction compiles them, with the same results
    probe = """
import re
from agentensemble import redaction as r
from agentensemble._base import credential_rules as c
assert c._SHAPES == () and not isinstance(c.__dict__["SECRET_NAME"], re.Pattern)
assert r.is_secret_name("OPENAI_API_KEY") and not r.is_secret_name("max_tokens")
assert isinstance(c.__dict__["SECRET_NAME"], re.Pattern)
print(r.redact_text("Bearer abcdefghijk and sk-abcdefghij at https://h/x?token=zzzzzz"))
print(r.looks_like_token("a1b2c3d4e5"), r.safe_url("https://h/hooks/catch/a1b2c3d4e5f6"))
assert len(c._SHAPES) == len(c._SHAPE_SOURCES)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "Bearer *** and *** at https://h/x?token=***"
    assert second.startswith("True ") and "a1b2c3d4e5f6" not in second


def test_a_pydantic_model_is_redacted_as_its_json_data() -> None:
    """A model was returned as it was, so whatever dumped or showed it next (a trace, a log
    line, a served result, the review page) showed its fields unredacted."""
    from pydantic import BaseModel

    class Inner(BaseModel):
        url: str

    class Outer(BaseModel):
        password: str
        note: str
        inner: Inner

    value = {
        "kept": [
            Outer(password="p", note="Bearer zzzzzzzz", inner=Inner(url="https://u:pw1234@h/x"))
        ]
    }
    assert redact(value) == {
        "kept": [
            {"password": REDACTED, "note": "Bearer ***", "inner": {"url": "https://u:***@h/x"}}
        ]
    }
    assert redact(Inner(url="plain")) == {"url": "plain"}
