"""Split long texts into overlapping chunks that fit the embedder's window.

A recursive splitter: paragraphs, then lines, then sentences, then words,
then characters, packing pieces up to `size` characters with `overlap`
characters carried from the end of one chunk into the next.
"""

from __future__ import annotations

import re

_SEPARATORS = [re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?。！？;；])\s*"), re.compile(r"\s+")]


def split_text(text: str, *, size: int = 500, overlap: int = 50) -> list[str]:
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError("chunk size must be positive and overlap smaller than size")
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    pieces = _split_recursive(text, size, 0)
    return _pack(pieces, size, overlap)


def _split_recursive(text: str, size: int, level: int) -> list[str]:
    if len(text) <= size:
        return [text]
    if level >= len(_SEPARATORS):
        return [text[i : i + size] for i in range(0, len(text), size)]
    parts = [p for p in _SEPARATORS[level].split(text) if p and p.strip()]
    if len(parts) <= 1:
        return _split_recursive(text, size, level + 1)
    out: list[str] = []
    for part in parts:
        out.extend(_split_recursive(part.strip(), size, level + 1))
    return out


def _pack(pieces: list[str], size: int, overlap: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current} {piece}".strip() if current else piece
        if len(candidate) <= size:
            current = candidate
            continue
        if current:
            chunks.append(current)
            tail = _tail(current, overlap)
            current = f"{tail} {piece}".strip() if tail and len(tail) + 1 + len(piece) <= size else piece
        else:
            current = piece
    if current:
        chunks.append(current)
    return chunks


def _tail(text: str, overlap: int) -> str:
    """The last `overlap` characters, cut at a word boundary where there is one."""
    if overlap == 0:
        return ""
    tail = text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < len(tail) - 1 else tail
