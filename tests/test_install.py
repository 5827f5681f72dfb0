"""Installing the right thing: the distribution is ``agentensemble-py``, never ``agentensemble``.

The name ``agentensemble`` on the public package index belongs to an unrelated project: an install
line that names it installs a stranger's code, without our extras or our classes. Every install
line a user can read (README, docs, examples, error messages and hints in the packages) names
``agentensemble-py``; the import names are unchanged.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
READ_BY_USERS = [
    "README.md",
    "pyproject.toml",
    "docs/**/*.md",
    "examples/**/*.py",
    "examples/**/*.yaml",
]
READ_BY_USERS += [f"{package}/**/*.py" for package in ("agentensemble", "agentensemble_review")]
READ_BY_USERS += ["agentensemble_web/**/*.py", "agentensemble_web/static/*"]
# `pip install agentensemble`, `pip install 'agentensemble[web]'`, `agentensemble[web]` alone...
WRONG_NAME = re.compile(
    r"""pip install\s+(?:-\S+\s+)*["']?agentensemble(?!-py)\b|(?<![\w./-])agentensemble\["""
)


def _files() -> list[Path]:
    return sorted({path for pattern in READ_BY_USERS for path in REPO.glob(pattern)})


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("pip install agentensemble", True),
        ("pip install 'agentensemble[web]'", True),
        ('pip install -U "agentensemble[otel,web]"', True),
        ("extra ``agentensemble[durable]``", True),
        ('pip install "agentensemble-py[web]"', False),
        ("pip install agentensemble-py", False),
        ("pip install opentelemetry-exporter-otlp-proto-http", False),
    ],
)
def test_the_check_tells_a_wrong_install_line_from_a_right_one(text: str, wrong: bool) -> None:
    found = WRONG_NAME.search(text) is not None
    assert found is wrong, text


def test_no_install_line_names_the_strangers_distribution() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if WRONG_NAME.search(line)
    ]
    assert not offenders, "install `agentensemble-py`, not `agentensemble`:\n" + "\n".join(
        offenders
    )


def test_the_distribution_and_its_self_references_are_agentensemble_py() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^name = "agentensemble-py"$', pyproject, re.MULTILINE)
    assert '"agentensemble-py[web]"' in pyproject  # the dev extra pulls in the other extras


def _installed_by_a_plain_editable_install() -> bool:
    """``pip install -e`` alone leaves an import hook, which comes after the script's folder."""
    site = Path(sysconfig.get_paths()["purelib"])
    hook = any(site.glob("__editable___agentensemble*_finder.py"))
    return hook and not (site / "agentensemble-clone.pth").exists()


def test_a_script_saved_beside_the_clone_imports_this_package(tmp_path: Path) -> None:
    if _installed_by_a_plain_editable_install():
        pytest.skip(
            "this virtualenv was installed with a plain `pip install -e`: `make test` "
            "reinstalls it the way the Makefile does"
        )
    (tmp_path / "agentensemble").mkdir()  # the clone, seen from the folder that holds it
    script = tmp_path / "app.py"
    script.write_text("import agentensemble\nprint(agentensemble.Agent.__name__)\n")
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Agent"


def test_the_makefile_puts_the_clone_on_sys_path() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "'agentensemble-clone.pth').write_text(str(pathlib.Path.cwd())" in makefile


def test_the_readme_says_how_to_reach_the_command_after_make_demo() -> None:
    readme = (REPO / "README.md").read_text()
    assert "source .venv/bin/activate" in readme
    assert ".venv/bin/agentensemble run examples/crew.yaml" in readme


def _make(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    if subprocess.run(["make", "--version"], capture_output=True).returncode != 0:
        pytest.skip("make is not installed")
    return subprocess.run(
        ["make", "-s", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_the_makefile_s_minimum_python_is_the_package_s() -> None:
    makefile = (REPO / "Makefile").read_text()
    pyproject = (REPO / "pyproject.toml").read_text()
    minimum = re.search(r"^PYTHON_MIN \?= (\S+)$", makefile, re.MULTILINE)
    assert minimum and f'requires-python = ">={minimum.group(1)}"' in pyproject
    readme = (REPO / "README.md").read_text()
    assert f"`python3` ({minimum.group(1)}+)" in readme


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (["PYTHON_MIN=99.0"], "needs Python 99.0 or newer, and python3 is "),
        (["PYTHON=no-such-python3"], "no no-such-python3 on PATH"),
    ],
    ids=["too old", "missing"],
)
def test_make_says_what_to_do_about_an_unusable_python_before_making_anything(
    tmp_path: Path, settings: list[str], says: str
) -> None:
    venv = tmp_path / "venv"
    done = _make(f"{venv}/.installed", f"VENV={venv}", *settings)
    assert done.returncode != 0
    assert says in done.stdout + done.stderr
    assert not venv.exists()
