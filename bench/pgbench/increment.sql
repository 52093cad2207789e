-- The statement Pithos runs for POST /variants/<name> {"delta":1} on the PostgreSQL
-- store (src/store/postgres/variants.ts, increment), over the 64 counters
-- bench/compare.ts creates through Pithos. One statement: one round trip. Pithos
-- prepares it once per connection, so bench/compare.ts runs it with -M prepared.
\set k random(0, 63)
UPDATE pithos_variants SET v = (v::int8 + 1::int8)::text, version = nextval('pithos_seq')
  WHERE name = 'pg-inc-' || lpad(:k::text, 6, '0') AND t = 'i'
    AND (expires_at IS NULL OR expires_at > (floor(extract(epoch from now()) * 1000)::int8 + 0))
    AND abs(v::int8 + 1::int8) <= 9007199254740991 RETURNING v;
