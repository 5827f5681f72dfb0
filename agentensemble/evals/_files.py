"""Dataset files (YAML or JSON) to a ``Dataset`` and back, with errors naming file and line.

Lines come from the crew-file loader's ``_positions`` (the same bounded, safe YAML reading);
an evaluator is its class name (``- Equals``), a one-key mapping to its keyword arguments
(``- Contains: {text: Paris}``) or to its one argument (``- Contains: Paris``), or an import
path to your own callable (``- checks:polite``), imported from beside the file.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentensemble._base.regular_file import UnreadableFile, read_regular_file
from agentensemble._base.saveable import jsonable
from agentensemble.config._crew_imports import (
    crew_folder,
    current_crew_folder,
    importable_crew_folder,
)
from agentensemble.config._crew_paths import in_crew_folder
from agentensemble.config._positions import ConfigFileError, Located, Path, load_located
from agentensemble.config._refs import BadReference, import_object, is_import_path
from agentensemble.evals._case import Case, DatasetModel
from agentensemble.evals.evaluators import (
    Contains,
    Equals,
    Evaluator,
    MatchesType,
    MaxCost,
    MaxDuration,
    MaxTokens,
    ToolCalled,
    evaluator_arguments,
)
from agentensemble.evals.judge import LLMJudge
from agentensemble.evals.reviewed import Reviewed
from agentensemble.evals.trajectory import Trajectory
from agentensemble.untrusted import UntrustedInputError, parse_json

D = TypeVar("D", bound=DatasetModel)

MAX_FILE_BYTES = 20_000_000
SUFFIXES = (".yaml", ".yml", ".json")
TOP_LEVEL = ("name", "evaluators", "cases")
_IGNORED = ("$schema", "description")  # an editor's schema link, a note for people
CASE_KEYS = ("name", "inputs", "expected", "metadata", "evaluators")
BUILTINS: dict[str, type[Evaluator]] = {
    cls.__name__: cls
    for cls in (
        Equals,
        Contains,
        MatchesType,
        MaxDuration,
        MaxTokens,
        MaxCost,
        ToolCalled,
        Trajectory,
        Reviewed,
        LLMJudge,
    )
}
TYPE_NAMES: dict[str, type] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
}


def read_dataset(path: str | os.PathLike[str], cls: type[D]) -> D:
    """The dataset in ``path``, built as ``cls`` (``Dataset``, with its file methods)."""
    file = FilePath(path)
    source = str(file)
    if file.suffix.lower() not in SUFFIXES:
        raise ConfigFileError(
            f"a dataset file ends in {', '.join(SUFFIXES)}", file=source, line=None, key=""
        )
    try:  # bounded by what is opened: a FIFO would block, /dev/zero never end
        text = read_regular_file(file, max_bytes=MAX_FILE_BYTES).decode("utf-8")
    except UnreadableFile as error:
        too_large = f"the file is larger than {MAX_FILE_BYTES} bytes"
        reason = too_large if error.too_large else f"the file {error.reason}"
        raise ConfigFileError(reason, file=source, line=None, key="") from None
    except UnicodeDecodeError as error:
        raise ConfigFileError(
            f"cannot read the file: {error}", file=source, line=None, key=""
        ) from None
    with crew_folder(str(file.resolve().parent)):
        return build_dataset(_located(text, source, json_file=file.suffix.lower() == ".json"), cls)


def _located(text: str, source: str, *, json_file: bool) -> Located:
    if not json_file:
        return load_located(text, source)
    try:  # bounded: a deep, huge-number or duplicate-key file is one line, never a traceback
        data = parse_json(text, what="the file", max_chars=MAX_FILE_BYTES, unique_keys=True)
    except UntrustedInputError as error:
        cause = error.__cause__
        line = cause.lineno if isinstance(cause, json.JSONDecodeError) else None
        raise ConfigFileError(error.reason, file=source, line=line, key="") from None
    try:  # JSON is YAML: read it again for the lines of its keys
        return load_located(text, source)
    except ConfigFileError:  # a few JSON texts (tabs) are not YAML 1.1: no lines then
        return Located(data=data, source=source)


def build_dataset(doc: Located, cls: type[D]) -> D:
    """A ``cls`` dataset from file data; every mistake raises ConfigFileError at its line."""
    data = doc.data
    if not isinstance(data, Mapping):
        raise doc.error((), f"a dataset file is a mapping with {', '.join(TOP_LEVEL)}")
    _known_keys(doc, (), data, (*TOP_LEVEL, *_IGNORED), "a dataset file")
    name = data.get("name", FilePath(doc.source).stem)
    if not isinstance(name, str) or not name:
        raise doc.error(("name",), "the dataset's name is a non-empty text")
    if "cases" not in data:
        raise doc.error((), "the dataset has no 'cases': a list of cases, each with a name")
    cases = [
        _case(doc, ("cases", i), spec)
        for i, spec in enumerate(_list(doc, ("cases",), data["cases"]))
    ]
    seen: dict[str, int] = {}
    for index, case in enumerate(cases):
        if case.name in seen:
            raise doc.error(
                ("cases", index, "name"),
                f"a case named {case.name!r} is already case {seen[case.name]}",
            )
        seen[case.name] = index
    evaluators = _evaluators(doc, ("evaluators",), data.get("evaluators"))
    return cls(name=name, cases=cases, evaluators=evaluators)


def _case(doc: Located, path: Path, spec: Any) -> Case:
    if not isinstance(spec, Mapping):
        raise doc.error(path, f"a case is a mapping with {', '.join(CASE_KEYS)}")
    _known_keys(doc, path, spec, CASE_KEYS, "a case")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise doc.error((*path, "name"), "every case needs a name (a non-empty text)")
    for key in ("inputs", "metadata"):
        if not isinstance(spec.get(key, {}), Mapping):
            raise doc.error((*path, key), f"{key} is a mapping of names to values")
    return Case(
        name=name,
        inputs=dict(spec.get("inputs") or {}),
        expected=spec.get("expected"),
        metadata=dict(spec.get("metadata") or {}),
        evaluators=_evaluators(doc, (*path, "evaluators"), spec.get("evaluators")),
    )


def _evaluators(doc: Located, path: Path, value: Any) -> list[Any]:
    if value is None:
        return []
    return [_evaluator(doc, (*path, i), spec) for i, spec in enumerate(_list(doc, path, value))]


def _evaluator(doc: Located, path: Path, spec: Any) -> Any:
    if isinstance(spec, str):
        name, arguments = spec, None
    elif isinstance(spec, Mapping) and len(spec) == 1:
        name, arguments = next(iter(spec.items()))
    else:
        raise doc.error(
            path,
            "an evaluator is its name (- Equals) or a one-key mapping to its arguments "
            "(- Contains: {text: Paris})",
        )
    if is_import_path(name):
        return _custom(doc, path, name, arguments)
    cls = BUILTINS.get(name)
    if cls is None:
        close = difflib.get_close_matches(name, BUILTINS, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise doc.error(
            path,
            f"unknown evaluator {name!r}.{hint} Known evaluators: {', '.join(BUILTINS)}; "
            "or your own as package.module:function",
        )
    try:
        if isinstance(arguments, Mapping):
            return cls(**{k: _argument(doc, path, cls, k, v) for k, v in arguments.items()})
        if arguments is None:
            return cls()
        first = _first_field(cls)
        return cls(_argument(doc, path, cls, first, arguments))  # type: ignore[call-arg]
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in error.errors()
        )
        raise doc.error(path, f"{name}: {problems}") from None
    except TypeError as error:
        raise doc.error(path, f"{name}: {error}") from None


def _first_field(cls: type[Evaluator]) -> str:
    import dataclasses

    return dataclasses.fields(cls)[0].name  # type: ignore[arg-type]


def _argument(doc: Located, path: Path, cls: type[Evaluator], key: str, value: Any) -> Any:
    if cls is MatchesType and key == "type" and isinstance(value, str):
        if value in TYPE_NAMES:
            return TYPE_NAMES[value]
        return _imported(doc, (*path, key), value)
    return value


def _custom(doc: Located, path: Path, name: str, arguments: Any) -> Any:
    found = _imported(doc, path, name)
    folder = current_crew_folder()
    if isinstance(found, type) and isinstance(arguments, Mapping) and folder is not None:
        arguments = in_crew_folder(found, arguments, folder)  # relative paths: the file's folder
    if arguments is not None:  # a class or factory of evaluators, given its arguments
        try:
            found = found(**arguments) if isinstance(arguments, Mapping) else found(arguments)
        except Exception as error:
            raise doc.error(path, f"{name}: {error}") from None
    if not callable(found):
        raise doc.error(path, f"{name} is a {type(found).__name__}, not a callable evaluator")
    return found


def _imported(doc: Located, path: Path, reference: str) -> Any:
    try:
        with importable_crew_folder():
            return import_object(reference)
    except BadReference as error:
        raise doc.error(path, str(error)) from None


def _known_keys(doc: Located, path: Path, spec: Mapping[str, Any], known: Any, what: str) -> None:
    for key in spec:
        if key not in known:
            raise doc.error(
                (*path, key), f"unknown key in {what}: use {', '.join(k for k in known)}"
            )


def _list(doc: Located, path: Path, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise doc.error(path, f"expected a list, got {type(value).__name__}")
    return value


# -- writing --------------------------------------------------------------------------------


def evaluator_spec(evaluator: Any) -> Any:
    """An evaluator in its file form; ValueError for one that has no such form (a lambda)."""
    if isinstance(evaluator, Evaluator):
        name = type(evaluator).__name__
        arguments = {k: _saved(name, k, v) for k, v in evaluator_arguments(evaluator).items()}
        return {name: arguments} if arguments else name
    module = getattr(evaluator, "__module__", None)
    qualname = getattr(evaluator, "__qualname__", None)
    if module and qualname and "<" not in qualname and module != "__main__":
        return f"{module}:{qualname}"
    raise ValueError(
        f"cannot save the evaluator {evaluator!r}: a dataset file names a callable by its "
        "import path, which a lambda, a local function or a __main__ function lacks"
    )


def _saved(name: str, key: str, value: Any) -> Any:
    if isinstance(value, type):
        for type_name, known in TYPE_NAMES.items():
            if value is known:
                return type_name
        return f"{value.__module__}:{value.__qualname__}"
    if name == "LLMJudge" and key == "llm" and not isinstance(value, str):
        model = getattr(value, "model", None)
        if not isinstance(model, str):
            raise ValueError("cannot save an LLMJudge whose llm has no model name")
        return model
    return jsonable(value)


def dataset_data(dataset: DatasetModel) -> dict[str, Any]:
    data: dict[str, Any] = {"name": dataset.name}
    if dataset.evaluators:
        data["evaluators"] = [evaluator_spec(e) for e in dataset.evaluators]
    data["cases"] = [case_data(case, with_evaluators=True) for case in dataset.cases]
    return data


def case_data(case: Case, *, with_evaluators: bool) -> dict[str, Any]:
    """A case in file form; reports keep it without evaluators (they hold the results)."""
    data: dict[str, Any] = {"name": case.name}
    if case.inputs:
        data["inputs"] = jsonable(case.inputs)
    if case.expected is not None:
        expected = case.expected
        data["expected"] = jsonable(
            expected.model_dump(mode="json") if isinstance(expected, BaseModel) else expected
        )
    if case.metadata:
        data["metadata"] = jsonable(case.metadata)
    if with_evaluators and case.evaluators:
        data["evaluators"] = [evaluator_spec(e) for e in case.evaluators]
    return data


def write_dataset(dataset: DatasetModel, path: str | os.PathLike[str]) -> None:
    file = FilePath(path)
    data = dataset_data(dataset)
    if file.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    file.write_text(text, encoding="utf-8")


__all__ = [
    "BUILTINS",
    "build_dataset",
    "case_data",
    "dataset_data",
    "evaluator_spec",
    "read_dataset",
    "write_dataset",
]
