/**
 * Value compression (docs/format.md, "Compression"). In a segment whose
 * header has the codec flag, every Put value is stored as one codec byte
 * followed by the value's bytes under that codec, so the codec is recorded
 * per record and any directory reads the same under any setting:
 *   0  stored as is
 *   1  Brotli (node:zlib), quality 1
 *   2  raw deflate (node:zlib)
 * Brotli at quality 1 was chosen by measurement (bench/compression.ts,
 * docs/benchmarks.md): on repetitive 1-4 KiB JSON documents it was the
 * cheapest to compress of node:zlib's codecs at a 3x ratio. Deflate is
 * decoded, never written; it is there so a later choice stays readable.
 */
import * as zlib from 'node:zlib';

export const CODEC_NONE = 0;
export const CODEC_BROTLI = 1;
export const CODEC_DEFLATE = 2;
/** Values shorter than this are stored as is: compressing them costs more than it saves. */
export const COMPRESS_MIN_BYTES = 256;

const QUALITY = zlib.constants.BROTLI_PARAM_QUALITY;
const SIZE_HINT = zlib.constants.BROTLI_PARAM_SIZE_HINT;

/** The stored form of `value` in a segment with the codec flag; compressed when `compress` and worth it. */
export function storedValue(value: Buffer, compress: boolean): Buffer {
  if (compress && value.length >= COMPRESS_MIN_BYTES) {
    // The size hint lets the encoder size its buffers to the value instead of
    // its 4 MiB window: 20-25 against 27-50 µs per 2 KiB document, same output size.
    const c = zlib.brotliCompressSync(value, { params: { [QUALITY]: 1, [SIZE_HINT]: value.length } });
    // Kept only when it saves at least an eighth: reading it back costs a decompression.
    if (c.length + 1 <= value.length - (value.length >> 3)) {
      const out = Buffer.allocUnsafe(c.length + 1);
      out[0] = CODEC_BROTLI;
      c.copy(out, 1);
      return out;
    }
  }
  const out = Buffer.allocUnsafe(value.length + 1);
  out[0] = CODEC_NONE;
  value.copy(out, 1);
  return out;
}

/** The value behind a stored form; a string says why it cannot be decoded. */
export function plainValue(stored: Buffer): Buffer | string {
  if (stored.length === 0) return 'stored value has no codec byte';
  const body = stored.subarray(1);
  try {
    switch (stored[0]) {
      case CODEC_NONE:
        return body;
      case CODEC_BROTLI:
        return zlib.brotliDecompressSync(body);
      case CODEC_DEFLATE:
        return zlib.inflateRawSync(body);
      default:
        return `unknown value codec ${stored[0]}`;
    }
  } catch (err) {
    return `value does not decompress (codec ${stored[0]}): ${(err as Error).message}`;
  }
}
