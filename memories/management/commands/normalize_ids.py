"""Bring stored user/agent/session/group ids to their one spelling (NFKC,
see memories/identity.py), and recompute dedupe hashes of texts that carry
invisible characters. Collisions are reported, never merged: two rows that
would become one user, or two current memories that would share a hash, are
listed for an operator to decide (merge in the admin, or erase one)."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from memories.identity import invisible_characters, normalize_identifier
from memories.models import MemoryItem
from memories.text import content_hash
from memories.writing import current_memories, memory_refresh_content_hash, users_write_lock

# Every (table, column) that stores an id, with the tenant column that scopes it.
ID_COLUMNS: tuple[tuple[str, str], ...] = (
    ("memory_items", "user_id"), ("memory_items", "agent_id"), ("memory_items", "session_id"),
    ("memory_items", "group_id"), ("memory_vectors", "user_id"), ("memory_history", "user_id"),
    ("conversation_jobs", "user_id"), ("conversation_jobs", "session_id"), ("conversation_jobs", "agent_id"),
    ("conversation_jobs", "group_id"), ("review_candidates", "user_id"), ("review_candidates", "session_id"),
    ("review_candidates", "agent_id"), ("review_candidates", "group_id"), ("reflection_cycles", "user_id"),
    ("erasure_receipts", "user_id"), ("traits", "user_id"),
)


class Command(BaseCommand):
    help = ("Normalise stored ids (NFKC) and dedupe hashes; reports collisions and ids with invisible "
            "characters instead of merging them. Re-runnable; --dry-run changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, dry_run: bool, **options):
        renamed, collisions, refused = 0, [], []
        for table, column in ID_COLUMNS:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT DISTINCT tenant_id, {column} FROM {table} "  # noqa: S608 (fixed names)
                               f"WHERE {column} <> normalize({column}, NFKC) OR {column} ~ %s",
                               ["[\\u0000-\\u001f\\u007f\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\ufeff]"])
                rows = cursor.fetchall()
            for tenant_id, value in rows:
                if invisible_characters(value):
                    refused.append(f"{table}.{column} tenant {tenant_id}: {value!r}")
                    continue
                target = normalize_identifier(value, field=column)
                with transaction.atomic(), connection.cursor() as cursor:
                    if column == "user_id":  # both spellings' writers wait while the rows move
                        users_write_lock(tenant_id, [value, target])
                    cursor.execute(f"SELECT 1 FROM {table} WHERE tenant_id = %s AND {column} = %s LIMIT 1",
                                   [tenant_id, target])
                    if cursor.fetchone() and column == "user_id":
                        collisions.append(f"{table}.{column} tenant {tenant_id}: {value!r} -> {target!r} exists")
                        continue
                    if not dry_run:
                        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE tenant_id = %s AND {column} = %s",
                                       [target, tenant_id, value])
                renamed += 1
                self.stderr.write(f"  {table}.{column}: {value!r} -> {target!r}")
        rehashed, hash_collisions = self._rehash(dry_run)
        for line in collisions + hash_collisions:
            self.stdout.write(f"COLLISION {line}")
        for line in refused:
            self.stdout.write(f"INVISIBLE {line} (erase or rename by hand)")
        self.stdout.write(f"ids renamed: {renamed}; hashes recomputed: {rehashed}; collisions: "
                          f"{len(collisions) + len(hash_collisions)}; ids with invisible characters: {len(refused)}"
                          + (" (dry run: nothing changed)" if dry_run else ""))

    def _rehash(self, dry_run: bool) -> tuple[int, list[str]]:
        """Texts with format characters hash differently now (dedupe ignores them)."""
        changed, collisions = 0, []
        for item in MemoryItem.objects.filter(text__regex=r"[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]"):
            digest = content_hash(item.text)
            if digest == item.content_hash:
                continue
            if item.expired_at is None and current_memories(item.tenant_id, item.user_id).filter(
                    content_hash=digest).exclude(id=item.id).exists():
                collisions.append(f"memory {item.id} has the text of another current memory of its user")
                continue
            if not dry_run:
                memory_refresh_content_hash(memory_id=item.id)
            changed += 1
        return changed, collisions
