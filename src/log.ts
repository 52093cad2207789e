/** Plain one-line log records: ISO time, level, message. Info to stdout, the rest to stderr. */
export type Level = 'info' | 'warn' | 'error';

/** Where the engine and the server send their log records; `log` below is the one the server uses. */
export type Logger = (level: Level, msg: string) => void;

export function log(level: Level, msg: string): void {
  const line = `${new Date().toISOString()} ${level.toUpperCase()} ${msg}\n`;
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
}
