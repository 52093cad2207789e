/** UTF-8 byte order: the order listings, set members and sorted-set ties come in (docs/api.md, "Names"). */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
