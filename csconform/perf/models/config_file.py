"""Reading a model config file: a mapping of fields, through the one document reader.

YAML for ``.yaml``/``.yml``, JSON otherwise (:mod:`csconform.documents`): a file that cannot be read
as a mapping of fields (not UTF-8 text, not JSON or YAML, nested deeper than 64 levels, a non-finite
number, a key given twice) is an :class:`~csconform.errors.UnreadableDocumentError` naming the file
and, where it can, the line and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from csconform.documents import read_document

MAX_FILE_BYTES = 16 * 2**20  # a config.json is a few kB; anything this large is not one


def read_config(path: str | Path) -> dict[str, Any]:
    """The fields of the config file ``path``."""
    return read_document(path, what="model config", max_bytes=MAX_FILE_BYTES).data
