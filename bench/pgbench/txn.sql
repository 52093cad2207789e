-- The work of Pithos's 3-mutation /txns in bench/compare.ts (two counter adds, a
-- record put) as the same statements in one transaction, sent in one pipeline:
-- one round trip. pg-a-* sorts before pg-b-*, the order Pithos locks them in.
\set k random(0, 63)
\set n random(1, 1000000000)
\startpipeline
BEGIN;
UPDATE pithos_variants SET v = (v::int8 + -1::int8)::text, version = nextval('pithos_seq')
  WHERE name = 'pg-a-' || lpad(:k::text, 6, '0') AND t = 'i'
    AND (expires_at IS NULL OR expires_at > (floor(extract(epoch from now()) * 1000)::int8 + 0))
    AND abs(v::int8 + -1::int8) <= 9007199254740991 RETURNING v;
UPDATE pithos_variants SET v = (v::int8 + 1::int8)::text, version = nextval('pithos_seq')
  WHERE name = 'pg-b-' || lpad(:k::text, 6, '0') AND t = 'i'
    AND (expires_at IS NULL OR expires_at > (floor(extract(epoch from now()) * 1000)::int8 + 0))
    AND abs(v::int8 + 1::int8) <= 9007199254740991 RETURNING v;
UPDATE pithos_records SET body = '{"last":' || :n || ',"amount":1}', expires_at = NULL, version = nextval('pithos_seq')
  WHERE id = 'pg-r-' || lpad(:k::text, 6, '0')
    AND (expires_at IS NULL OR expires_at > (floor(extract(epoch from now()) * 1000)::int8 + 0)) RETURNING 1;
END;
\endpipeline
