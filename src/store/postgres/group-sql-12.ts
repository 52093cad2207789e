/**
 * pithos_group as migration 12 installed it, kept word for word: a migration
 * never changes once released (a database that ran it must stay equal to one
 * that runs it now). Migration 13 replaces it with group-sql.ts's, which
 * applies a batch's increments in one statement (group-sql.ts, "Increments").
 */
import { GROUP_COLLECTIONS } from './group-sql-collections.js';
import { NUM_FUNCTION } from './group-sql.js';

const GROUP_FUNCTION_12 = `CREATE OR REPLACE FUNCTION pithos_group(ops jsonb, off int8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  o jsonb; i int8; n text; k text; res jsonb; acc jsonb := '[]'::jsonb;
  now_ms int8 := floor(extract(epoch from now()) * 1000)::int8 + off;
  exp int8; x text; h record; hd int8; tl int8; ex bool; vals text[]; cnt int8;
BEGIN
  FOR o, i IN SELECT e.o, e.i FROM jsonb_array_elements(ops) WITH ORDINALITY AS e(o, i)
      ORDER BY CASE e.o->>'k' WHEN 'r' THEN 2 WHEN 'rp' THEN 2 WHEN 'd' THEN 2 WHEN 'p' THEN 3 WHEN 'sa' THEN 4 WHEN 'sr' THEN 4
        WHEN 'za' THEN 5 WHEN 'zi' THEN 5 WHEN 'zr' THEN 5 ELSE 1 END, e.o->>'n', e.i LOOP
    n := o->>'n'; k := o->>'k'; res := NULL; hd := NULL; tl := NULL;
    exp := CASE WHEN coalesce((o->>'ttl')::float8, 0) = 0 THEN NULL ELSE now_ms + round((o->>'ttl')::float8 * 1000)::int8 END;
    BEGIN
      IF k = 'i' THEN
        UPDATE pithos_variants SET v = (v::int8 + (o->>'d')::int8)::text, version = nextval('pithos_seq')
          WHERE name = n AND t = 'i' AND (expires_at IS NULL OR expires_at > now_ms)
            AND v::numeric + (o->>'d')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 RETURNING v INTO x;
        IF FOUND THEN res := to_jsonb(x); END IF;
      ELSIF k = 'v' THEN
        UPDATE pithos_variants SET v = o->>'v', expires_at = exp, version = nextval('pithos_seq')
          WHERE name = n AND t = o->>'t' AND (expires_at IS NULL OR expires_at > now_ms);
        IF FOUND THEN res := 'false'::jsonb;
        ELSE
          INSERT INTO pithos_variants AS y (name, t, v, expires_at, version) VALUES (n, o->>'t', o->>'v', exp, nextval('pithos_seq'))
            ON CONFLICT (name) DO UPDATE SET t = excluded.t, v = excluded.v, expires_at = excluded.expires_at, version = nextval('pithos_seq')
            WHERE y.expires_at IS NOT NULL AND y.expires_at <= now_ms;
          IF FOUND THEN res := 'true'::jsonb; END IF;
        END IF;
      ELSIF k = 'r' THEN
        UPDATE pithos_records SET body = o->>'b', expires_at = exp, version = nextval('pithos_seq')
          WHERE id = n AND (expires_at IS NULL OR expires_at > now_ms);
        IF FOUND THEN res := 'false'::jsonb;
        ELSE
          INSERT INTO pithos_records AS y (id, body, expires_at, version) VALUES (n, o->>'b', exp, nextval('pithos_seq'))
            ON CONFLICT (id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at, version = nextval('pithos_seq')
            WHERE y.expires_at IS NOT NULL AND y.expires_at <= now_ms;
          IF FOUND THEN res := 'true'::jsonb; END IF;
        END IF;
      ELSIF k = 'rp' THEN
        UPDATE pithos_records SET body = o->>'b', version = nextval('pithos_seq'), expires_at = CASE WHEN o ? 'ttl' THEN exp ELSE expires_at END
          WHERE id = n AND version = (o->>'ver')::int8 AND (expires_at IS NULL OR expires_at > now_ms);
        IF FOUND THEN res := 'true'::jsonb; END IF;
      ELSIF k = 'd' THEN
        DELETE FROM pithos_records WHERE id = n AND (expires_at IS NULL OR expires_at > now_ms);
        IF FOUND THEN res := 'true'::jsonb; END IF;
      ELSIF k IN ('sa', 'sr', 'za', 'zi', 'zr') THEN
        res := pithos_group_collection(o, now_ms);
      ELSIF k = 'p' THEN
        vals := ARRAY(SELECT jsonb_array_elements_text(o->'vals'));
        SELECT l.head, l.tail, (l.expires_at IS NULL OR l.expires_at > now_ms) AS live, l.op IS NOT DISTINCT FROM '' AS placeholder
          INTO h FROM pithos_lists l WHERE l.name = n FOR UPDATE;
        IF NOT FOUND THEN
          IF (o->>'c')::bool THEN
            -- As lockList: a header to lock; the UPDATE below makes it a list.
            INSERT INTO pithos_lists (name, head, tail, expires_at, version, op) VALUES (n, 0, 0, NULL, nextval('pithos_seq'), '')
              ON CONFLICT (name) DO NOTHING;
            IF FOUND THEN hd := 0; tl := 0; END IF;
          END IF;
        ELSIF h.placeholder OR h.live THEN
          hd := CASE WHEN h.placeholder THEN 0 ELSE h.head END; tl := CASE WHEN h.placeholder THEN 0 ELSE h.tail END;
        ELSIF (o->>'c')::bool THEN
          DELETE FROM pithos_list_items WHERE name = n;
          UPDATE pithos_lists SET head = 0, tail = 0, expires_at = NULL WHERE name = n;
          hd := 0; tl := 0;
        END IF;
        IF hd IS NOT NULL THEN
          cnt := cardinality(vals);
          IF o->>'s' = 'right' THEN
            INSERT INTO pithos_list_items (name, pos, v) SELECT n, tl + t.j - 1, t.v FROM unnest(vals) WITH ORDINALITY AS t(v, j);
            tl := tl + cnt;
          ELSE
            INSERT INTO pithos_list_items (name, pos, v) SELECT n, hd - t.j, t.v FROM unnest(vals) WITH ORDINALITY AS t(v, j);
            hd := hd - cnt;
          END IF;
          UPDATE pithos_lists SET head = hd, tail = tl, version = nextval('pithos_seq'), op = 'push',
              op_data = '{"side":"' || (o->>'s') || '","values":[' || array_to_string(vals, ',') || '],"length":' || (tl - hd) || '}'
            WHERE name = n;
          PERFORM pg_notify('pithos_lists', n);
          res := to_jsonb(tl - hd);
        END IF;
      END IF;
    EXCEPTION WHEN data_exception OR integrity_constraint_violation OR cardinality_violation THEN
      res := NULL;
    END;
    acc := acc || CASE WHEN res IS NULL THEN jsonb_build_object('i', i, 'f', true) ELSE jsonb_build_object('i', i, 'r', res) END;
  END LOOP;
  RETURN acc;
END $$`;

/** Migration 12's statements, in order (pithos_group calls the others). */
export const MIGRATION_12 = [NUM_FUNCTION, ...GROUP_COLLECTIONS, GROUP_FUNCTION_12];
