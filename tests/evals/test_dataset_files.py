"""Dataset files: the documented schema, a save/load round trip, and errors naming file and
line before anything runs."""

from __future__ import annotations

import json
import os
import textwrap
import threading
from pathlib import Path

import pytest

from agentensemble.config._positions import ConfigFileError
from agentensemble.errors import ConfigurationError
from agentensemble.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    LLMJudge,
    MatchesType,
    MaxCost,
    MaxDuration,
    MaxTokens,
    Reviewed,
    ToolCalled,
    Trajectory,
)

SCHEMA = Path(__file__).resolve().parents[2] / "agentensemble" / "evals" / "dataset.schema.json"

GOOD = """\
name: capitals
evaluators:
  - Equals
  - MaxTokens: {n: 500}
cases:
  - name: france
    inputs: {country: France}
    expected: The capital is Paris.
    metadata: {difficulty: easy}
    evaluators:
      - Contains: Paris
      - ToolCalled: {name: capital_of, arguments: {country: France}, times: 1}
      - Trajectory: {expected: [capital_of], mode: exact}
      - Reviewed
      - Reviewed: {tool: send_email, decision: edit}
  - name: typed
    inputs: {country: Italy}
    evaluators:
      - MatchesType: {type: str}
      - LLMJudge: {rubric: Names the capital, llm: openai/gpt-4o-mini, threshold: 0.7}
"""


def write(tmp_path: Path, text: str, name: str = "data.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_yaml_file_reads_as_the_dataset_it_describes(tmp_path: Path) -> None:
    dataset = Dataset.from_file(write(tmp_path, GOOD))
    assert dataset.name == "capitals"
    assert dataset.evaluators == [Equals(), MaxTokens(500)]
    france, typed = dataset.cases
    assert france.inputs == {"country": "France"}
    assert france.metadata == {"difficulty": "easy"}
    assert france.evaluators == [
        Contains("Paris"),
        ToolCalled("capital_of", {"country": "France"}, 1),
        Trajectory(["capital_of"], mode="exact"),
        Reviewed(),
        Reviewed(tool="send_email", decision="edit"),
    ]
    assert typed.evaluators[0] == MatchesType(str)
    assert typed.evaluators[1] == LLMJudge("Names the capital", "openai/gpt-4o-mini", 0.7)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_save_and_from_file_round_trip(tmp_path: Path, suffix: str) -> None:
    dataset = Dataset.from_file(write(tmp_path, GOOD))
    path = tmp_path / f"again{suffix}"
    dataset.save(path)
    again = Dataset.from_file(path)
    assert again.model_dump() == dataset.model_dump()
    if suffix == ".json":
        assert json.loads(path.read_text())["cases"][0]["name"] == "france"


def test_a_python_dataset_saves_with_every_evaluator(tmp_path: Path) -> None:
    dataset = Dataset(
        name="all",
        evaluators=[MaxDuration(2.5), MaxCost(0.01)],
        cases=[Case(name="one", inputs={"x": 1}, expected={"a": [1, 2]}, evaluators=[Equals()])],
    )
    dataset.save(tmp_path / "all.yml")
    assert Dataset.from_file(tmp_path / "all.yml").model_dump() == dataset.model_dump()


def polite(ctx: object) -> bool:
    return True


def test_a_callable_evaluator_is_saved_as_its_import_path(tmp_path: Path) -> None:
    dataset = Dataset(name="mine", cases=[Case(name="c", evaluators=[polite])])
    assert dataset.to_data()["cases"][0]["evaluators"] == [f"{__name__}:polite"]
    with pytest.raises(ValueError, match="lambda"):
        Dataset(name="x", cases=[Case(name="c", evaluators=[lambda ctx: True])]).save(
            tmp_path / "x.yaml"
        )


def test_an_import_path_names_a_function_beside_the_file(tmp_path: Path) -> None:
    (tmp_path / "evalchecks_beside.py").write_text(
        "def short(ctx):\n    return len(ctx.output.raw) < 50\n"
    )
    dataset = Dataset.from_file(
        write(tmp_path, "cases:\n  - name: a\n    evaluators: [evalchecks_beside:short]\n")
    )
    assert dataset.name == "data"  # the file's name when the file has none
    assert dataset.cases[0].evaluators[0].__name__ == "short"


EV = "cases:\n  - name: a\n    evaluators:\n      - "


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            "name: x\ncases:\n  - name: a\n    evaluators:\n      - Equal\n",
            5,
            "Did you mean Equals?",
        ),
        ("cases:\n  - name: a\n    evaluators: [Nope]\n", 3, "Known evaluators: Equals, Contains"),
        ("cases:\n  - name: a\n  - name: a\n", 3, "already case 0"),
        ("cases:\n  - inputs: {x: 1}\n", 2, "every case needs a name"),
        ("cases:\n  - name: a\n    input: {x: 1}\n", 3, "unknown key in a case"),
        (EV + "Contains: {txt: P}\n", 4, "Contains"),
        (EV + "MaxTokens: lots\n", 4, "MaxTokens"),
        (
            EV + "Trajectory: {expected: [a], mode: sorted}\n",
            4,
            "mode",
        ),
        (
            EV + "{Contains: a, Equals: null}\n",
            4,
            "one-key mapping",
        ),
        (
            EV + "MatchesType: {type: nowhere:Thing}\n",
            4,
            "cannot import",
        ),
        ("cases:\n  - name: a\n    inputs: [1]\n", 3, "inputs is a mapping"),
        ("name: x\ncases: {a: 1}\n", 2, "expected a list"),
        ("name: x\n", 1, "has no 'cases'"),
        ("name: x\ncases:\n  - name: [a\n", 4, "not valid YAML"),
        ("- just\n- a list\n", 1, "a dataset file is a mapping"),
        ("cases:\n  - name: a\n    evaluators: !!python/object:os.system {}\n", 3, "not allowed"),
    ],
)
def test_a_malformed_file_names_the_file_and_the_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as caught:
        Dataset.from_file(path)
    assert caught.value.file == str(path)
    assert caught.value.line == line, str(caught.value)
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"{path}:{line}:")
    assert isinstance(caught.value, ConfigurationError)


@pytest.mark.parametrize(
    ("evaluator", "field"),
    [
        ("LLMJudge: {rubric: r, llm: m, threshold: .nan}", "threshold"),  # never passed
        ("LLMJudge: {rubric: r, llm: m, threshold: 5}", "threshold"),  # never passed
        ("LLMJudge: {rubric: r, llm: m, threshold: -1}", "threshold"),
        ("MaxDuration: {seconds: -1}", "seconds"),  # never passed
        ("MaxDuration: {seconds: .inf}", "seconds"),  # always passed
        ("MaxCost: {usd: .nan}", "usd"),
        ("MaxTokens: {n: -1}", "n"),
        ("ToolCalled: {name: search, times: -2}", "times"),
        ("Reviewed: {times: -1}", "times"),
    ],
)
def test_a_limit_that_means_nothing_is_refused_at_its_line(
    tmp_path: Path, evaluator: str, field: str
) -> None:
    # dataset.schema.json said 0..1 and >= 0; the loader took any number, and an evaluator
    # that could never pass (or always would) ran silently
    path = write(tmp_path, EV + evaluator + "\n")
    with pytest.raises(ConfigFileError) as caught:
        Dataset.from_file(path)
    assert str(caught.value).startswith(f"{path}:4:") and field in str(caught.value)


def test_bad_json_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, '{"cases": [\n  {"name": "a"},\n  oops\n]}\n', "data.json")
    with pytest.raises(ConfigFileError, match=r"data.json:3: not valid JSON"):
        Dataset.from_file(path)


def test_json_errors_have_lines_too(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{\n  "cases": [\n    {"name": "a", "evaluators": ["Equls"]}\n  ]\n}\n', "d.json"
    )
    with pytest.raises(ConfigFileError, match=r"d.json:3: cases\[0\].evaluators\[0\]: unknown"):
        Dataset.from_file(path)


@pytest.mark.parametrize("name", ["data.txt", "missing.yaml"])
def test_a_file_that_cannot_be_a_dataset_is_refused(tmp_path: Path, name: str) -> None:
    if name.endswith(".txt"):
        write(tmp_path, "cases: []", name)
    with pytest.raises(ConfigFileError, match=name):
        Dataset.from_file(tmp_path / name)


def test_python_datasets_refuse_duplicate_names_and_non_evaluators() -> None:
    with pytest.raises(ValueError, match="two cases are named 'a'"):
        Dataset(name="d", cases=[Case(name="a"), Case(name="a")])
    with pytest.raises(ValueError, match="not an evaluator"):
        Case(name="a", evaluators=["Equals"])


def test_the_json_schema_accepts_the_documented_file_and_refuses_mistakes(tmp_path: Path) -> None:
    import jsonschema
    import yaml

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(yaml.safe_load(GOOD))
    validator.validate(Dataset.from_file(write(tmp_path, GOOD)).to_data())
    for bad in (
        {"cases": [{"name": "a", "evaluators": ["Equal"]}]},
        {"cases": [{"name": "a", "input": {}}]},
        {"cases": [{"name": "a", "evaluators": [{"Trajectory": {"expected": [], "mode": "x"}}]}]},
    ):
        assert list(validator.iter_errors(bad)), bad


def test_the_schema_knows_every_builtin_evaluator() -> None:
    from agentensemble.evals._files import BUILTINS

    text = SCHEMA.read_text()
    for name in BUILTINS:
        assert f'"{name}"' in text


def test_a_file_too_large_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentensemble.evals import _files

    monkeypatch.setattr(_files, "MAX_FILE_BYTES", 100)
    path = write(tmp_path, "cases:\n" + "  - name: a\n" * 20)
    with pytest.raises(ConfigFileError, match="larger than 100 bytes"):
        Dataset.from_file(path)


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    path = write(tmp_path, "\n".join(lines) + "\ncases: *a7\n")
    with pytest.raises(ConfigFileError, match="too large or too deep"):
        Dataset.from_file(path)


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("deep.yaml", "[" * 100_000 + "]" * 100_000, "too deep"),
        ("digits.json", '{"cases": [{"name": "a", "inputs": {"x": ' + "9" * 5000 + "}}]}", "4300"),
        ("digits.yaml", "cases: [{name: a, inputs: {x: " + "9" * 5000 + "}}]", "number this long"),
        ("hex.yaml", "cases: [{name: a, inputs: {x: 0x" + "f" * 5000 + "}}]", "number this long"),
        ("dup.json", '{"cases": [{"name": "a", "inputs": {}, "inputs": {"x": 1}}]}', "'inputs'"),
        ("dup.yaml", "cases: [{name: a, inputs: {}, inputs: {x: 1}}]", "appears twice"),
    ],
)
def test_a_hostile_file_is_one_error_naming_it(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    """Deep nesting, a 5,000-digit number and a duplicated key: refused as the docs say, in
    one ConfigFileError naming the file, never a RecursionError or ValueError traceback."""
    path = write(tmp_path, text, name)
    with pytest.raises(ConfigFileError) as caught:
        Dataset.from_file(path)
    assert str(caught.value).startswith(str(path)), str(caught.value)
    assert words in str(caught.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs: POSIX")
def test_a_dataset_path_that_is_no_regular_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The size was checked on the name (a FIFO's is 0), then the file read whole: a FIFO named
    ``cases.yaml`` blocked ``agentensemble eval`` for ever, ``/dev/zero`` filled its memory."""
    os.mkfifo(tmp_path / "cases.yaml")
    outcome: list[BaseException] = []

    def target() -> None:
        try:
            Dataset.from_file(tmp_path / "cases.yaml")
        except BaseException as error:  # handed to the test
            outcome.append(error)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(30)
    assert outcome, "reading the dataset blocked on a FIFO"
    assert isinstance(outcome[0], ConfigFileError)
    assert "cases.yaml: the file is not a regular file" in str(outcome[0])
