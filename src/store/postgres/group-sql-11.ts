/**
 * pithos_group as migration 11 installed it, kept word for word: a migration
 * never changes once released (a database that ran it must stay equal to one
 * that runs it now). Migration 12 replaces the function with group-sql.ts's.
 *
 * The server side of group commit (group-commit.ts): `pithos_group(ops,
 * offset)` applies a batch of single-object writes in one transaction, the
 * one statement that calls it, so the batch costs one round trip and one WAL
 * flush.
 *
 * `ops` is a JSON array; each element is one write:
 *   {"k":"i","n":name,"d":delta}                    variant increment of an integer by a safe integer (64-bit sum)
 *   {"k":"v","n":name,"t":type,"v":json,"ttl":s}    variant put (no condition, same type or new)
 *   {"k":"r","n":id,"b":json,"ttl":s}               record put (no condition)
 *   {"k":"d","n":id}                                record delete
 *   {"k":"p","n":name,"s":side,"c":create,"vals":[json texts]}  list push (no condition)
 *   {"k":"sa","n":name,"c":create,"m":members as JSON,"hex":[members' UTF-8 in hex]}  set add (no condition)
 * The answer is an array of {"i": the op's place in `ops` (1-based), "r": its
 * result} or {"i", "f": true}: the op found nothing it may do here (a missing
 * object, another type, an overflow, a value the statement refused) and
 * changed nothing; the node runs it alone on the general path, which gives
 * the exact answer or error. Each op runs in a subtransaction of its own
 * (BEGIN … EXCEPTION), so one refused by a data or constraint error is undone
 * alone; any other error (serialization, deadlock, cancel, read-only, lost
 * connection) fails the whole call and nothing of the batch is applied.
 *
 * Ops are applied ordered by (table, name), variants, records, lists, then sets
 * as /txns lock them (txns.ts), and by arrival within one object: row locks
 * are taken in one global order, so batches from several nodes queue on each
 * other instead of deadlocking. The statements are those of variants.ts,
 * records.ts and lists.ts (pushItems), so the triggers stamp versions, record
 * the change feed and the list's NOTIFY goes out at this commit.
 */
export const GROUP_FUNCTION_11 = `CREATE OR REPLACE FUNCTION pithos_group(ops jsonb, off int8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  o jsonb; i int8; n text; k text; res jsonb; acc jsonb := '[]'::jsonb;
  now_ms int8 := floor(extract(epoch from now()) * 1000)::int8 + off;
  exp int8; x text; h record; hd int8; tl int8; ex bool; vals text[]; cnt int8;
BEGIN
  FOR o, i IN SELECT e.o, e.i FROM jsonb_array_elements(ops) WITH ORDINALITY AS e(o, i)
      ORDER BY CASE e.o->>'k' WHEN 'r' THEN 2 WHEN 'd' THEN 2 WHEN 'p' THEN 3 WHEN 'sa' THEN 4 ELSE 1 END, e.o->>'n', e.i LOOP
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
      ELSIF k = 'd' THEN
        DELETE FROM pithos_records WHERE id = n AND (expires_at IS NULL OR expires_at > now_ms);
        IF FOUND THEN res := 'true'::jsonb; END IF;
      ELSIF k = 'sa' THEN
        -- setAdd (src/store/postgres/sets.ts) with lockHeader's cases: live, expired (emptied), none (a header to lock).
        SELECT s.count, (s.expires_at IS NULL OR s.expires_at > now_ms) AS live, s.op IS NOT DISTINCT FROM '' AS placeholder
          INTO h FROM pithos_sets s WHERE s.name = n FOR UPDATE;
        IF NOT FOUND THEN
          IF (o->>'c')::bool THEN
            INSERT INTO pithos_sets (name, count, expires_at, version, op) VALUES (n, 0, NULL, nextval('pithos_seq'), '')
              ON CONFLICT (name) DO NOTHING;
            IF FOUND THEN hd := 0; ex := false; END IF;
          END IF;
        ELSIF h.placeholder THEN
          IF (o->>'c')::bool THEN hd := 0; ex := false; END IF;
        ELSIF h.live THEN
          hd := h.count; ex := true;
        ELSIF (o->>'c')::bool THEN
          DELETE FROM pithos_set_members WHERE name = n;
          hd := 0; ex := false;
        END IF;
        IF hd IS NOT NULL THEN
          INSERT INTO pithos_set_members (name, member) SELECT n, decode(t.m, 'hex') FROM jsonb_array_elements_text(o->'hex') AS t(m)
            ON CONFLICT (name, member) DO NOTHING;
          GET DIAGNOSTICS cnt = ROW_COUNT;
          IF cnt > 0 THEN
            UPDATE pithos_sets SET count = hd + cnt, version = nextval('pithos_seq'), op = 'add',
                op_data = '{"members":' || (o->>'m') || ',"added":' || cnt || ',"count":' || (hd + cnt) || '}',
                expires_at = CASE WHEN ex THEN expires_at END
              WHERE name = n;
          END IF;
          res := jsonb_build_array(cnt, hd + cnt);
        END IF;
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
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
      res := NULL;
    END;
    acc := acc || CASE WHEN res IS NULL THEN jsonb_build_object('i', i, 'f', true) ELSE jsonb_build_object('i', i, 'r', res) END;
  END LOOP;
  RETURN acc;
END $$`;
