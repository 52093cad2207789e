/**
 * Pub/sub on one node (docs/redis-rest.md, "Pub/sub"): channels and glob
 * patterns, the subscribers of each, and PUBLISH / PUBSUB in the command
 * table. A subscriber is anything that can take a message (an SSE stream of
 * the REST routes today); one hub per process, so a message published over
 * either transport reaches the subscribers of both. Delivery is at most
 * once, as in Redis: a subscriber that is gone or too slow misses messages.
 */
import type { MessageBus } from '../store/bus.js';
import type { Command } from './command.js';
import { glob, type Glob } from './glob.js';
import { ErrorReply, MapReply, type Reply } from './resp.js';

/** Takes one message: `['message', channel, text]` or `['pmessage', pattern, channel, text]`. */
export interface Subscriber {
  deliver(kind: 'message' | 'pmessage', channel: string, message: string, pattern?: string): void;
}

export class PubSub {
  private readonly channels = new Map<string, Set<Subscriber>>();
  private readonly patterns = new Map<string, { re: Glob; subs: Set<Subscriber> }>();

  subscribe(s: Subscriber, channel: string): void {
    let set = this.channels.get(channel);
    if (set === undefined) this.channels.set(channel, (set = new Set()));
    set.add(s);
  }

  unsubscribe(s: Subscriber, channel: string): void {
    const set = this.channels.get(channel);
    if (set === undefined) return;
    set.delete(s);
    if (set.size === 0) this.channels.delete(channel);
  }

  psubscribe(s: Subscriber, pattern: string): void {
    let p = this.patterns.get(pattern);
    if (p === undefined) this.patterns.set(pattern, (p = { re: glob(pattern), subs: new Set() }));
    p.subs.add(s);
  }

  punsubscribe(s: Subscriber, pattern: string): void {
    const p = this.patterns.get(pattern);
    if (p === undefined) return;
    p.subs.delete(s);
    if (p.subs.size === 0) this.patterns.delete(pattern);
  }

  private bus: MessageBus | undefined;

  /** The shared store's bus: messages published on other nodes are delivered here too. */
  attach(bus: MessageBus): void {
    this.bus = bus;
    bus.onMessage((channel, message) => this.deliver(channel, message));
  }

  /** Resolves once messages published on any node from now on will reach this node's subscribers. */
  ready(): Promise<void> {
    return this.bus === undefined ? Promise.resolve() : this.bus.listen();
  }

  /**
   * Sends the message to the other nodes first (a message the bus refuses,
   * too large for it, reaches no one), then to this node's subscribers.
   * Answers how many of this node's subscribers took it, as PUBLISH does in
   * a Redis cluster.
   */
  async publish(channel: string, message: string): Promise<number> {
    if (this.bus !== undefined) await this.bus.publish(channel, message);
    return this.deliver(channel, message);
  }

  /** To this node's subscribers only (keyspace notifications: every node's own feed reports every node's writes). */
  publishLocal(channel: string, message: string): number {
    return this.deliver(channel, message);
  }

  /** Hands the message to every subscriber of the channel and of every matching pattern; how many took it. */
  private deliver(channel: string, message: string): number {
    let n = 0;
    const set = this.channels.get(channel);
    if (set !== undefined)
      for (const s of [...set]) {
        s.deliver('message', channel, message);
        n++;
      }
    for (const [pattern, p] of [...this.patterns]) {
      if (!p.re.test(channel)) continue;
      for (const s of [...p.subs]) {
        s.deliver('pmessage', channel, message, pattern);
        n++;
      }
    }
    return n;
  }

  /** Channels with at least one subscriber, matching `pattern` when given (PUBSUB CHANNELS). */
  activeChannels(pattern?: string): string[] {
    const re = pattern === undefined ? undefined : glob(pattern);
    return [...this.channels.keys()].filter((c) => re === undefined || re.test(c));
  }

  numsub(channel: string): number {
    return this.channels.get(channel)?.size ?? 0;
  }

  numpat(): number {
    return this.patterns.size;
  }
}

/** The process's hub: both transports publish and subscribe here. */
export const HUB = new PubSub();

function pubsub(args: readonly string[]): Reply {
  const sub = args[1]!.toUpperCase();
  if (sub === 'CHANNELS' && args.length <= 3) return HUB.activeChannels(args[2]);
  if (sub === 'NUMSUB') return new MapReply(args.slice(2).map((ch): [Reply, Reply] => [ch, HUB.numsub(ch)]));
  if (sub === 'NUMPAT' && args.length === 2) return HUB.numpat();
  if (sub === 'SHARDCHANNELS' && args.length <= 3) return HUB.activeChannels(args[2]);
  if (sub === 'SHARDNUMSUB') return new MapReply(args.slice(2).map((ch): [Reply, Reply] => [ch, HUB.numsub(ch)]));
  throw new ErrorReply(`ERR unknown subcommand or wrong number of arguments for '${args[1]}'. Try PUBSUB HELP.`);
}

/**
 * PUBLISH needs a write token (the `write` flag, which is what the role check
 * reads): a read token is for looking, and a message changes what other
 * clients see. SPUBLISH is PUBLISH on one node.
 */
export const PUBSUB_COMMANDS: Command[] = [
  {
    name: 'publish',
    arity: 3,
    flags: ['pubsub', 'loading', 'stale', 'fast', 'write'],
    keys: [0, 0, 0],
    summary: 'send a message to a channel; answers how many subscribers took it',
    run: (c) => HUB.publish(c.args[1]!, c.args[2]!),
  },
  {
    name: 'spublish',
    arity: 3,
    flags: ['pubsub', 'loading', 'stale', 'fast', 'write'],
    keys: [1, 1, 1],
    summary: 'PUBLISH (one node, no shards)',
    run: (c) => HUB.publish(c.args[1]!, c.args[2]!),
  },
  {
    name: 'pubsub',
    arity: -2,
    flags: ['pubsub', 'loading', 'stale'],
    keys: [0, 0, 0],
    summary: 'CHANNELS [pattern], NUMSUB [channel …], NUMPAT',
    run: (c) => pubsub(c.args),
  },
];
