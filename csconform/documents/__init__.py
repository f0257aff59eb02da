"""The one reader of every file csconform is handed: bounded, decoded, parsed, checked, located.

:mod:`.files` reads a regular file's bytes and UTF-8 text within a bound; :mod:`.parse` turns YAML
or JSON text into a :class:`Document` under one policy (one depth limit, non-finite numbers and
alias bombs refused, a key given twice refused or recorded); :mod:`.document` keeps the line of
every key so that a finding can point into the file. Every way a file can be unreadable is one
:class:`~csconform.errors.UnreadableDocumentError` naming the file and, when known, the line.
"""

from csconform.documents.document import Document, KeyPath, RepeatedKey, dotted
from csconform.documents.files import MAX_TEXT_BYTES, decode_text, read_bytes, read_text
from csconform.documents.parse import MAX_DEPTH, check_data, format_of, parse_document, read_document

__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT_BYTES",
    "Document",
    "KeyPath",
    "RepeatedKey",
    "check_data",
    "decode_text",
    "dotted",
    "format_of",
    "parse_document",
    "read_bytes",
    "read_document",
    "read_text",
]
