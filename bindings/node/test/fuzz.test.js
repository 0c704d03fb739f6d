'use strict';
// Bad input never crashes the process: every function and option gets random arguments of
// every type (NaN, negative and huge counts, bigints past 128 bits, unknown schemes, layouts
// and formats, malformed ids, symbols, objects). Each call returns a value of the documented
// type or throws an Error with a string `code`; the process survives all of them.
//
// The pseudo-random sequence is seeded: IDFORGE_FUZZ_SEED repeats a run, IDFORGE_FUZZ_CALLS
// sets its length (default 6000).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { privateStateDir, load } = require('./helpers');

const dir = privateStateDir();
const idforge = load();

const seed = Number(process.env.IDFORGE_FUZZ_SEED || Date.now() % 2 ** 31);
const CALLS = Number(process.env.IDFORGE_FUZZ_CALLS || 6000);

function mulberry32(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(seed);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const CHARS = 'abcxyz_-0123456789ABCDEFGHJKMNPQRSTVWXYZ{}:/ \u00e9\u4e2d\ud83d\ude00\u0000';
function randomText() {
  const n = pick([0, 1, 5, 12, 20, 26, 27, 32, 36, 40, 200]);
  let s = '';
  for (let i = 0; i < n; i++) s += CHARS[Math.floor(rand() * CHARS.length)];
  return s;
}

const NUMBERS = [0, 1, 7, 42, 1023, 1024, -1, -0, 0.5, NaN, Infinity, -Infinity, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 64, Number.MAX_VALUE];
const BIGINTS = [0n, 1n, 7n, -1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 128n - 1n, 2n ** 128n, 2n ** 200n, -(2n ** 70n)];
const COUNTS = [0, 1, 5, 100, -1, 0.5, NaN, Infinity, 2 ** 31, 2 ** 32, 2 ** 53, 1n, 100n, -5n, 2n ** 40n, '10', null, undefined];

function randomScalar() {
  switch (Math.floor(rand() * 9)) {
    case 0:
      return pick(NUMBERS);
    case 1:
      return pick(BIGINTS);
    case 2:
      return randomText();
    case 3:
      return pick(idforge.schemes);
    case 4:
      return pick([undefined, null, true, false]);
    case 5:
      return pick([Symbol('x'), () => 1, [], [1, 2], new Date(NaN), new Date(0), new Date()]);
    case 6:
      return pick(['2026-01-01T00:00:00Z', '1969-12-31T23:59:59Z', '9999-12-31T23:59:59Z', 'yesterday']);
    case 7:
      return pick(['hex', 'dec', 'base32', 'uuid', 'ulid', 'typeid', 'time', 'nope', 'time:41,node:10,counter:12', 'time:70', 'node:10']);
    default:
      return pick([path.join(dir, `f${Math.floor(rand() * 4)}.state`), 'relative.state', '', '/proc/idforge-nowhere/x.state']);
  }
}

const OPTION_KEYS = ['node', 'shared', 'state', 'clock', 'policy', 'layout', 'format', 'prefix', 'hostDigits', 'at', 'fastRandom', 'durable', 'stateMode', 'pid', 'macFragment', 'sequential', 'nodeId', 'constructor'];
function randomOptions() {
  if (rand() < 0.1) return randomScalar();
  const o = {};
  const n = Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) {
    const k = pick(OPTION_KEYS);
    o[k] =
      k === 'policy' && rand() < 0.7
        ? { [pick(['onExhausted', 'maxLead', 'onClockBehind', 'x'])]: pick(['wait', 'run-ahead', 'fail', 0.5, -1, NaN, 1e300, 'x']) }
        : k === 'shared' && rand() < 0.5
          ? false
          : randomScalar();
  }
  return o;
}

function checkThrown(e, what) {
  assert.ok(e instanceof Error, `${what} threw a non-Error: ${String(e)}`);
  assert.equal(typeof e.code, 'string', `${what} threw ${e.name} without a code: ${e.message}`);
  assert.ok(e.message.length > 0, `${what}: an empty message`);
}

test(`random arguments never crash (seed ${seed}, ${CALLS} calls)`, (t) => {
  t.diagnostic(`seed ${seed}: IDFORGE_FUZZ_SEED=${seed} repeats this run`);
  const gens = [new idforge.Generator('snowflake', { node: 1, shared: false }), new idforge.Generator('uuid7', { shared: false })];
  let threw = 0;
  for (let i = 0; i < CALLS; i++) {
    const op = Math.floor(rand() * 9);
    let what = '';
    try {
      switch (op) {
        case 0: {
          const scheme = rand() < 0.7 ? pick(idforge.schemes) : randomScalar();
          const opts = randomOptions();
          what = `new Generator(${String(scheme)}, ${Object.keys(opts ?? {}).join(',')})`;
          const g = new idforge.Generator(scheme, opts);
          const id = g.next();
          assert.ok(typeof id === 'string' || typeof id === 'bigint', what);
          if (gens.length < 40) gens.push(g);
          break;
        }
        case 1: {
          const g = pick(gens);
          const n = pick(COUNTS);
          const m = pick(['take', 'takeStrings', 'takeBigInts', 'takeBuffer', 'takeBigUint64']);
          what = `${g.scheme}.${m}(${String(n)})`;
          const r = g[m](n);
          const len = Buffer.isBuffer(r) ? r.length / g.width : r.length;
          assert.equal(len, Number(n), what);
          break;
        }
        case 2: {
          const g = pick(gens);
          const v = rand() < 0.5 ? pick(BIGINTS) : randomScalar();
          what = `${g.scheme}.format(${typeof v})`;
          assert.equal(typeof g.format(v), 'string');
          break;
        }
        case 3: {
          const id = rand() < 0.5 ? randomText() : randomScalar();
          const scheme = rand() < 0.5 ? undefined : rand() < 0.8 ? pick(idforge.schemes) : randomScalar();
          const opts = rand() < 0.7 ? {} : { [pick(['format', 'layout', 'hostDigits', 'x'])]: randomScalar() };
          what = `inspect(${typeof id}, ${String(scheme)})`;
          const d = idforge.inspect(id, scheme, opts);
          assert.equal(typeof d.value, 'bigint');
          assert.ok(d.date === null || d.date instanceof Date);
          break;
        }
        case 4: {
          const p = rand() < 0.5 ? randomText() : randomScalar();
          what = `typeid(${typeof p})`;
          assert.equal(typeof idforge.typeid(p), 'string');
          break;
        }
        case 5: {
          const n = pick(COUNTS);
          what = `uuid7Buffer(${String(n)})`;
          assert.equal(idforge.uuid7Buffer(n).length, Number(n) * 16);
          break;
        }
        case 6: {
          // A real id, cut or with a character changed, read back.
          const g = pick(gens);
          let s = g.nextString();
          const at = Math.floor(rand() * s.length);
          s = rand() < 0.5 ? s.slice(0, at) : s.slice(0, at) + pick(['!', 'Z', 'u', '0', '-']) + s.slice(at + 1);
          what = `inspect(${JSON.stringify(s)}, ${g.scheme})`;
          idforge.inspect(s, g.scheme);
          break;
        }
        default: {
          const f = pick(['uuid7', 'uuid4', 'ulid', 'nanots', 'uprotocol', 'locality']);
          what = `${f}()`;
          const v = idforge[f](randomScalar());
          assert.ok(typeof v === 'string' || typeof v === 'bigint');
        }
      }
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      checkThrown(e, what);
      threw++;
    }
  }
  t.diagnostic(`${threw} of ${CALLS} calls threw, each an Error with a code`);
  assert.ok(threw > CALLS / 10, 'the run reached the error paths');
  assert.ok(threw < CALLS, 'the run reached the success paths');
});
