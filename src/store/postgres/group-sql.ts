/**
 * The server side of group commit (group-commit.ts): `pithos_group(ops,
 * offset)` applies a batch of single-object writes in one transaction, the
 * one statement that calls it, so the batch costs one round trip and one WAL
 * flush. Migration 13 installs it (CREATE OR REPLACE over migration 12's,
 * group-sql-12.ts, and 11's, group-sql-11.ts, whose ops it still takes, so a
 * node of any of those releases can send to it).
 *
 * `ops` is a JSON array; each element is one write:
 *   {"k":"i","n":name,"d":delta}                    variant increment of an integer by a safe integer (64-bit sum)
 *   {"k":"v","n":name,"t":type,"v":json,"ttl":s}    variant put (no condition, same type or new)
 *   {"k":"r","n":id,"b":json,"ttl":s}               record put (no condition)
 *   {"k":"rp","n":id,"b":json,"ver":v[,"ttl":s]}    record patch's write: the merged body over version v (no ttl: expiry kept)
 *   {"k":"d","n":id}                                record delete
 *   {"k":"p","n":name,"s":side,"c":create,"vals":[json texts]}  list push (no condition)
 *   {"k":"sa","n":name,"c":create,"m":members as JSON,"hex":[members' UTF-8 in hex]}  set add (no condition)
 *   {"k":"sr","n":name,"m":members as JSON,"hex":[…]}                                  set remove (no condition)
 *   {"k":"za","n":name,"c":create,"mode":mode,"e":feed head,"hex":[…],"sc":[scores as text]}  zset add (distinct members)
 *   {"k":"zi","n":name,"c":create,"m":member as JSON,"hex":[member],"d":delta as text}      zset incr
 *   {"k":"zr","n":name,"m":members as JSON,"hex":[…]}                                  zset remove (no condition)
 * The answer is an array of {"i": the op's place in `ops` (1-based), "r": its
 * result} or {"i", "f": true}: the op found nothing it may do here (a missing
 * object, another type, an overflow, a version moved on, a value the
 * statement refused) and changed nothing; the node runs it alone on the
 * general path, which gives the exact answer or error. Each op runs in a
 * subtransaction of its own (BEGIN … EXCEPTION), so one refused by a data,
 * cardinality or constraint error is undone alone; any other error
 * (serialization, deadlock, cancel, read-only, lost connection) fails the
 * whole call and nothing of the batch is applied.
 *
 * Ops are applied ordered by (table, name), variants, records, lists, sets,
 * then sorted sets as /txns lock them (txns.ts), and by arrival within one
 * object: row locks are taken in one global order, so batches from several
 * nodes queue on each other instead of deadlocking. The statements are those
 * of variants.ts, records.ts, lists.ts (pushItems), sets.ts and zsets.ts, so
 * the triggers stamp versions, record the change feed (the header's op and
 * op_data, written as the node writes them) and the list's NOTIFY goes out at
 * this commit.
 *
 * Increments: when a batch's only variant writes are increments of distinct
 * counters (the counter workload: many clients adding to many counters),
 * pithos_group_increments locks their rows in name order, then applies the
 * increments of the rows it locked in one UPDATE, and the loop skips them
 * (a counter created after the locking statement is one it did not lock: it
 * answers "f", as the loop does in that race); anything else about
 * them (a missing counter, another type, an overflow) is that op's "f", as
 * in the loop. A batch with a variant put, or two increments of one counter,
 * goes through the loop whole, which keeps each op's arrival order. Locks
 * are still taken variants first, by name, so the global order holds. It
 * saves database time per increment (figures: docs/scaling.md, "Group
 * commit").
 *
 * A sorted set's scores are float8 both ways: given as the node's shortest
 * text (exact), answered as float8's shortest text (exact since PostgreSQL
 * 12), and written into the change feed by pithos_num as JavaScript's
 * String(number) writes them, so the feed reads as the general path's.
 */

/** JavaScript's String(x) of a finite float8: its shortest digits (from float8out with extra_float_digits 1), laid out as String() does. */
export const NUM_FUNCTION = `CREATE OR REPLACE FUNCTION pithos_num(x float8) RETURNS text LANGUAGE plpgsql IMMUTABLE
SET extra_float_digits = 1 AS $$
DECLARE t text; neg bool; e int := 0; d text; p int; n int; k int; r numeric; c text; m int;
BEGIN
  IF x = 0 THEN RETURN '0'; END IF;
  t := x::text; neg := left(t, 1) = '-'; IF neg THEN t := substr(t, 2); END IF;
  IF position('e' IN t) > 0 THEN e := split_part(t, 'e', 2)::int; t := split_part(t, 'e', 1); END IF;
  p := position('.' IN t); IF p = 0 THEN p := length(t) + 1; END IF;
  d := replace(t, '.', ''); n := p - 1 + e;
  WHILE left(d, 1) = '0' LOOP d := substr(d, 2); n := n - 1; END LOOP;
  d := rtrim(d, '0'); k := length(d);
  -- float8out's digits round-trip but are not always the fewest (a value on the boundary between two
  -- float8s, which JavaScript's shortest accepts): the fewest that read back as x, nearest first.
  FOR j IN 1 .. k - 1 LOOP
    r := round(('0.' || d)::numeric, j);
    IF r >= 1 THEN c := '1'; m := n + 1; ELSE c := rtrim(substr(r::text, 3), '0'); m := n; END IF;
    -- (Past float8's range at either end a candidate cannot be x, and float8in refuses it.)
    IF m BETWEEN -322 AND 308 THEN
      IF ('0.' || c || 'e' || m)::float8 = abs(x) THEN d := c; n := m; k := length(d); EXIT; END IF;
    END IF;
  END LOOP;
  IF k <= n AND n <= 21 THEN t := d || repeat('0', n - k);
  ELSIF 0 < n AND n <= 21 THEN t := left(d, n) || '.' || substr(d, n + 1);
  ELSIF -6 < n AND n <= 0 THEN t := '0.' || repeat('0', -n) || d;
  ELSE t := left(d, 1) || CASE WHEN k > 1 THEN '.' || substr(d, 2) ELSE '' END || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1);
  END IF;
  RETURN CASE WHEN neg THEN '-' || t ELSE t END;
END $$`;

/**
 * The batch's increments in one statement, or NULL when the batch does not
 * qualify (see "Increments" above) and the loop applies them. A data error
 * (a delta that is not an int8) undoes the statement and answers NULL too.
 */
export const INCREMENTS_FUNCTION = `CREATE OR REPLACE FUNCTION pithos_group_increments(ops jsonb, now_ms int8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE idx int8[]; names text[]; deltas int8[]; puts int8; res jsonb; locked text[];
BEGIN
  SELECT array_agg(e.i ORDER BY e.o->>'n'), array_agg(e.o->>'n' ORDER BY e.o->>'n'), array_agg((e.o->>'d')::int8 ORDER BY e.o->>'n'),
      count(*) FILTER (WHERE e.o->>'k' <> 'i')
    INTO idx, names, deltas, puts
    FROM jsonb_array_elements(ops) WITH ORDINALITY AS e(o, i) WHERE e.o->>'k' IN ('i', 'v');
  IF idx IS NULL OR puts > 0 OR cardinality(names) < 2 OR (SELECT count(DISTINCT x) FROM unnest(names) AS x) <> cardinality(names) THEN
    RETURN NULL;
  END IF;
  -- Only the rows locked here, in name order, are written: a counter created after this
  -- statement's snapshot would otherwise be locked last, out of the global order.
  SELECT array_agg(l.name) INTO locked FROM (
    SELECT name FROM pithos_variants WHERE name = ANY (names) AND t = 'i' AND (expires_at IS NULL OR expires_at > now_ms)
      ORDER BY name FOR NO KEY UPDATE) AS l;
  WITH d AS (SELECT * FROM unnest(idx, names, deltas) AS t(i, n, dd)),
    u AS (
      UPDATE pithos_variants p SET v = (p.v::int8 + d.dd)::text, version = nextval('pithos_seq')
        FROM d WHERE p.name = d.n AND p.name = ANY (locked) AND p.t = 'i' AND (p.expires_at IS NULL OR p.expires_at > now_ms)
          AND CASE WHEN p.t = 'i' THEN p.v::numeric + d.dd BETWEEN -9223372036854775808 AND 9223372036854775807 ELSE false END
        RETURNING d.i, p.v)
  SELECT jsonb_agg(CASE WHEN u.v IS NULL THEN jsonb_build_object('i', d.i, 'f', true) ELSE jsonb_build_object('i', d.i, 'r', to_jsonb(u.v)) END)
    INTO res FROM d LEFT JOIN u ON u.i = d.i;
  RETURN res;
EXCEPTION WHEN data_exception THEN
  RETURN NULL;
END $$`;

export const GROUP_FUNCTION = `CREATE OR REPLACE FUNCTION pithos_group(ops jsonb, off int8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  o jsonb; i int8; n text; k text; res jsonb; acc jsonb := '[]'::jsonb;
  now_ms int8 := floor(extract(epoch from now()) * 1000)::int8 + off;
  exp int8; x text; h record; hd int8; tl int8; ex bool; vals text[]; cnt int8; incs jsonb;
BEGIN
  incs := pithos_group_increments(ops, now_ms);
  IF incs IS NOT NULL THEN acc := incs; END IF;
  FOR o, i IN SELECT e.o, e.i FROM jsonb_array_elements(ops) WITH ORDINALITY AS e(o, i)
      WHERE incs IS NULL OR e.o->>'k' <> 'i'
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

/**
 * A batch of increments and nothing else (the counter workload), sent by
 * group-commit.ts instead of pithos_group: the counters' names and deltas as
 * arrays, so the database parses no JSON and runs no per-op subtransaction.
 * It answers one row (op, val) per op it applied, op 1-based in arrival
 * order; an op without a row found nothing it may do here (a missing
 * counter, another type, an expired one, an overflow, a counter created
 * after the locking statement) and changed nothing, as pithos_group's "f".
 *
 * Lock order as pithos_group_increments: the counters' rows first, in name
 * order (the global order: a batch of variants only), and only those rows
 * are written. A counter named more than once is incremented once per
 * round, in arrival order (round k applies each counter's k-th increment),
 * so every op has its own version and feed event as when applied alone.
 * An op refused by an overflow does not stop the next op of its counter, as
 * in pithos_group's loop. Database time per increment against
 * pithos_group's: docs/benchmarks.md, "Group commit on the shared store".
 */
export const COUNTERS_FUNCTION = `CREATE OR REPLACE FUNCTION pithos_group_counters(names text[], deltas int8[], off int8)
RETURNS TABLE (op int8, val text) LANGUAGE plpgsql AS $$
DECLARE now_ms int8 := floor(extract(epoch from now()) * 1000)::int8 + off; locked text[]; rounds int8[]; last int8;
BEGIN
  SELECT array_agg(l.name) INTO locked FROM (
    SELECT p.name FROM pithos_variants p WHERE p.name = ANY (names) AND p.t = 'i' AND (p.expires_at IS NULL OR p.expires_at > now_ms)
      ORDER BY p.name FOR NO KEY UPDATE) AS l;
  IF locked IS NULL THEN RETURN; END IF;
  SELECT array_agg(x.r ORDER BY x.pos), max(x.r) INTO rounds, last
    FROM (SELECT t.pos, row_number() OVER (PARTITION BY t.n ORDER BY t.pos) AS r FROM unnest(names) WITH ORDINALITY AS t(n, pos)) AS x;
  FOR k IN 1 .. last LOOP
    RETURN QUERY
      WITH d AS (SELECT * FROM unnest(names, deltas, rounds) WITH ORDINALITY AS t(n, dd, r, pos) WHERE t.r = k)
      UPDATE pithos_variants p SET v = (p.v::int8 + d.dd)::text, version = nextval('pithos_seq')
        FROM d WHERE p.name = d.n AND p.name = ANY (locked) AND p.t = 'i' AND (p.expires_at IS NULL OR p.expires_at > now_ms)
          AND CASE WHEN p.t = 'i' THEN p.v::numeric + d.dd BETWEEN -9223372036854775808 AND 9223372036854775807 ELSE false END
        RETURNING d.pos, p.v;
  END LOOP;
END $$`;

/** Migration 13's statements, in order (pithos_group calls the increments). */
export const GROUP_STATEMENTS = [INCREMENTS_FUNCTION, GROUP_FUNCTION];
