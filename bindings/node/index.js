'use strict';
// idforge for Node.js: unique ids, host-wide by default. The addon (Rust, napi-rs) makes every
// id; this file checks arguments, turns the addon's errors into the classes below and decodes
// times into `Date`s. See README.md.

const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { constants: bufferConstants } = require('node:buffer');

// ---------------------------------------------------------------------------------------------
// Errors

/** Base class of every idforge error; `code` is stable (`ERR_IDFORGE_NODE_REQUIRED`). */
class IdforgeError extends Error {
  constructor(message, code) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}
/** Settings that cannot be used: an unknown scheme, a node id out of range, a relative path. */
class ConfigError extends IdforgeError {}
class UnknownSchemeError extends ConfigError {}
class NodeError extends ConfigError {}
/** Text that is not an id of the scheme asked for. */
class ParseError extends IdforgeError {}
/** A time outside what the scheme holds, or a clock that cannot be used. */
class ClockError extends IdforgeError {}
/** The clock is behind the last id and the policy says to fail. */
class ClockBehindError extends ClockError {}
/** A state file that cannot be made, opened or locked. */
class StateFileError extends IdforgeError {}
/** A state file idforge will not use as it is (not idforge's, another scheme's, untrusted). */
class StateFileRefusedError extends StateFileError {}
/** The state file was deleted, replaced or rewound while in use: the generator stopped. */
class StateFileLostError extends StateFileError {}
/** A fleet member's node id lease was lost. */
class LeaseLostError extends IdforgeError {}

const FAMILIES = {
  IdforgeError,
  ConfigError,
  UnknownSchemeError,
  NodeError,
  ParseError,
  ClockError,
  ClockBehindError,
  StateFileError,
  StateFileRefusedError,
  StateFileLostError,
  LeaseLostError,
};

function codeError(Class, message, code) {
  const e = new Class(message);
  e.code = code;
  return e;
}

/** The addon's error (code `Family:ERR_...`) as an error of its class with its stable code. */
function convert(e) {
  if (e !== null && typeof e === 'object' && typeof e.code === 'string') {
    const i = e.code.indexOf(':');
    if (i > 0) {
      const family = e.code.slice(0, i);
      const code = e.code.slice(i + 1);
      if (family === 'TypeError') return codeError(TypeError, e.message, code);
      if (family === 'RangeError') return codeError(RangeError, e.message, code);
      const Class = FAMILIES[family];
      if (Class) return new Class(e.message, code);
    }
    if (e.code === 'InvalidArg' || e.code === 'NumberExpected' || e.code === 'StringExpected') {
      return codeError(TypeError, e.message, 'ERR_INVALID_ARG_TYPE');
    }
  }
  return e;
}

function call(f) {
  try {
    return f();
  } catch (e) {
    throw convert(e);
  }
}

// ---------------------------------------------------------------------------------------------
// The addon

function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    let glibc = false;
    try {
      glibc = Boolean(process.report.getReport().header.glibcVersionRuntime);
    } catch {
      glibc = fs.existsSync('/lib64/ld-linux-x86-64.so.2') || fs.existsSync('/lib/ld-linux-aarch64.so.1');
    }
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  return `${platform}-${arch}`;
}

function loadNative() {
  const name = `idforge.${platformName()}.node`;
  const file = path.join(__dirname, name);
  if (!fs.existsSync(file)) {
    const have = fs.readdirSync(__dirname).filter((f) => f.endsWith('.node'));
    throw new Error(
      `idforge has no compiled addon for this platform (${name} is missing; this package has ` +
        `${have.length ? have.join(', ') : 'none'}). Build it from the source with Rust ` +
        '(https://rustup.rs): `node scripts/build.js` in a checkout of bindings/node; README.md, ' +
        '"Other platforms", says how.',
    );
  }
  return require(file);
}

const native = loadNative();

// ---------------------------------------------------------------------------------------------
// Arguments

function typeError(message) {
  return codeError(TypeError, message, 'ERR_INVALID_ARG_TYPE');
}

function rangeError(message) {
  return codeError(RangeError, message, 'ERR_OUT_OF_RANGE');
}

function describe(v) {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return `bigint ${v}n`;
  if (typeof v === 'number') return `number ${v}`;
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`;
  return typeof v;
}

function string(v, name) {
  if (typeof v !== 'string') throw typeError(`${name} must be a string, not ${describe(v)}`);
  return v;
}

function bool(v, name) {
  if (typeof v !== 'boolean') throw typeError(`${name} must be true or false, not ${describe(v)}`);
  return v;
}

/** A non-negative integer (a number up to 2**53 - 1, or a bigint) as a bigint at most `max`. */
function bigintArg(v, name, max = 2n ** 64n - 1n) {
  let b;
  if (typeof v === 'bigint') {
    b = v;
  } else if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) {
      throw rangeError(
        `${name} must be an integer from 0 to ${max}, not ${v}` +
          (Number.isInteger(v) ? ' (a number this large has lost bits: pass a bigint)' : ''),
      );
    }
    b = BigInt(v);
  } else {
    throw typeError(`${name} must be an integer (a number or a bigint), not ${describe(v)}`);
  }
  if (b < 0n || b > max) throw rangeError(`${name} must be an integer from 0 to ${max}, not ${b}`);
  return b;
}

function smallInt(v, name, max) {
  return Number(bigintArg(v, name, BigInt(max)));
}

/** The largest count of ids one call makes: the addon takes a 32-bit count. */
const MAX_COUNT = 2 ** 32 - 1;

/** The machine's memory (read once: `os.totalmem()` costs microseconds a call). */
const TOTAL_MEMORY = os.totalmem();

/** A count of ids whose `bytesPerId` fit in memory (and, for a Buffer, in one Buffer). */
function count(n, bytesPerId, what) {
  const c = smallInt(n, 'n', MAX_COUNT);
  const bytes = c * bytesPerId;
  if (what === 'buffer' && bytes > bufferConstants.MAX_LENGTH) {
    throw rangeError(
      `${c} ids take ${bytes} bytes, more than one Buffer holds (${bufferConstants.MAX_LENGTH}): take fewer at a time`,
    );
  }
  if (bytes > TOTAL_MEMORY) {
    throw rangeError(
      `${c} ids would take about ${(bytes / 2 ** 30).toFixed(1)} GiB, more than this machine's ` +
        `${(TOTAL_MEMORY / 2 ** 30).toFixed(1)} GiB: take fewer at a time`,
    );
  }
  return c;
}

const OPTIONS = new Set([
  'node',
  'shared',
  'state',
  'clock',
  'policy',
  'layout',
  'format',
  'prefix',
  'hostDigits',
  'at',
  'fastRandom',
  'durable',
  'stateMode',
  'pid',
  'macFragment',
  'sequential',
]);

const POLICY = new Set(['onExhausted', 'maxLead', 'onClockBehind']);

function plainObject(v, name) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw typeError(`${name} must be an object, not ${Array.isArray(v) ? 'an array' : describe(v)}`);
  }
  return v;
}

function checkKeys(o, known, name) {
  for (const k of Object.keys(o)) {
    if (!known.has(k)) {
      throw codeError(
        TypeError,
        `${name} has no option ${JSON.stringify(k)}: the options are ${[...known].join(', ')}`,
        'ERR_INVALID_ARG_VALUE',
      );
    }
  }
}

function atText(v) {
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) throw rangeError('at is an invalid Date');
    return v.toISOString();
  }
  if (typeof v === 'string') return v;
  throw typeError(`at must be RFC 3339 text or a Date, not ${describe(v)}`);
}

/** The options as given: own properties only (a property inherited from a polluted
 * `Object.prototype` is not an option anyone gave). */
function own(o, known, name) {
  checkKeys(o, known, name);
  const out = Object.create(null);
  for (const k of known) if (Object.hasOwn(o, k) && o[k] !== undefined) out[k] = o[k];
  return out;
}

function generatorOptions(options) {
  const o = own(plainObject(options, 'options'), OPTIONS, 'options');
  const out = Object.create(null);
  const given = (k) => k in o;
  if (given('node')) out.node = bigintArg(o.node, 'node');
  if (given('pid')) out.pid = bigintArg(o.pid, 'pid');
  if (given('macFragment')) out.macFragment = bigintArg(o.macFragment, 'macFragment');
  for (const k of ['shared', 'fastRandom', 'durable', 'sequential']) {
    if (given(k)) out[k] = bool(o[k], k);
  }
  for (const k of ['state', 'clock', 'layout', 'format', 'prefix']) {
    if (given(k)) out[k] = string(o[k], k);
  }
  if (given('hostDigits')) out.hostDigits = smallInt(o.hostDigits, 'hostDigits', 2 ** 32 - 1);
  if (given('stateMode')) {
    const m = o.stateMode;
    if (typeof m === 'number' && Number.isInteger(m) && (m < 0 || m > 0o777)) {
      throw rangeError(`stateMode must be permission bits from 0o000 to 0o777 (0o600, 0o660), not 0o${m.toString(8)}`);
    }
    out.stateMode = smallInt(m, 'stateMode', 0o777);
  }
  if (given('at')) out.at = atText(o.at);
  if (given('policy')) {
    const p = own(plainObject(o.policy, 'policy'), POLICY, 'policy');
    const policy = Object.create(null);
    if (p.onExhausted !== undefined) policy.onExhausted = string(p.onExhausted, 'policy.onExhausted');
    if (p.onClockBehind !== undefined) policy.onClockBehind = string(p.onClockBehind, 'policy.onClockBehind');
    if (p.maxLead !== undefined) {
      if (typeof p.maxLead !== 'number') throw typeError(`policy.maxLead must be a number of seconds, not ${describe(p.maxLead)}`);
      if (!Number.isFinite(p.maxLead) || p.maxLead < 0) {
        throw rangeError(`policy.maxLead must be a non-negative, finite number of seconds, not ${p.maxLead}`);
      }
      policy.maxLead = p.maxLead;
    }
    out.policy = policy;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Generator

/**
 * A generator of any idforge scheme. Host-wide by default: every process of the host that
 * opens the same scheme (and node) draws from one sequence, kept in a state file.
 */
class Generator {
  #h;
  #info;

  constructor(scheme, options = {}) {
    string(scheme, 'scheme');
    const opts = generatorOptions(options);
    this.#h = call(() => native.openGenerator(scheme, opts));
    this.#info = native.genInfo(this.#h);
  }

  /** The next id: a string, or a bigint for schemes written in decimal (snowflake, nanots). */
  next() {
    try {
      return native.genNext(this.#h);
    } catch (e) {
      throw convert(e);
    }
  }

  /** The next id as text in the generator's format. */
  nextString() {
    try {
      return native.genNextString(this.#h);
    } catch (e) {
      throw convert(e);
    }
  }

  /** The next id as a bigint. */
  nextBigInt() {
    try {
      return native.genNextBigInt(this.#h);
    } catch (e) {
      throw convert(e);
    }
  }

  /** `n` ids as an array of what `next()` returns, in issue order. */
  take(n) {
    const c = count(n, 96, 'array');
    return call(() => native.genTake(this.#h, c));
  }

  /** `n` ids as an array of strings. */
  takeStrings(n) {
    const c = count(n, 96, 'array');
    return call(() => native.genTakeStrings(this.#h, c));
  }

  /** `n` ids as an array of bigints. */
  takeBigInts(n) {
    const c = count(n, 64, 'array');
    return call(() => native.genTakeBigInts(this.#h, c));
  }

  /** `n` ids in one Buffer: each big-endian in `width` bytes, in issue order. */
  takeBuffer(n) {
    const w = this.#info.width;
    const c = count(n, w, 'buffer');
    const buf = Buffer.allocUnsafe(c * w);
    try {
      native.genFillBuffer(this.#h, buf);
    } catch (e) {
      throw convert(e);
    }
    return buf;
  }

  /** `n` ids of at most 64 bits in a BigUint64Array, in issue order. */
  takeBigUint64(n) {
    const c = count(n, 8, 'buffer');
    if (this.#info.bits > 64) {
      throw codeError(
        TypeError,
        `${this.#info.scheme} ids have ${this.#info.bits} bits, more than a BigUint64Array holds: use takeBuffer`,
        'ERR_INVALID_ARG_VALUE',
      );
    }
    const ids = new BigUint64Array(c);
    try {
      native.genFillBigUint64(this.#h, ids);
    } catch (e) {
      throw convert(e);
    }
    return ids;
  }

  /** An id's value (a bigint, as `nextBigInt()` returns it) as text in the generator's format. */
  format(id) {
    if (typeof id !== 'bigint') throw typeError(`id must be a bigint, not ${describe(id)}`);
    return call(() => native.genFormat(this.#h, bigintArg(id, 'id', 2n ** 128n - 1n)));
  }

  /** The scheme's name. */
  get scheme() {
    return this.#info.scheme;
  }

  /** Width of an id in bits. */
  get bits() {
    return this.#info.bits;
  }

  /** Bytes per id in `takeBuffer`. */
  get width() {
    return this.#info.width;
  }

  /** What `next()` returns: 'string' or 'bigint'. */
  get returns() {
    return this.#info.returns;
  }

  /** Whether ids are UUIDs. */
  get isUuid() {
    return this.#info.isUuid;
  }

  /** The state file of a host-wide generator; null for an in-process one. */
  get statePath() {
    return this.#info.statePath ?? null;
  }

  /** How far the last id is ahead of the wall clock, in seconds. */
  get lead() {
    return native.genLead(this.#h);
  }

  /** Endless ids: `for (const id of g)` (break out of it). */
  *[Symbol.iterator]() {
    for (;;) yield this.next();
  }

  get [Symbol.toStringTag]() {
    return 'Generator';
  }
}

// ---------------------------------------------------------------------------------------------
// Module functions: one generator per scheme per process, host-wide by default

/** A UUIDv7 (RFC 9562; a counter keeps ids of one millisecond increasing), as 36 characters. */
function uuid7() {
  try {
    return native.uuid7();
  } catch (e) {
    throw convert(e);
  }
}

/** `n` UUIDv7s in one Buffer of 16 bytes each, in issue order. */
function uuid7Buffer(n) {
  const c = count(n, 16, 'buffer');
  const buf = Buffer.allocUnsafe(c * 16);
  try {
    native.uuid7Fill(buf);
  } catch (e) {
    throw convert(e);
  }
  return buf;
}

/** A UUIDv4 (122 random bits from the operating system's secure generator). */
function uuid4() {
  return native.uuid4();
}

/** A monotonic ULID, as 26 characters. */
function ulid() {
  try {
    return native.ulid();
  } catch (e) {
    throw convert(e);
  }
}

/** A TypeID: `prefix_` and a 26-character suffix (the bare suffix for ''). */
function typeid(prefix = '') {
  string(prefix, 'prefix');
  return call(() => native.typeid(prefix));
}

/** A nanots id: Unix nanoseconds as a bigint, unique on the host. */
function nanots() {
  try {
    return native.nanots();
  } catch (e) {
    throw convert(e);
  }
}

/** A uProtocol UUID (Eclipse uProtocol's UUIDv7 layout), as 36 characters. */
function uprotocol() {
  return call(() => native.uprotocol());
}

/** A Locality UUID (Groupon's layout: reversed counter, PID, MAC), as 36 characters. */
function locality() {
  return call(() => native.locality());
}

// ---------------------------------------------------------------------------------------------
// inspect

const INSPECT = new Set(['format', 'layout', 'hostDigits']);

/**
 * An id's parts: `inspect(id, scheme?, { format, layout, hostDigits })`. `id` is text (or a
 * bigint, read as decimal). Returns a plain object; `date` is a Date (to the millisecond),
 * `unixNs` the exact time.
 */
function inspect(id, scheme, options = {}) {
  let text;
  if (typeof id === 'string') text = id;
  else if (typeof id === 'bigint') {
    if (id < 0n) throw rangeError(`id must not be negative, not ${id}`);
    text = id.toString();
  } else throw typeError(`id must be a string or a bigint, not ${describe(id)}`);
  if (scheme !== undefined && scheme !== null) string(scheme, 'scheme');
  const o = own(plainObject(options, 'options'), INSPECT, 'options');
  if (o.format !== undefined) string(o.format, 'format');
  if (o.layout !== undefined) string(o.layout, 'layout');
  const hostDigits = o.hostDigits === undefined ? null : smallInt(o.hostDigits, 'hostDigits', 2 ** 32 - 1);
  const d = call(() => native.inspect(text, scheme ?? null, o.format ?? null, o.layout ?? null, hostDigits));
  const parts = {};
  for (const p of d.parts) parts[p.name] = p.int ?? p.text;
  const unixNs = d.unixNs ?? null;
  return {
    input: d.input,
    scheme: d.scheme,
    value: d.value,
    bits: d.bits,
    unixNs,
    date: unixNs === null ? null : new Date(Number(unixNs / 1000000n)),
    time: d.time ?? null,
    node: d.node ?? null,
    counter: d.counter ?? null,
    random: d.random ?? null,
    version: d.version ?? null,
    variant: d.variant ?? null,
    canonical: d.canonical,
    pid: d.pid ?? null,
    mac: d.mac ?? null,
    prefix: d.prefix ?? null,
    layouts: d.layouts,
    note: d.note ?? null,
    hint: d.hint ?? null,
    parts,
  };
}

/** The names of every scheme `new Generator(scheme)` takes. */
const schemes = Object.freeze(native.schemeNames());

module.exports = {
  uuid7,
  uuid7Buffer,
  uuid4,
  ulid,
  typeid,
  nanots,
  uprotocol,
  locality,
  inspect,
  Generator,
  schemes,
  version: native.version(),
  // The error classes, by name.
  ...FAMILIES,
};
