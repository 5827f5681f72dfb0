"""The ``attachments:`` of a task in a crew file (docs/yaml.md):

```yaml
tasks:
  - description: Read the invoice and the receipt
    attachments:
      - document: invoice.pdf                 # a path, against the crew file's folder
      - image: https://example.com/logo.png   # an http(s) URL
      - audio: {path: call.wav, media_type: audio/wav}
      - document: {path: notes.txt, name: Notes}
```

Each entry names one kind (``image``, ``document``, ``audio``) with a path or URL, or with the
settings its class takes; a bad entry is a ``ConfigFileError`` at its line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentensemble.attachments import Attachment, Audio, Document, Image
from agentensemble.config._memory import crew_path
from agentensemble.config._positions import Located, Path
from agentensemble.config._values import as_list, kind_of

KINDS: dict[str, type[Attachment]] = {"image": Image, "document": Document, "audio": Audio}
SETTINGS: dict[str, tuple[str, ...]] = {
    "image": ("url", "path", "media_type"),
    "document": ("url", "path", "media_type", "name"),
    "audio": ("url", "path", "media_type"),
}
_EXAMPLE = "e.g. - document: invoice.pdf, or - image: {url: https://..., media_type: image/png}"


def attachment_entries(doc: Located, path: Path, value: Any) -> list[Attachment]:
    """A task's ``attachments:`` as attachments, paths resolved against the crew file's folder."""
    made: list[Attachment] = []
    for index, entry in enumerate(as_list(doc, path, value)):
        where = (*path, index)
        if not isinstance(entry, Mapping) or len(entry) != 1 or next(iter(entry)) not in KINDS:
            raise doc.error(
                where, f"an attachment is one of image:, document:, audio: ({_EXAMPLE})"
            )
        ((kind, spec),) = entry.items()
        if isinstance(spec, str):
            spec = {"url": spec} if spec.startswith(("http://", "https://")) else {"path": spec}
        if not isinstance(spec, Mapping):
            raise doc.error(
                (*where, kind), f"expected a path, a URL or settings, got {kind_of(spec)}"
            )
        unknown = sorted(set(spec) - set(SETTINGS[kind]))
        if unknown:
            raise doc.error(
                (*where, kind),
                f"{kind} takes {', '.join(SETTINGS[kind])}; got {', '.join(unknown)}",
            )
        settings = dict(spec)
        if isinstance(settings.get("path"), str):
            settings["path"] = crew_path(settings["path"])
        try:
            made.append(KINDS[kind](**settings))
        except (TypeError, ValueError) as error:
            raise doc.error((*where, kind), str(error)) from None
    return made


__all__ = ["attachment_entries"]
