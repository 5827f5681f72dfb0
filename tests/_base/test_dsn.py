"""The one way to mask a connection string (``agentensemble._base.dsn``), on every URL shape: the
password and secret query values never shown, what names the database kept, nothing raised."""

from __future__ import annotations

import pytest

from agentensemble._base.dsn import dsn_secrets, mask_dsn, mask_in

# Passwords no other test registers as a secret: ``mask_dsn`` ends with the redaction policy, so a
# registered "s3cret" (a webhook test's) turned "s3cretpw" into "***pw" in a worker that ran both.
SHAPES = [
    # (url as written, as shown)
    ("postgresql://app:Tz9dsnPw@db.example:5432/runs", "postgresql://app:***@db.example:5432/runs"),
    ("postgresql://app:Tz9dsnPw@[::1]:5432/runs", "postgresql://app:***@[::1]:5432/runs"),
    ("postgresql://app:Tz9dsnPw@[::1/runs", "postgresql://app:***@[::1/runs"),  # unclosed [
    ("postgresql://app:Tz9dsnPw@[::1", "postgresql://app:***@[::1"),
    ("postgresql://app:pa@ss99word@127.0.0.1:1/db", "postgresql://app:***@127.0.0.1:1/db"),
    ("postgresql://app:p@ss/wo?rd@host/db", "postgresql://app:***@host/db"),
    ("postgresql://app:p%40ss%2Fword@host/db", "postgresql://app:***@host/db"),
    ("postgresql+psycopg://app:Tz9dsnPw@host/db", "postgresql+psycopg://app:***@host/db"),
    ("postgresql://host/db?password=Tz9dsnPw", "postgresql://host/db?password=***"),
    (
        "postgresql://app@host/db?sslmode=require&sslpassword=Tz9dsnPw",
        "postgresql://app@host/db?sslmode=require&sslpassword=***",
    ),
    (
        "postgresql:///db?host=/run/pg&password=Tz9dsnPw",
        "postgresql:///db?host=/run/pg&password=***",
    ),
    ("postgresql://app:@host/db", "postgresql://app:@host/db"),  # an empty password
    ("postgresql://app@host/db", "postgresql://app@host/db"),  # no password
    ("postgresql://host/db", "postgresql://host/db"),
    ("postgres://:Tz9dsnPw@host/db", "postgres://:***@host/db"),
    ("sqlite:///runs.sqlite", "sqlite:///runs.sqlite"),
    ("sqlite:////var/lib/runs.sqlite", "sqlite:////var/lib/runs.sqlite"),
    ("runs.sqlite", "runs.sqlite"),
    ("/home/ada/.agentensemble/web.sqlite", "/home/ada/.agentensemble/web.sqlite"),
    ("host=db user=app password=Tz9dsnPw", "host=db user=app password=***"),
    ("", ""),
    ("://", "://"),
    ("postgresql://", "postgresql://"),
    ("postgresql://@@@", "postgresql://@@@"),  # a user name of "@@": nothing to hide
    ("postgresql://a:b:c@d", "postgresql://a:***@d"),
    ("postgresql://x/db?password=a@b", "postgresql://***@b"),  # '@' in the query: more hidden
]


@pytest.mark.parametrize(("url", "shown"), SHAPES)
def test_every_url_shape_is_masked_as_expected(url: str, shown: str) -> None:
    assert mask_dsn(url) == shown
    assert "Tz9dsnPw" not in shown and "pa@ss99word" not in shown


@pytest.mark.parametrize("url", [url for url, _ in SHAPES])
def test_a_drivers_message_quoting_the_url_is_masked(url: str) -> None:
    message = f'end of string reached in URI: "{url}" (password {dsn_secrets(url) or ["-"]})'
    masked = mask_in(message, url)
    for secret in dsn_secrets(url):
        if len(secret) >= 4:
            assert secret not in masked


def test_percent_encoded_passwords_are_hidden_in_both_forms() -> None:
    url = "postgresql://app:p%40ss%2Fword@host/db"
    assert set(dsn_secrets(url)) >= {"p%40ss%2Fword", "p@ss/word"}
    assert mask_in("auth failed for p@ss/word", url) == "auth failed for ***"


@pytest.mark.parametrize("garbage", ["[", "]", "://@:", "a://b:[@", "\x00://\x00:\x00@", "%zz://"])
def test_garbage_never_raises(garbage: str) -> None:
    assert isinstance(mask_dsn(garbage), str)
    assert isinstance(mask_in(garbage, garbage), str)
