/** Plain one-line log records: ISO time, level, message. Info to stdout, the rest to stderr. */
export type Level = 'info' | 'warn' | 'error';

export function log(level: Level, msg: string): void {
  const line = `${new Date().toISOString()} ${level.toUpperCase()} ${msg}\n`;
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
}
