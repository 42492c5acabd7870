"""Per-user keyword statistics, kept by the database as memory rows change.

BM25 needs, for the searched user, how many memories count and their total
length, and for each query term how many of them hold it. Computing those for
every query scanned all of the user's rows (most of a 17.5 ms per-user hybrid
search at 1,000 memories per user). Statement-level triggers on memory_items
now keep them in two tables, whatever writes the rows (the writer, erasure,
bulk loads). A memory counts while it is current and active (not replaced,
status active): the part of "searchable" that does not depend on the clock.

The tables hold lexemes of the user's words: erasure removes them with the
memories (a count that reaches zero deletes its row), and TRUNCATE of
memory_items empties them. Updates that change neither a row's text, owner nor
whether it counts (embedding state, access counts) cost one join of the
statement's old and new rows. Writers of one user take the same advisory lock
as writing.user_write_lock, in a fixed order, before touching the counts.

Reverse: drops the triggers and the tables (search falls back to scanning).
"""

from django.db import migrations

COUNTED = "{a}.expired_at IS NULL AND {a}.status = 'active'"  # vocabulary.sql_keyword_counted

FORWARD = f"""
CREATE TABLE memory_user_text_stats (
    tenant_id bigint NOT NULL,
    user_id varchar(255) NOT NULL,
    documents integer NOT NULL,
    total_length bigint NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
CREATE TABLE memory_user_term_stats (
    tenant_id bigint NOT NULL,
    user_id varchar(255) NOT NULL,
    lexeme text NOT NULL,
    documents integer NOT NULL,
    PRIMARY KEY (tenant_id, user_id, lexeme)
);

CREATE FUNCTION memory_keyword_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tenants bigint[];
    users varchar[];
    vectors tsvector[];
    signs integer[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n.tenant_id), array_agg(n.user_id), array_agg(n.search_vector), array_agg(1)
          INTO tenants, users, vectors, signs
          FROM new_rows n WHERE {COUNTED.format(a="n")};
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(o.tenant_id), array_agg(o.user_id), array_agg(o.search_vector), array_agg(-1)
          INTO tenants, users, vectors, signs
          FROM old_rows o WHERE {COUNTED.format(a="o")};
    ELSE
        SELECT array_agg(c.tenant_id), array_agg(c.user_id), array_agg(c.search_vector), array_agg(c.sign)
          INTO tenants, users, vectors, signs
          FROM (
            SELECT o.tenant_id, o.user_id, o.search_vector, -1 AS sign
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE {COUNTED.format(a="o")} AND NOT ({COUNTED.format(a="n")}
                   AND n.search_vector IS NOT DISTINCT FROM o.search_vector
                   AND n.user_id = o.user_id AND n.tenant_id = o.tenant_id)
            UNION ALL
            SELECT n.tenant_id, n.user_id, n.search_vector, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE {COUNTED.format(a="n")} AND NOT ({COUNTED.format(a="o")}
                   AND n.search_vector IS NOT DISTINCT FROM o.search_vector
                   AND n.user_id = o.user_id AND n.tenant_id = o.tenant_id)
          ) AS c;
    END IF;
    IF tenants IS NULL THEN
        RETURN NULL;
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('ingest:' || u.tenant_id || ':' || u.user_id, 0))
       FROM (SELECT DISTINCT t, u FROM unnest(tenants, users) AS x(t, u) ORDER BY 1, 2) AS u(tenant_id, user_id);

    INSERT INTO memory_user_text_stats AS s (tenant_id, user_id, documents, total_length)
    SELECT c.t, c.u, sum(c.sign), sum(c.sign * coalesce(length(c.v), 0))
      FROM unnest(tenants, users, vectors, signs) AS c(t, u, v, sign)
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (tenant_id, user_id) DO UPDATE
       SET documents = s.documents + EXCLUDED.documents, total_length = s.total_length + EXCLUDED.total_length;

    INSERT INTO memory_user_term_stats AS s (tenant_id, user_id, lexeme, documents)
    SELECT c.t, c.u, l.lexeme, sum(c.sign)
      FROM unnest(tenants, users, vectors, signs) AS c(t, u, v, sign)
           CROSS JOIN LATERAL unnest(c.v) AS l
     GROUP BY 1, 2, 3 HAVING sum(c.sign) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET documents = s.documents + EXCLUDED.documents;

    IF -1 = ANY(signs) THEN  -- a count that reached zero leaves no row (erasure: none of the words stay)
        DELETE FROM memory_user_term_stats s
         USING (SELECT DISTINCT c.t, c.u, l.lexeme FROM unnest(tenants, users, vectors, signs) AS c(t, u, v, sign)
                CROSS JOIN LATERAL unnest(c.v) AS l WHERE c.sign < 0) AS gone
         WHERE s.tenant_id = gone.t AND s.user_id = gone.u AND s.lexeme = gone.lexeme AND s.documents <= 0;
        DELETE FROM memory_user_text_stats s
         USING (SELECT DISTINCT t, u FROM unnest(tenants, users) AS x(t, u)) AS gone
         WHERE s.tenant_id = gone.t AND s.user_id = gone.u AND s.documents <= 0;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_keyword_stats_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_user_text_stats, memory_user_term_stats;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_keyword_stats_insert AFTER INSERT ON memory_items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_keyword_stats_apply();
CREATE TRIGGER memory_keyword_stats_update AFTER UPDATE ON memory_items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_keyword_stats_apply();
CREATE TRIGGER memory_keyword_stats_delete AFTER DELETE ON memory_items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_keyword_stats_apply();
CREATE TRIGGER memory_keyword_stats_truncate AFTER TRUNCATE ON memory_items
    FOR EACH STATEMENT EXECUTE FUNCTION memory_keyword_stats_truncate();

-- The rows already there.
INSERT INTO memory_user_text_stats (tenant_id, user_id, documents, total_length)
SELECT m.tenant_id, m.user_id, count(*), sum(coalesce(length(m.search_vector), 0))
  FROM memory_items m WHERE {COUNTED.format(a="m")} GROUP BY 1, 2;
INSERT INTO memory_user_term_stats (tenant_id, user_id, lexeme, documents)
SELECT m.tenant_id, m.user_id, l.lexeme, count(*)
  FROM memory_items m CROSS JOIN LATERAL unnest(m.search_vector) AS l
 WHERE {COUNTED.format(a="m")} GROUP BY 1, 2, 3;
ANALYZE memory_user_text_stats;
ANALYZE memory_user_term_stats;
"""

BACKWARD = """
DROP TRIGGER memory_keyword_stats_truncate ON memory_items;
DROP TRIGGER memory_keyword_stats_delete ON memory_items;
DROP TRIGGER memory_keyword_stats_update ON memory_items;
DROP TRIGGER memory_keyword_stats_insert ON memory_items;
DROP FUNCTION memory_keyword_stats_truncate();
DROP FUNCTION memory_keyword_stats_apply();
DROP TABLE memory_user_term_stats;
DROP TABLE memory_user_text_stats;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_alter_apikey_options")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
