"""The framework's logger honours the stdlib ``agentensemble`` logger's level on every call."""

from __future__ import annotations

import logging

import pytest

from agentensemble.logging import LOGGER_NAME, get_logger


@pytest.mark.parametrize(
    ("level", "shown"),
    [
        (logging.DEBUG, ["debug line", "info line", "warning line"]),
        (logging.INFO, ["info line", "warning line"]),
        (logging.WARNING, ["warning line"]),
        (logging.ERROR, []),
    ],
)
def test_records_below_the_level_are_dropped_and_the_rest_reach_the_stdlib_logger(
    caplog: pytest.LogCaptureFixture, level: int, shown: list[str]
) -> None:
    log = get_logger()
    with caplog.at_level(level, logger=LOGGER_NAME):
        log.debug("debug line", key="v")
        log.info("info line", key="v")
        log.warning("warning line", api_key="sk-should-not-show-1234567890")
    records = [r for r in caplog.records if r.name == LOGGER_NAME]
    assert [r.getMessage() for r in records] == shown
    for record in records:
        assert "sk-should-not-show" not in repr(record.__dict__)  # the processors still ran


def test_a_level_lowered_after_the_logger_was_made_is_honoured(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = get_logger()
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):  # whatever earlier tests set
        log.info("before")  # the logger is built and cached on first use
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        log.info("after", n=1)
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME] == ["after"]


def test_a_disabled_logger_or_logging_disable_drops_info_and_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = get_logger()
    stdlib = logging.getLogger(LOGGER_NAME)
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        assert log.isEnabledFor(logging.DEBUG)
        stdlib.disabled = True
        try:
            log.info("while disabled")
            log.debug("while disabled")
            assert not log.isEnabledFor(logging.INFO)
        finally:
            stdlib.disabled = False
        logging.disable(logging.INFO)
        try:
            log.info("below logging.disable")
            log.debug("below logging.disable")
        finally:
            logging.disable(logging.NOTSET)
        log.info("shown", n=1)
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME] == ["shown"]


def test_bound_loggers_and_other_methods_keep_structlogs_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = get_logger(component="c")
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        log.bind(step=2).info("bound", token="sk-should-not-show-1234567890")
        log.warning("warned")
        log.debug("hidden")
    records = [r for r in caplog.records if r.name == LOGGER_NAME]
    assert [r.getMessage() for r in records] == ["bound", "warned"]
    assert records[0].__dict__["component"] == "c" and records[0].__dict__["step"] == 2
    assert "sk-should-not-show" not in repr(records[0].__dict__)
