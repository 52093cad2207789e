/** Help texts of the `pithos` command-line client (`pithos help <command>`). */

const COMMON = `Common options (before or after the command):
  --url <url>        server address (PITHOS_URL; default http://127.0.0.1:2668)
  --token <secret>   the Auth-Token (PITHOS_TOKEN, else PITHOS_AUTH_TOKEN)
  -o json|human      json prints the server's envelope, one JSON object per line
  --timeout <s>      give up after s seconds     --retries <n>  retry idempotent calls
Exit codes: 0 ok, 1 not found or refused (or no answer), 2 usage.
JSON arguments may be given inline, as @file, or as - (read from stdin).`;

export const OVERVIEW = `usage: pithos <command> [arguments] [options]

Server:
  pithos [serve] [server options]       start the server (pithos serve --help lists its options)
  pithos repair [server options]        repair the data directory, then exit
  pithos rekey [server options]         rewrite every segment under the current encryption key, then exit
  pithos key-check [server options]     list the key each segment needs; exit 1 if any is not the current one
  pithos restore --from FILE --data-dir DIR   restore a backup into a new data directory

Client:
  get <kind> <name>                     read a table, record, variant, lock, list, set or zset; get row <table> <t_id>
  put <kind> <name> ...                 create a table; write a record, variant, list, set or zset; put row replaces a row
  del <kind> <name>                     delete one object; del rows <table> <wheres>; del row <table> <t_id>
  incr <variant> [delta]                atomic add (default 1); incr --zset <zset> <member> [delta]
  append <variant> <text>               atomic append to a string variant; prints its length in bytes
  push <list> <value>... [--left]       push values onto a list (right end by default)
  pop <list> [--right] [--wait ms]      pop items (--count n, --to list to move them)
  add set|zset <name> <member>...       add members to a set, or <member> <score> pairs to a zset
  remove set|zset <name> <member>...    remove members
  combine <set> union|inter|diff <set>...   set operations (--store s writes the result to set s)
  query <table> [wheres]                matching rows (--order, --limit, --fields, --count)
  insert <table> <row>...               insert rows, prints each t_id
  patch <table> <wheres> <sets>         patch matching rows; patch --record <id> <sets>; patch --row <table> <t_id> <sets>;
                                        patch --list <list> (set an item, trim, remove by value, --ttl);
                                        patch --set|--zset <name> --ttl s
  lock <name> --ttl <s> [--holder h]    acquire (or --renew <token>) a lease lock
  unlock <name> <token>                 release a lock
  txn <transaction>                     run a transaction (POST /txns)
  ls [tables|records|variants|locks|lists|sets|zsets] list names (--prefix, --limit, --after, --all)
  watch [--kind k] [--since v]          follow the change feed
  health                                the server's health figures
  backup --out FILE                     stream an online backup of a running server to FILE
  help [command]                        this text, or one command's
  version                               the version of this program

${COMMON}`;

export const HELP: Record<string, string> = {
  get: `usage: pithos get <kind> <name> [options]
  pithos get table <name> [--limit n] [--after t_id]   every row with its t_id
  pithos get record <id> [--column <field>]            the record (or one field of it)
  pithos get variant <name>                            the value
  pithos get lock <name>                               holder, fence and time left
  pithos get row <table> <t_id>                        one row, and its version
  pithos get list <name> [--start i] [--stop j]        its items, one per line (a range: inclusive,
                                                       negatives count from the end)
  pithos get set <name> [--limit n] [--after m]        its members in byte order, one per line
  pithos get set <name> --member m [--member m2 ...]   whether each is a member (m<TAB>true|false)
  pithos get zset <name> [--start i] [--stop j] [--rev]                        by rank
  pithos get zset <name> [--min s] [--max s] [--offset n] [--limit n] [--rev]  by score
                                                       member<TAB>score per line; a bound may be
                                                       -inf, +inf, or exclusive: '(5'
  pithos get zset <name> --member m                    its score, rank and rev_rank
A missing object exits 1 ("... does not exist").

${COMMON}`,
  put: `usage: pithos put <kind> <name> [value] [options]
  pithos put table <name> [--ttl s]                    create a table (exists: exit 1)
  pithos put record <id> <json> [--ttl s] [--if-version v] [--if-absent]
  pithos put variant <name> <value> [--ttl s] [--if-version v] [--if-absent] [--string]
  pithos put row <table> <t_id> <json> [--if-version v]   replace one row whole (never creates one)
  pithos put list <name> <value>...                    values as push takes them (none: empty)
  pithos put set <name> <member>...
  pithos put zset <name> <member> <score>...
    (list, set, zset: [--ttl s] [--if-version v] [--if-absent]; prints created or replaced)
A variant value is read as JSON (42, 1.5, true, "x"); anything else is a string,
and --string forces a string ("42" stays text).

${COMMON}`,
  del: `usage: pithos del table|record|variant|list|set|zset <name>
       pithos del list|set|zset <name> --if-version v  delete only if its version (its ETag) is still v
       pithos del rows <table> <wheres>                delete the matching rows
       pithos del row <table> <t_id> [--if-version v]  delete exactly one row
A missing object exits 1.

${COMMON}`,
  push: `usage: pithos push <list> <value>... [--left] [--if-version v] [--no-create]
Pushes each value (JSON, else a string) in order onto the right end (--left: the left end,
one at a time, as Redis LPUSH); creates the list when missing (--no-create: a missing list
exits 1, 404); prints the new length.

${COMMON}`,
  pop: `usage: pithos pop <list> [--right] [--count n] [--wait ms] [--to list [--to-side left|right]]
Removes and prints up to n items (default 1) from the left end (--right: the right end);
--pop-count n is the same as --count n.
--wait ms waits up to ms milliseconds (≤ 30000) for an item when there is none; --to moves
the items onto another list atomically (Redis LMOVE).

${COMMON}`,
  add: `usage: pithos add set <name> <member>... [--if-version v] [--no-create]
       pithos add zset <name> <member> <score>... [--mode upsert|nx|xx|gt|lt] [--if-version v] [--no-create]
Adds members (creating the set when missing; --no-create: a missing set exits 1, 404) and
prints how many were added (for a zset, also how many scores were updated) and the new
member count. --mode: nx only new members, xx only existing ones, gt / lt only to a greater
/ lower score.

${COMMON}`,
  remove: `usage: pithos remove set|zset <name> <member>... [--if-version v]
Removes members and prints how many were removed and the new member count; the set stays,
even empty (del set|zset deletes it).

${COMMON}`,
  combine: `usage: pithos combine <set> union|inter|diff <set>... [--store <set>]
Combines the first set with the others (1-16 of them; a missing set counts as empty) and
prints the resulting members in byte order, one per line. With --store, writes the result
to that set instead (replacing it, in the same atomic step as the read) and prints its
member count.

${COMMON}`,
  incr: `usage: pithos incr <variant> [delta]
       pithos incr --zset <zset> <member> [delta] [--if-version v] [--no-create]
Adds delta (default 1; negative subtracts) atomically and prints the new value. With
--zset, to the member's score (a new member starts at 0; a missing zset is created, unless
--no-create: then it exits 1, 404).

${COMMON}`,
  append: `usage: pithos append <variant> <text> [--if-version v]
Appends text to a string variant atomically (Redis APPEND) and prints its new length in
UTF-8 bytes. --if-version v appends only if the variant's version (its ETag) is still v.

${COMMON}`,
  query: `usage: pithos query <table> [wheres] [options]
  wheres            a JSON object, e.g. '{"age":{"$gte":18}}' (default {}: every row)
  --order f[:desc]  sort, comma-separated terms      --limit n / --after t_id   paging
  --fields a,b      projection                       --count  {"count":n} instead of rows
  --with-ids        each row with its t_id
The options after wheres need a server that has them (docs/query.md).

${COMMON}`,
  insert: `usage: pithos insert <table> <row>...
Each row is a JSON object; - or @file may hold one row or an array of rows.
Prints the t_id of every inserted row.

${COMMON}`,
  patch: `usage: pithos patch <table> <wheres> <sets>
       pithos patch --record <id> [sets] [--if-version v] [--ttl s]
       pithos patch --row <table> <t_id> [sets] [--unset <field>]... [--if-version v]
       pithos patch --list <list> --index i <value>            replace the item at index i
       pithos patch --list <list> --start i --stop j           trim: keep only items i..j (inclusive)
       pithos patch --list <list> --remove <value> [--count n]
                                                               remove the first n items equal to value
                                                               (negative n: from the right; default 0: all;
                                                               --remove-count n is the same)
       pithos patch --list|--set|--zset <name> --ttl s         set the remaining lifetime (0: none)
Writes the fields of sets into every matching row (or merges them into the record;
null deletes a field; needs a server that has PATCH, docs/api.md). With --row, into
that one row, and removes each field named by --unset. With --list, one change to the
list (values are JSON, else a string; indexes count from the end when negative), --ttl
with it or alone; prints the list's new length. Every --list, --set and --zset form takes
--if-version v.

${COMMON}`,
  lock: `usage: pithos lock <name> --ttl <seconds> [--holder <name>]
       pithos lock <name> --renew <token> [--ttl <seconds>]
Acquire (non-blocking: a held lock exits 1 with 423) or renew; prints token and fence.

${COMMON}`,
  unlock: `usage: pithos unlock <name> <token>
Releases the lock; a wrong token exits 1 (403).

${COMMON}`,
  txn: `usage: pithos txn <transaction>
The transaction is {"mutations":[...],"checks":[...]} (docs/api.md, "Transactions"), inline,
as @file or - for stdin. Prints one result per mutation.

${COMMON}`,
  ls: `usage: pithos ls [tables|records|variants|locks|lists|sets|zsets] [--prefix p] [--limit n] [--after cursor] [--all]
Lists names in byte order (default: tables). --all follows every page.

${COMMON}`,
  watch: `usage: pithos watch [--kind table|record|variant|lock|list|set|zset]... [--prefix p] [--since version] [--values] [--count-events n]
Follows the change feed (GET /watch): one line per event (id, event, kind, name); the id
is - on an event the server sends without one (expire, overflow).
--count-events n stops after n events.

${COMMON}`,
  health: `usage: pithos health
Prints the server's health figures (key count, disk, memory, gc state).

${COMMON}`,
  serve: `usage: pithos [serve] [server options]
Starts the server; pithos serve --help lists its options (also read from PITHOS_* variables).`,
  repair: `usage: pithos repair [server options]
Opens a damaged data directory keeping every intact batch, then exits; see pithos serve --help.`,
  backup: `usage: pithos backup --out FILE [--url URL] [--token T]
Streams GET /backup (an admin token) to FILE while the server keeps serving: every write
acknowledged before the backup began, none queued after it. The file is written under a
temporary name and renamed when the stream ended with its checksum, so FILE is never a
partial backup. Restore it with pithos restore.

${COMMON}`,
  restore: `usage: pithos restore --from FILE --data-dir DIR [--encryption-key-file KEY] [--encryption-old-key-files K1,K2]
Checks FILE's checksum, writes its log files into DIR (which must not exist or be empty),
and opens DIR once so every batch is verified. Needs no server, and refuses a DIR a running
server holds (its LOCK); start one on DIR afterwards.
A backup of an encrypted store stays encrypted: restoring it needs the store's key
(also read from PITHOS_ENCRYPTION_KEY_FILE); without it nothing is restored.`,
  help: `usage: pithos help [command]`,
  version: `usage: pithos version
Prints the version of this program.`,
};
