// Type declarations of idforge for Node.js. 64-bit and wider ids are `bigint`s or strings,
// never numbers (a number holds integers exactly only up to 2**53).

/** The schemes `new Generator(scheme)` takes. */
export type SchemeName =
  | 'uuid7'
  | 'uprotocol'
  | 'uprotocol-v8'
  | 'global-id'
  | 'global-id-128'
  | 'snowflake'
  | 'sonyflake'
  | 'discord'
  | 'instagram'
  | 'nanots'
  | 'ulid'
  | 'tsid'
  | 'objectid'
  | 'xid'
  | 'typeid'
  | 'ksuid'
  | 'uuid4'
  | 'nanots-host'
  | 'locality'
  | 'custom';

/** A non-negative integer: a number up to 2**53 - 1, or a bigint. */
export type Integer = number | bigint;

/** What happens when a tick's counter runs out and when the clock is behind the last id. */
export interface Policy {
  /** 'wait' for the next tick, or 'run-ahead' of the clock (up to `maxLead`). */
  onExhausted?: 'wait' | 'run-ahead';
  /** Seconds ids may run ahead of the wall clock. */
  maxLead?: number;
  /** 'fail' with a ClockBehindError, or 'wait' for the clock to catch up. */
  onClockBehind?: 'fail' | 'wait';
}

/**
 * Options of `new Generator`. Every user of a state file must agree on its policy and
 * durability: with `policy` or `durable`, give `state` or `shared: false` (refused otherwise).
 */
export interface GeneratorOptions {
  /** The node id (snowflake and other layouts with a node field), the tag (nanots) or the host id (nanots-host). idforge never picks one. */
  node?: Integer;
  /** true: host-wide (the default for every scheme that can be); false: this process only. */
  shared?: boolean;
  /** An absolute path of a state file to share the sequence through (implies shared). */
  state?: string;
  /** 'auto' (default), 'precise', 'counter' or 'ticker'. */
  clock?: 'auto' | 'precise' | 'counter' | 'ticker';
  policy?: Policy;
  /** The layout of scheme 'custom' (`time:41,node:10,counter:12`...). */
  layout?: string;
  /** A text format for `next()` ('dec', 'hex', 'base32', 'uuid', ...). */
  format?: string;
  /** A TypeID prefix (scheme 'typeid'). */
  prefix?: string;
  /** nanots-host: decimal digits of the host id, 2 (default) or 3. */
  hostDigits?: Integer;
  /** A fixed clock at this time (RFC 3339 text or a Date), for reproducible ids. */
  at?: string | Date;
  /** Random bits from a fast generator seeded by the operating system instead of its secure one. */
  fastRandom?: boolean;
  /** Sync the state file before ids past its reservation are issued (survives power loss). */
  durable?: boolean;
  /** Permission bits of a state file this process creates (0o660 to share with a group). */
  stateMode?: number;
  /** locality: the process id to write. */
  pid?: Integer;
  /** locality: the 28-bit MAC fragment to write. */
  macFragment?: Integer;
  /** locality: sequential mode. */
  sequential?: boolean;
}

/** A generator of any idforge scheme. Host-wide by default. */
export class Generator implements Iterable<string | bigint> {
  constructor(scheme: SchemeName | string, options?: GeneratorOptions);
  /** The next id: a string, or a bigint for schemes written in decimal (`returns` says which). */
  next(): string | bigint;
  /** The next id as text in the generator's format. */
  nextString(): string;
  /** The next id as a bigint. */
  nextBigInt(): bigint;
  /** `n` ids as an array of what `next()` returns, in issue order. */
  take(n: Integer): Array<string | bigint>;
  takeStrings(n: Integer): string[];
  takeBigInts(n: Integer): bigint[];
  /** `n` ids in one Buffer, each big-endian in `width` bytes, in issue order. */
  takeBuffer(n: Integer): Buffer;
  /** `n` ids of at most 64 bits, in issue order. */
  takeBigUint64(n: Integer): BigUint64Array;
  /** An id's value as text in the generator's format. */
  format(id: bigint): string;
  readonly scheme: string;
  readonly bits: number;
  readonly width: number;
  readonly returns: 'string' | 'bigint';
  readonly isUuid: boolean;
  /** The state file of a host-wide generator; null for an in-process one. */
  readonly statePath: string | null;
  /** How far the last id is ahead of the wall clock, in seconds. */
  readonly lead: number;
  [Symbol.iterator](): Iterator<string | bigint>;
}

/** A UUIDv7 (RFC 9562, monotonic), as 36 lowercase characters. */
export function uuid7(): string;
/** `n` UUIDv7s in one Buffer of 16 bytes each, in issue order. */
export function uuid7Buffer(n: Integer): Buffer;
/** A UUIDv4 (secure random). */
export function uuid4(): string;
/** A monotonic ULID, as 26 characters. */
export function ulid(): string;
/** A TypeID: `prefix_` and a 26-character suffix. */
export function typeid(prefix?: string): string;
/** Unix nanoseconds, unique on the host. */
export function nanots(): bigint;
/** A uProtocol UUID. */
export function uprotocol(): string;
/** A Locality UUID. */
export function locality(): string;

export interface InspectOptions {
  /** How the text is written ('dec', 'hex', 'base32', 'uuid', ...), when it could be several. */
  format?: string;
  /** The layout of scheme 'custom'. */
  layout?: string;
  /** nanots-host: digits of the host id. */
  hostDigits?: Integer;
}

/** An id's parts. Fields a scheme has no such part for are null. */
export interface Decoded {
  input: string;
  /** What the id was read as ('uuid-v7', 'snowflake', ...). */
  scheme: string;
  value: bigint;
  bits: number;
  /** The time, in Unix nanoseconds. */
  unixNs: bigint | null;
  /** The time, to the millisecond. */
  date: Date | null;
  /** The time as RFC 3339 text. */
  time: string | null;
  node: bigint | null;
  counter: bigint | null;
  random: bigint | null;
  version: number | null;
  variant: number | null;
  canonical: string;
  pid: number | null;
  mac: string | null;
  prefix: string | null;
  /** The schemes whose ids look like this one. */
  layouts: string[];
  note: string | null;
  hint: string | null;
  /** Every field by name: numbers as bigints, bits and text as strings. */
  parts: Record<string, bigint | string>;
}

/** Decodes an id (text, or a bigint read as decimal) as `scheme`, or as what its text shows. */
export function inspect(id: string | bigint, scheme?: SchemeName | string | null, options?: InspectOptions): Decoded;

/** Every scheme name. */
export const schemes: readonly string[];
/** The package's version. */
export const version: string;

/** Base class of every idforge error; `code` is stable (`ERR_IDFORGE_NODE_REQUIRED`). */
export class IdforgeError extends Error {
  code: string;
}
export class ConfigError extends IdforgeError {}
export class UnknownSchemeError extends ConfigError {}
export class NodeError extends ConfigError {}
export class ParseError extends IdforgeError {}
export class ClockError extends IdforgeError {}
export class ClockBehindError extends ClockError {}
export class StateFileError extends IdforgeError {}
export class StateFileRefusedError extends StateFileError {}
export class StateFileLostError extends StateFileError {}
export class LeaseLostError extends IdforgeError {}
