"""The keyword-statistics trigger takes users' write locks in the writer's order, and can check it.

Issue 51: jobs of the same people deadlocked, one waiting for a user's advisory write lock while
holding a row the other needed. Writers now take their users' locks first (writing.users_write_lock,
code-point order of the user ids); the trigger, which locks the users whose counts a statement
changes, orders them the same way (COLLATE "C": code-point order, as Python sorts), so where it does
take a lock itself, it agrees with the writers. With the `memory.write_lock_check` option on (the test
suite, settings.WRITE_LOCK_ORDER_CHECK) it refuses rows of a user whose lock the transaction did not take
before writing them: such a writer had row locks before it waited, the deadlock's shape.

The function's body is 0017's, with the lock statement replaced. Reverse: 0017's function.
"""

from importlib import import_module

from django.db import migrations

_FORWARD_0017: str = import_module("memories.migrations.0017_keyword_statistics").FORWARD
_START = _FORWARD_0017.index("CREATE FUNCTION memory_keyword_stats_apply()")
_END = _FORWARD_0017.index("END $$;", _START) + len("END $$;")
FUNCTION_0017 = _FORWARD_0017[_START:_END].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)

LOCK_0017 = """    PERFORM pg_advisory_xact_lock(hashtextextended('ingest:' || u.tenant_id || ':' || u.user_id, 0))
       FROM (SELECT DISTINCT t, u FROM unnest(tenants, users) AS x(t, u) ORDER BY 1, 2) AS u(tenant_id, user_id);
"""
# Keys as writing.write_lock_key spells them; ordered as writing.users_write_lock takes them.
LOCK_IN_WRITER_ORDER = """    IF current_setting('memory.write_lock_check', true) = 'on' THEN
        SELECT string_agg(k.key, ', ') INTO late
          FROM (SELECT DISTINCT 'ingest:' || t || ':' || u AS key FROM unnest(tenants, users) AS x(t, u)) AS k
         WHERE NOT EXISTS (
               SELECT 1 FROM pg_locks l
                WHERE l.pid = pg_backend_pid() AND l.locktype = 'advisory' AND l.objsubid = 1
                  AND l.classid = ((hashtextextended(k.key, 0) >> 32) & 4294967295)::oid
                  AND l.objid = (hashtextextended(k.key, 0) & 4294967295)::oid);
        IF late IS NOT NULL THEN
            RAISE EXCEPTION 'memory rows written before the write lock % was taken (writing.users_write_lock)', late
                  USING ERRCODE = 'P0001';
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('ingest:' || u.tenant_id || ':' || u.user_id, 0))
       FROM (SELECT DISTINCT t, u COLLATE "C" FROM unnest(tenants, users) AS x(t, u) ORDER BY 1, 2)
            AS u(tenant_id, user_id);
"""
assert LOCK_0017 in FUNCTION_0017, "0017's lock statement moved: update this migration"
FORWARD = (FUNCTION_0017.replace(LOCK_0017, LOCK_IN_WRITER_ORDER)
           .replace("    signs integer[];\n", "    signs integer[];\n    late text;\n", 1))


class Migration(migrations.Migration):
    dependencies = [("memories", "0025_vectors_kept_inline")]

    operations = [migrations.RunSQL(FORWARD, FUNCTION_0017)]
