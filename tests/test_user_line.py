"""``hints.user_line``: the user's file and line, which warnings raised during a run point at.

Its line is kept per code object and instruction (reading a long script's line table on every
``run()`` cost tens of microseconds); these pin that the kept line is always the right one.
"""

from __future__ import annotations

import sys

from agentensemble import hints
from agentensemble.hints import user_line


def two_call_sites() -> tuple[int, int]:
    first = user_line(1)
    second = user_line(1)
    assert first is not None and second is not None
    return first[1], second[1]


def test_each_call_site_gets_its_own_line_every_time() -> None:
    start = two_call_sites.__code__.co_firstlineno
    expected = (start + 1, start + 2)
    assert two_call_sites() == expected
    assert two_call_sites() == expected  # the second time from what was kept


def test_a_kept_line_of_other_code_under_the_same_id_is_not_used() -> None:
    # ids are reused once code is collected: an entry for another code object must not count
    frame = sys._getframe()
    key = (id(frame.f_code), frame.f_lasti)
    hints._LINES[key] = (compile("pass", "<other>", "exec"), 999_999)
    assert hints._line_of(frame) == frame.f_lineno != 999_999


def test_the_kept_lines_are_bounded() -> None:
    namespace: dict[str, object] = {"user_line": user_line}
    for n in range(hints._LINES_KEPT * 2):  # code made on the fly: each its own code object
        exec(compile(f"where = user_line(1)  # {n}", f"/tmp/script_{n}.py", "exec"), namespace)
        where = namespace["where"]
        assert isinstance(where, tuple) and where[:2] == (f"/tmp/script_{n}.py", 1)
    assert len(hints._LINES) <= hints._LINES_KEPT


def test_the_line_at_the_bottom_of_a_long_script_is_right() -> None:
    # the line a warning points at, from the bottom of a long module (kept from the first time)
    source = "\n".join(
        [*(f"x{i} = {i}" for i in range(2000)), "import sys", "where = user_line(1)"]
    )
    namespace: dict[str, object] = {"user_line": user_line}
    code = compile(source, "/tmp/long_script.py", "exec")
    for _ in range(2):
        exec(code, namespace)
        assert namespace["where"][:2] == ("/tmp/long_script.py", 2002)  # type: ignore[index]
