/**
 * Codec choice for value compression (docs/benchmarks-history.md, "Compression"):
 * ratio and CPU per document of node:zlib's codecs on repetitive JSON
 * documents of 1-4 KiB, the shape of records an application stores (same
 * field names, enumerated values, repeated sub-objects, some free text).
 *
 *   node dist/bench/compression.js [documents (default 20000)]
 */
import * as zlib from 'node:zlib';
import { rng } from '../test/helpers/rng.js';

const WORDS = [
  'order',
  'shipped',
  'pending',
  'customer',
  'invoice',
  'priority',
  'standard',
  'express',
  'warehouse',
  'returned',
  'berlin',
  'oslo',
  'lisbon',
  'paid',
  'refund',
  'gift',
  'note',
  'please',
  'deliver',
  'before',
  'noon',
  'fragile',
];

/** One order-like document of roughly 1-4 KiB. */
export function jsonDocument(r: () => number, i: number): Buffer {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)];
  const lines = Array.from({ length: 3 + Math.floor(r() * 22) }, (_, j) => ({
    sku: `SKU-${String(Math.floor(r() * 5000)).padStart(6, '0')}`,
    name: `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)}`,
    quantity: 1 + Math.floor(r() * 5),
    unit_price: Math.round(r() * 10000) / 100,
    currency: 'EUR',
    tax_rate: pick([0.07, 0.19, 0.25]),
    line: j + 1,
  }));
  const doc = {
    id: `ord-${i}`,
    created_at: new Date(1_700_000_000_000 + i * 61_000).toISOString(),
    status: pick(['pending', 'paid', 'shipped', 'delivered', 'returned']),
    customer: { id: `cust-${Math.floor(r() * 100000)}`, email: `user${Math.floor(r() * 100000)}@example.com`, tier: pick(['standard', 'gold', 'platinum']) },
    shipping: { method: pick(['standard', 'express']), city: pick(['Berlin', 'Oslo', 'Lisbon']), country: pick(['DE', 'NO', 'PT']) },
    lines,
    note: Array.from({ length: Math.floor(r() * 12) }, () => pick(WORDS)).join(' '),
  };
  return Buffer.from(JSON.stringify(doc));
}

interface Codec {
  name: string;
  enc: (b: Buffer) => Buffer;
  dec: (b: Buffer) => Buffer;
}

const codecs: Codec[] = [
  { name: 'deflate-raw level 1', enc: (b) => zlib.deflateRawSync(b, { level: 1 }), dec: (b) => zlib.inflateRawSync(b) },
  { name: 'deflate-raw level 6', enc: (b) => zlib.deflateRawSync(b, { level: 6 }), dec: (b) => zlib.inflateRawSync(b) },
  {
    name: 'brotli quality 1',
    enc: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    dec: (b) => zlib.brotliDecompressSync(b),
  },
  {
    name: 'brotli quality 4',
    enc: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length } }),
    dec: (b) => zlib.brotliDecompressSync(b),
  },
];

function main(): void {
  const n = Number(process.argv[2] ?? 20_000);
  const r = rng(42);
  const docs = Array.from({ length: n }, (_, i) => jsonDocument(r, i));
  const raw = docs.reduce((a, d) => a + d.length, 0);
  console.log(
    `${n} documents, ${(raw / n).toFixed(0)} bytes on average (min ${Math.min(...docs.map((d) => d.length))}, max ${Math.max(...docs.map((d) => d.length))})`,
  );
  console.log('| codec | ratio (raw / compressed) | compress µs/doc | decompress µs/doc |');
  console.log('|---|---:|---:|---:|');
  for (const c of codecs) {
    for (let i = 0; i < 500; i++) c.dec(c.enc(docs[i % n])); // warm up
    let out = 0;
    const enc: Buffer[] = new Array(n);
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      enc[i] = c.enc(docs[i]);
      out += enc[i].length;
    }
    const t1 = process.cpuUsage(t0);
    const t2 = process.cpuUsage();
    for (let i = 0; i < n; i++) c.dec(enc[i]);
    const t3 = process.cpuUsage(t2);
    const us = (t: NodeJS.CpuUsage): string => ((t.user + t.system) / n).toFixed(1);
    console.log(`| ${c.name} | ${(raw / out).toFixed(2)} | ${us(t1)} | ${us(t3)} |`);
  }
}

if (process.argv[1]?.endsWith('compression.js')) main();
