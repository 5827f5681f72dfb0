"""FileRead, FileWrite, ListDirectory: confined to their root, whatever path the model sends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builtin_helpers import call, refused, run

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin import FileRead, FileWrite, ListDirectory

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ with notes.txt, sub/deep.txt, a binary file, a FIFO, and symlinks in and out;
    outside/ beside it holds a secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    (root / "notes.txt").write_text("hello notes")
    (root / "sub" / "deep.txt").write_text("deep")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "big.txt").write_text("x" * 2000)
    os.mkfifo(root / "pipe")
    (root / "inside_link.txt").symlink_to(root / "notes.txt")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "escape_dir").symlink_to(outside)
    (root / "loop").symlink_to(root / "loop")
    return root


HOSTILE_PATHS = [
    ("../outside/secret.txt", "contains '..'"),
    ("sub/../../outside/secret.txt", "contains '..'"),
    ("..", "contains '..'"),
    ("sub\\..\\..\\outside\\secret.txt", "contains '..'"),
    ("/etc/passwd", "is absolute"),
    ("\\etc\\passwd", "is absolute"),
    ("~/.ssh/id_rsa", "is absolute"),
    ("C:/Windows/win.ini", "is absolute"),
    ("escape.txt", "leads outside the root"),
    ("escape_dir/secret.txt", "leads outside the root"),
    ("notes.txt\x00.png", "NUL byte"),
    ("", "path is empty"),
    ("loop", ""),
]


@pytest.mark.parametrize(("path", "why"), HOSTILE_PATHS)
def test_file_read_refuses_every_way_out_of_the_root(tree: Path, path: str, why: str) -> None:
    result = call(FileRead(tree), path=path)
    assert refused(result, why)
    assert "TOP SECRET" not in result.output


@pytest.mark.parametrize(("path", "why"), HOSTILE_PATHS)
def test_file_write_refuses_every_way_out_of_the_root(tree: Path, path: str, why: str) -> None:
    result = call(FileWrite(tree, requires_approval=False), path=path, content="pwned")
    assert refused(result, why)
    assert (tree.parent / "outside" / "secret.txt").read_text() == "TOP SECRET"
    assert not (tree.parent / "outside" / "pwned").exists()


@pytest.mark.parametrize(("path", "why"), [p for p in HOSTILE_PATHS if p[0] not in ("", "loop")])
def test_list_directory_refuses_every_way_out_of_the_root(tree: Path, path: str, why: str) -> None:
    assert refused(call(ListDirectory(tree), path=path), why)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("image.png", "is a binary file"),
        ("big.txt", "is 2000 bytes; this tool reads at most 1000"),
        ("pipe", "is not a regular file"),
        ("sub", "is a directory"),
        ("missing.txt", "no such file: 'missing.txt'"),
        ("sub/missing.txt", "no such file: 'sub/missing.txt'"),
        ("nowhere/missing.txt", "no such directory: 'nowhere'"),
        ("notes.txt/x", "'notes.txt' is not a directory"),
        ("n" * 300, "cannot open 'nnn"),  # File name too long: not "no such file"
    ],
)
def test_file_read_refuses_what_it_cannot_read_as_text(tree: Path, path: str, why: str) -> None:
    assert refused(call(FileRead(tree, max_bytes=1000), path=path), why)


def test_file_read_reads_text_inside_the_root(tree: Path) -> None:
    reader = FileRead(tree)
    assert call(reader, path="notes.txt").output == "hello notes"
    assert call(reader, path="sub/deep.txt").output == "deep"
    assert call(reader, path="./sub/deep.txt").output == "deep"


def test_file_read_never_follows_a_symlink_and_names_where_an_inside_one_points(tree: Path) -> None:
    assert refused(
        call(FileRead(tree), path="inside_link.txt"),
        "'inside_link.txt' is a symlink (to 'notes.txt'); symlinks are not followed",
    )


def test_file_write_writes_appends_and_creates_folders(tree: Path) -> None:
    writer = FileWrite(tree, requires_approval=False)
    assert call(writer, path="out/report.md", content="# Hi").output == (
        "Wrote 4 bytes to out/report.md"
    )
    assert call(writer, path="out/report.md", content="!", append=True).is_success
    assert (tree / "out" / "report.md").read_text() == "# Hi!"


def test_file_write_refuses_content_over_the_cap_and_directories(tree: Path) -> None:
    writer = FileWrite(tree, requires_approval=False, max_bytes=10)
    assert refused(call(writer, path="a.txt", content="x" * 11), "content is 11 bytes")
    assert refused(call(writer, path="sub", content="x"), "is a directory")
    assert refused(call(writer, path=".", content="x"), "is a directory")
    assert not (tree / "a.txt").exists()


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("pipe", "'pipe' is not a regular file"),
        ("notes.txt/x.txt", "'notes.txt' is not a directory"),
        ("inside_link.txt", "'inside_link.txt' is a symlink (to 'notes.txt')"),
    ],
)
def test_file_write_refuses_what_is_no_regular_file_and_leaves_it_alone(
    tree: Path, path: str, why: str
) -> None:
    assert refused(call(FileWrite(tree, requires_approval=False), path=path, content="x"), why)
    assert (tree / "notes.txt").read_text() == "hello notes"


def test_file_write_without_create_directories_names_the_missing_folder(tree: Path) -> None:
    writer = FileWrite(tree, requires_approval=False, create_directories=False)
    assert refused(call(writer, path="sub/new/x.txt", content="x"), "no such directory: 'sub/new'")
    assert not (tree / "sub" / "new").exists()
    assert call(writer, path="sub/x.txt", content="x").is_success


def test_file_write_asks_the_reviewer_by_default(tree: Path) -> None:
    assert FileWrite(tree).requires_approval is True
    assert FileRead(tree).requires_approval is False


async def test_file_write_without_a_reviewer_stops_the_run_instead_of_writing(tree: Path) -> None:
    with pytest.raises(ConfigurationError, match="requires approval but no review handler"):
        await run(FileWrite(tree), '{"path": "x.txt", "content": "x"}')
    assert not (tree / "x.txt").exists()


def test_list_directory_lists_folders_files_and_links(tree: Path) -> None:
    listing = call(ListDirectory(tree), path=".").output.splitlines()
    assert listing == [
        "big.txt (2000 bytes)",
        "escape.txt@",
        "escape_dir@",
        "image.png (16 bytes)",
        "inside_link.txt@",
        "loop@",
        "notes.txt (11 bytes)",
        "pipe (0 bytes)",
        "sub/",
    ]
    assert call(ListDirectory(tree), path="sub").output == "deep.txt (4 bytes)"


def test_list_directory_caps_the_number_of_entries(tmp_path: Path) -> None:
    for index in range(30):
        (tmp_path / f"f{index:02}").write_text("")
    listing = call(ListDirectory(tmp_path, max_entries=5)).output.splitlines()
    assert listing[-1] == "[25 more entries not shown]"
    assert len(listing) == 6


def test_a_root_that_is_no_directory_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is not an existing directory"):
        FileRead(tmp_path / "nope")


def test_a_system_without_o_nofollow_and_dir_fd_refuses_the_tools_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentensemble.tools.builtin import _confine

    monkeypatch.setattr(_confine, "_SUPPORTED", False)  # as on Windows
    for tool in (FileRead, FileWrite, ListDirectory):
        with pytest.raises(ConfigurationError, match=f"{tool.__name__} needs O_NOFOLLOW"):
            tool(tmp_path)


@pytest.mark.parametrize("append", [False, True])
def test_file_write_refuses_a_hard_link_to_a_file_outside_the_root(
    tree: Path, append: bool
) -> None:
    secret = tree.parent / "outside" / "secret.txt"
    os.link(secret, tree / "linked.txt")  # the same file, a second name inside the root
    writer = FileWrite(tree, requires_approval=False)

    result = call(writer, path="linked.txt", content="overwritten", append=append)

    assert refused(result, "'linked.txt' is a hard link", "not all of them inside")
    assert secret.read_text() == "TOP SECRET"


def test_file_write_may_write_a_file_whose_every_name_is_inside_the_root(tree: Path) -> None:
    os.link(tree / "notes.txt", tree / "sub" / "same_notes.txt")
    writer = FileWrite(tree, requires_approval=False)
    assert call(writer, path="sub/same_notes.txt", content="new").is_success
    assert (tree / "notes.txt").read_text() == "new"
