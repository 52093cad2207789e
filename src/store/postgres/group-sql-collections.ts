/**
 * Group commit's set and sorted-set writes (group-sql.ts): what setAdd,
 * setRemove (sets.ts), zsetAdd, zsetIncr and zsetRemove (zsets.ts) do, for a
 * write without a precondition, called by pithos_group inside the op's
 * subtransaction. NULL: the op may not be done here and nothing was written
 * (a write that finds that out after writing raises a data error instead, so
 * its subtransaction is undone); the node runs it alone.
 */

/**
 * lockHeader (collections.ts) for a write without a precondition: the header
 * of set (z false) or sorted set (z true) `n`, locked. hd: its count, NULL
 * when the write may not go on (missing without `c`, created meanwhile by
 * another writer); ex: it was live before; ph: it is a placeholder this
 * transaction holds (a write that changes nothing deletes it).
 */
const LOCK = `CREATE OR REPLACE FUNCTION pithos_group_lock(z bool, n text, c bool, now_ms int8, OUT hd int8, OUT ex bool, OUT ph bool)
LANGUAGE plpgsql AS $$
DECLARE h record;
BEGIN
  hd := NULL; ex := false; ph := false;
  IF z THEN
    SELECT s.count, (s.expires_at IS NULL OR s.expires_at > now_ms) AS live, s.op IS NOT DISTINCT FROM '' AS placeholder
      INTO h FROM pithos_zsets s WHERE s.name = n FOR UPDATE;
  ELSE
    SELECT s.count, (s.expires_at IS NULL OR s.expires_at > now_ms) AS live, s.op IS NOT DISTINCT FROM '' AS placeholder
      INTO h FROM pithos_sets s WHERE s.name = n FOR UPDATE;
  END IF;
  IF NOT FOUND THEN
    IF c THEN
      IF z THEN
        INSERT INTO pithos_zsets (name, count, expires_at, version, op) VALUES (n, 0, NULL, nextval('pithos_seq'), '') ON CONFLICT (name) DO NOTHING;
      ELSE
        INSERT INTO pithos_sets (name, count, expires_at, version, op) VALUES (n, 0, NULL, nextval('pithos_seq'), '') ON CONFLICT (name) DO NOTHING;
      END IF;
      IF FOUND THEN hd := 0; ph := true; END IF;
    END IF;
  ELSIF h.placeholder THEN
    IF c THEN hd := 0; ph := true; END IF;
  ELSIF h.live THEN
    hd := h.count; ex := true;
  ELSIF c THEN
    IF z THEN DELETE FROM pithos_zset_members WHERE name = n; ELSE DELETE FROM pithos_set_members WHERE name = n; END IF;
    hd := 0;
  END IF;
END $$`;

const COLLECTION = `CREATE OR REPLACE FUNCTION pithos_group_collection(o jsonb, now_ms int8) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  k text := o->>'k'; n text := o->>'n'; c bool := coalesce((o->>'c')::bool, false); l record; cnt int8; up int8;
  mb bytea; cur float8; s float8; mode text := o->>'mode';
BEGIN
  SELECT * INTO l FROM pithos_group_lock(k IN ('za', 'zi', 'zr'), n, c, now_ms);
  IF l.hd IS NULL THEN RETURN NULL; END IF;
  IF k = 'sa' THEN
    INSERT INTO pithos_set_members (name, member) SELECT n, decode(t.m, 'hex') FROM jsonb_array_elements_text(o->'hex') AS t(m)
      ON CONFLICT (name, member) DO NOTHING;
    GET DIAGNOSTICS cnt = ROW_COUNT;
    IF cnt > 0 THEN
      UPDATE pithos_sets SET count = l.hd + cnt, version = nextval('pithos_seq'), op = 'add',
          op_data = '{"members":' || (o->>'m') || ',"added":' || cnt || ',"count":' || (l.hd + cnt) || '}',
          expires_at = CASE WHEN l.ex THEN expires_at END
        WHERE name = n;
    END IF;
    RETURN jsonb_build_array(cnt, l.hd + cnt);
  ELSIF k = 'sr' OR k = 'zr' THEN
    IF k = 'sr' THEN
      DELETE FROM pithos_set_members WHERE name = n AND member IN (SELECT decode(t.m, 'hex') FROM jsonb_array_elements_text(o->'hex') AS t(m));
    ELSE
      DELETE FROM pithos_zset_members WHERE name = n AND member IN (SELECT decode(t.m, 'hex') FROM jsonb_array_elements_text(o->'hex') AS t(m));
    END IF;
    GET DIAGNOSTICS cnt = ROW_COUNT;
    IF cnt > 0 THEN
      IF k = 'sr' THEN
        UPDATE pithos_sets SET count = l.hd - cnt, version = nextval('pithos_seq'), op = 'remove',
            op_data = '{"members":' || (o->>'m') || ',"removed":' || cnt || ',"count":' || (l.hd - cnt) || '}' WHERE name = n;
      ELSE
        UPDATE pithos_zsets SET count = l.hd - cnt, version = nextval('pithos_seq'), op = 'remove',
            op_data = '{"members":' || (o->>'m') || ',"removed":' || cnt || ',"count":' || (l.hd - cnt) || '}' WHERE name = n;
      END IF;
    END IF;
    RETURN jsonb_build_array(cnt, l.hd - cnt);
  ELSIF k = 'zi' THEN
    mb := decode(o->'hex'->>0, 'hex');
    IF l.hd > 0 THEN SELECT z.score INTO cur FROM pithos_zset_members z WHERE z.name = n AND z.member = mb; END IF;
    s := coalesce(cur, 0) + (o->>'d')::float8 + 0;
    -- Not finite: the general path's 409 (float8's own overflow is a data error too).
    IF s IN ('Infinity'::float8, '-Infinity'::float8, 'NaN'::float8) THEN RAISE SQLSTATE '22003'; END IF;
    INSERT INTO pithos_zset_members (name, member, score) VALUES (n, mb, s) ON CONFLICT (name, member) DO UPDATE SET score = EXCLUDED.score;
    UPDATE pithos_zsets SET count = l.hd + CASE WHEN cur IS NULL THEN 1 ELSE 0 END, version = nextval('pithos_seq'), op = 'incr',
        op_data = '{"member":' || (o->>'m') || ',"delta":' || (o->>'d') || ',"score":' || pithos_num(s) || '}',
        expires_at = CASE WHEN l.ex THEN expires_at END
      WHERE name = n;
    RETURN to_jsonb(pithos_num(s));
  ELSIF k = 'za' THEN
    -- zaddEffect (collection.ts) per member; the members are distinct (the node sends no other add here).
    WITH p AS (SELECT decode(a.m, 'hex') AS m, a.s::float8 AS s
        FROM unnest(ARRAY(SELECT jsonb_array_elements_text(o->'hex')), ARRAY(SELECT jsonb_array_elements_text(o->'sc'))) AS a(m, s)),
      e AS (SELECT p.m, p.s, z.score AS cur FROM p LEFT JOIN pithos_zset_members z ON z.name = n AND z.member = p.m
        WHERE CASE WHEN z.score IS NULL THEN mode <> 'xx'
          ELSE mode <> 'nx' AND p.s <> z.score AND (mode <> 'gt' OR p.s > z.score) AND (mode <> 'lt' OR p.s < z.score) END),
      w AS (INSERT INTO pithos_zset_members (name, member, score) SELECT n, e.m, e.s FROM e
        ON CONFLICT (name, member) DO UPDATE SET score = EXCLUDED.score RETURNING 1)
    SELECT count(*) FILTER (WHERE e.cur IS NULL), count(*) FILTER (WHERE e.cur IS NOT NULL) INTO cnt, up FROM e;
    IF cnt + up = 0 THEN
      -- A write that changes nothing writes nothing (unlockUnchanged).
      IF l.ph THEN DELETE FROM pithos_zsets WHERE name = n; END IF;
      RETURN jsonb_build_array(0, 0, l.hd);
    END IF;
    UPDATE pithos_zsets SET count = l.hd + cnt, version = nextval('pithos_seq'), op = 'add',
        op_data = (o->>'e') || ',"added":' || cnt || ',"updated":' || up || ',"count":' || (l.hd + cnt) || '}',
        expires_at = CASE WHEN l.ex THEN expires_at END
      WHERE name = n;
    RETURN jsonb_build_array(cnt, up, l.hd + cnt);
  END IF;
  RETURN NULL;
END $$`;

export const GROUP_COLLECTIONS = [LOCK, COLLECTION];
