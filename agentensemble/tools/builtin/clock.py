"""CurrentDateTime: the current date and time, time zone aware."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin._base import BuiltinTool, refuse


class CurrentDateTimeInput(BaseModel):
    timezone: Annotated[
        str | None,
        Field(description="An IANA time zone such as 'Europe/Paris'; default: the tool's own"),
    ] = None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        refuse(f"unknown time zone {name!r}; use an IANA name such as 'UTC' or 'Europe/Paris'")


class CurrentDateTime(BuiltinTool[CurrentDateTimeInput]):
    """The current date and time as ISO 8601 with its UTC offset, weekday and zone."""

    default_name = "current_datetime"

    def __init__(
        self,
        timezone: str = "UTC",
        *,
        name: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._init_name(name)
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError, OSError) as error:
            raise ConfigurationError(f"CurrentDateTime: unknown time zone {timezone!r}") from error
        self.timezone = timezone
        self._clock = clock or _utc_now
        self.description = (
            f"The current date and time (ISO 8601 with offset, weekday). Default zone: "
            f"{timezone}; pass timezone to ask for another IANA zone."
        )

    def do_execute(self, input: CurrentDateTimeInput) -> str:
        name = input.timezone or self.timezone
        now = self._clock().astimezone(_zone(name))
        return f"{now.isoformat(timespec='seconds')} ({now.strftime('%A')}, {name})"


def _utc_now() -> datetime:
    return datetime.now(dt_timezone.utc)


__all__ = ["CurrentDateTime", "CurrentDateTimeInput"]
