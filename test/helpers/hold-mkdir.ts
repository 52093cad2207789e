/**
 * Preloaded into a server under test (NODE_OPTIONS=--import=<this file>) to
 * hold its start at one point: its first mkdir says "mkdir held" on stderr,
 * then waits until the file named by HOLD_MKDIR_UNTIL exists. A test can so
 * let another server create the data directory and take its lock between
 * this one's first look at the directory and its own mkdir: the instant in
 * which two servers started together race.
 */
import * as fs from 'node:fs';

const until = process.env.HOLD_MKDIR_UNTIL;
if (until !== undefined) {
  const mkdir = fs.promises.mkdir.bind(fs.promises);
  let held = false;
  const hold = async (...args: Parameters<typeof mkdir>): Promise<string | undefined> => {
    if (!held) {
      held = true;
      process.stderr.write('mkdir held\n');
      while (!fs.existsSync(until)) await new Promise((r) => setTimeout(r, 10));
    }
    return mkdir(...args);
  };
  fs.promises.mkdir = hold as typeof fs.promises.mkdir;
}
