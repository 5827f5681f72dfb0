"""Turn a VCR cassette (YAML) into one trimmed corpus file (JSON): how the corpus was made.

Run by hand, not by pytest: ``python tests/replay/trim_cassette.py SRC.yaml OUT.json REPO PATH
COMMIT``. Keeps, per interaction, the request's method, path and JSON body, and the response's
status, content type and body (JSON, or the SSE text of a stream). Every header is dropped, so no
API key, cookie or account id a cassette may hold can reach the corpus; query strings are dropped
too (Gemini's ``key=`` travels there).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


def _content_type(headers: dict[str, Any] | None) -> str:
    for key, value in (headers or {}).items():
        if key.lower() == "content-type":
            return str(value[0] if isinstance(value, list) else value)
    return "application/json"


def trim(cassette: dict[str, Any]) -> list[dict[str, Any]]:
    """The interactions of ``cassette``, trimmed as the module doc says."""
    kept = []
    for interaction in cassette["interactions"]:
        request, response = interaction["request"], interaction["response"]
        url = urlsplit(request["uri"])
        body = request.get("parsed_body")
        if body is None and request.get("body"):
            body = json.loads(request["body"])
        answer: dict[str, Any] = {
            "status": response["status"]["code"],
            "content_type": _content_type(response.get("headers")).split(";")[0],
        }
        if "parsed_body" in response:
            answer["body"] = response["parsed_body"]
        else:
            text = response["body"]["string"]
            if answer["content_type"] == "text/event-stream" or text.lstrip().startswith(
                ("data:", "event:")
            ):
                answer["content_type"] = "text/event-stream"
                answer["sse"] = text
            else:
                answer["body"] = json.loads(text)
        kept.append(
            {
                "request": {"method": request["method"], "path": url.path, "body": body},
                "response": answer,
            }
        )
    return kept


def main(argv: list[str]) -> None:
    source, out, repo, path, commit = argv
    cassette = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    document = {
        "source": {"repo": repo, "path": path, "commit": commit},
        "interactions": trim(cassette),
    }
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    Path(out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
