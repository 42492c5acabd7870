"""Documents (seed 004 §7.3): a file's text kept as memories of type document, one per chunk, each
naming its file and place: data {"file_id", "file_name", "chunk_index", "chunk_count"}.

A chunk is one embedding window (vectors.EMBEDDING_CHUNK_CHARS, the same recursive splitter), so each
chunk memory has one vector and a search hit names the part of the file that matched. The chunks pass
the gate every save passes (applier.apply_saves: a chunk carrying sensitive data waits for review) and
the writer (one transaction, history, content hash): the same file saved again changes nothing. The
file's own row the seed leaves optional (a `document_files` table) is not kept: a user's files are
listed from their chunks (`documents_of_user`), the chunk rows carrying every field of it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from memories import vocabulary
from memories.applier import Submitter, apply_saves
from memories.chunking import split_text
from memories.models import KeyRole, MemoryItem, MemoryType, Tenant
from memories.vectors import EMBEDDING_CHUNK_CHARS, EMBEDDING_CHUNK_OVERLAP
from memories.writing import MemorySpec

FILE_NAME_MAX_CHARS = 255


@dataclass
class SavedDocument:
    file_id: str
    file_name: str
    chunks: list[dict]  # {chunk_index, operation (ADD, NOOP, UPDATE, REVIEW), memory_id or None}


def document_save(*, tenant: Tenant, user_id: str, file_name: str, text: str, actor: str,
                  file_id: str | None = None, agent_id: str = "", role: str = KeyRole.REVIEWER,
                  chunk_chars: int = EMBEDDING_CHUNK_CHARS, overlap: int = EMBEDDING_CHUNK_OVERLAP) -> SavedDocument:
    """Split `text` and save each chunk as a document memory of `user_id` naming the file; a new file id
    unless one is given (saving a file again under its id adds only what changed)."""
    file_name = file_name.strip()[:FILE_NAME_MAX_CHARS]
    if not file_name:
        raise ValueError("a document needs a file name")
    file_id = file_id or str(uuid.uuid4())
    pieces = split_text(text, size=chunk_chars, overlap=overlap)
    if not pieces:
        raise ValueError("the document has no text")
    specs = [MemorySpec(user_id=user_id, text=piece, memory_type=MemoryType.DOCUMENT, agent_id=agent_id,
                        data={"file_id": file_id, "file_name": file_name, "chunk_index": index,
                              "chunk_count": len(pieces)}) for index, piece in enumerate(pieces)]
    applied = apply_saves(tenant=tenant, specs=specs, submitter=Submitter(actor=actor, role=role))
    return SavedDocument(file_id=file_id, file_name=file_name, chunks=[
        {"chunk_index": index, "operation": done.operation,
         "memory_id": str(done.memory.id) if done.memory is not None else None}
        for index, done in enumerate(applied)])


def documents_of_user(*, tenant: Tenant, user_id: str) -> list[dict]:
    """The user's files from their current chunks: file id, name, chunks held, first saved; newest first."""
    files: dict[str, dict] = {}
    chunks = (MemoryItem.objects.filter(vocabulary.is_current(), tenant=tenant, user_id=user_id,
                                        memory_type=MemoryType.DOCUMENT, data__has_key="file_id")
              .order_by("created_at", "id").values("id", "data", "created_at"))
    for chunk in chunks:
        data = chunk["data"]
        entry = files.setdefault(str(data["file_id"]), {
            "file_id": str(data["file_id"]), "file_name": data.get("file_name", ""),
            "chunk_count": data.get("chunk_count"), "chunks": [], "created_at": chunk["created_at"]})
        entry["chunks"].append({"chunk_index": data.get("chunk_index"), "memory_id": str(chunk["id"])})
    for entry in files.values():
        entry["chunks"].sort(key=lambda c: (c["chunk_index"] is None, c["chunk_index"]))
    return sorted(files.values(), key=lambda f: f["created_at"], reverse=True)
