/**
 * Log records, one line each: info to stdout, the rest to stderr
 * (docs/operations.md, "Logs"). Two formats: `text` (ISO time, level,
 * message, then key=value fields) for people, `json` (one object per line:
 * time, level, msg, then the fields) for log shippers.
 */
export type Level = 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
export type Fields = Record<string, string | number | boolean>;

/** Where the engine and the server send their log records; `log` below is the one the server uses. */
export type Logger = (level: Level, msg: string) => void;

let format: LogFormat = 'text';

export function setLogFormat(f: LogFormat): void {
  format = f;
}

/** A value printed bare when that is unambiguous, else as a JSON string. */
const BARE = /^[^\s"=\\]+$/;

export function formatLine(level: Level, msg: string, fields: Fields | undefined, time: string, f: LogFormat): string {
  if (f === 'json') {
    const o: Record<string, unknown> = { time, level, msg };
    if (fields !== undefined) for (const k of Object.keys(fields)) if (!(k in o)) o[k] = fields[k];
    return JSON.stringify(o) + '\n';
  }
  let line = `${time} ${level.toUpperCase()} ${msg}`;
  if (fields !== undefined) {
    for (const k of Object.keys(fields)) {
      const v = fields[k]!;
      line += ` ${k}=${typeof v === 'string' && !BARE.test(v) ? JSON.stringify(v) : String(v)}`;
    }
  }
  return line + '\n';
}

export function log(level: Level, msg: string, fields?: Fields): void {
  const line = formatLine(level, msg, fields, new Date().toISOString(), format);
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
}
