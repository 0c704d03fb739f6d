'use strict';
// The API: what each function returns, in the types the issue asks for (64-bit ids are
// bigints or strings, never numbers), and errors of the package's classes with stable codes.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { privateStateDir, load, firstDuplicate, increasing, pkg } = require('./helpers');

const dir = privateStateDir();
const idforge = load();

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('uuid7: RFC 9562 text, increasing, its time now', () => {
  const before = Date.now();
  const ids = Array.from({ length: 10000 }, () => idforge.uuid7());
  const after = Date.now();
  for (const u of ids) assert.match(u, UUID7);
  assert.ok(increasing(ids), 'uuid7 ids increase');
  const d = idforge.inspect(ids[0]);
  assert.equal(d.version, 7);
  assert.ok(d.date instanceof Date);
  assert.ok(d.date.getTime() >= before - 1 && d.date.getTime() <= after + 1, `${d.date} not in [${before}, ${after}]`);
  assert.equal(typeof d.unixNs, 'bigint');
});

test('uuid4, ulid, typeid, nanots, uprotocol, locality', () => {
  const v4 = Array.from({ length: 1000 }, () => idforge.uuid4());
  for (const u of v4) assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(firstDuplicate(v4), undefined);
  const ulids = Array.from({ length: 1000 }, () => idforge.ulid());
  for (const u of ulids) assert.match(u, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  assert.ok(increasing(ulids));
  const t = idforge.typeid('user');
  assert.match(t, /^user_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
  assert.match(idforge.typeid(), /^[0-7][0-9a-hjkmnp-tv-z]{25}$/);
  assert.equal(idforge.inspect(t).prefix, 'user');
  const ns = Array.from({ length: 1000 }, () => idforge.nanots());
  for (const n of ns) assert.equal(typeof n, 'bigint');
  assert.ok(increasing(ns));
  const wall = BigInt(Date.now()) * 1000000n;
  assert.ok(ns[0] > wall - 10n ** 10n && ns[0] < wall + 10n ** 10n, 'nanots is Unix nanoseconds');
  assert.match(idforge.uprotocol(), UUID7);
  assert.match(idforge.locality(), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

test('module generators are host-wide, in the state directory', () => {
  idforge.uuid7();
  idforge.nanots();
  const fs = require('node:fs');
  assert.ok(fs.existsSync(`${dir}/uuid7.state`));
  assert.ok(fs.existsSync(`${dir}/nanots.state`));
});

test('every scheme opens; next() returns a string or a bigint as `returns` says', () => {
  const nodes = { snowflake: 1, sonyflake: 1, discord: 1, instagram: 1, 'global-id': 1, 'global-id-128': 1, tsid: 1, 'nanots-host': 42, objectid: 1, xid: 1 };
  for (const scheme of idforge.schemes) {
    if (scheme === 'custom') continue;
    const opts = { shared: false };
    if (scheme in nodes) opts.node = nodes[scheme];
    if (['uuid4', 'locality', 'uprotocol-v8'].includes(scheme)) delete opts.shared;
    let g;
    try {
      g = new idforge.Generator(scheme, opts);
    } catch (e) {
      if (scheme === 'uprotocol-v8' && e.code === 'ERR_IDFORGE_SINGLETON_TAKEN') continue;
      throw new Error(`${scheme}: ${e.message}`);
    }
    const a = g.next();
    assert.equal(typeof a, g.returns, scheme);
    assert.equal(g.scheme.length > 0, true);
    const b = g.nextBigInt();
    assert.equal(typeof b, 'bigint');
    assert.ok(b < 2n ** BigInt(g.bits), scheme);
    assert.equal(typeof g.nextString(), 'string');
    // A KSUID's text adds 32 random bits to the value (its payload's tail): not repeatable.
    if (scheme !== 'ksuid') assert.equal(g.format(b), g.format(b));
    assert.equal(g.statePath, null, scheme);
  }
});

test('64-bit ids are bigints, never numbers', () => {
  const g = new idforge.Generator('snowflake', { node: 7 });
  const id = g.next();
  assert.equal(typeof id, 'bigint');
  assert.ok(id > 2n ** 53n, 'a snowflake id is past what a number holds exactly');
  assert.equal(g.statePath, `${dir}/snowflake-node7.state`);
  assert.equal(idforge.inspect(id, 'snowflake').node, 7n);
  // A node as a bigint or a number.
  assert.equal(new idforge.Generator('snowflake', { node: 7n, shared: false }).bits, 64);
});

test('take, takeStrings, takeBigInts, takeBuffer, takeBigUint64 continue one sequence', () => {
  const g = new idforge.Generator('snowflake', { node: 3, shared: false });
  const a = g.take(1000);
  const b = g.takeBigInts(1000);
  const buf = g.takeBuffer(1000);
  assert.ok(Buffer.isBuffer(buf));
  assert.equal(buf.length, 8000);
  const fromBuf = Array.from({ length: 1000 }, (_, i) => buf.readBigUInt64BE(i * 8));
  const arr = g.takeBigUint64(1000);
  assert.ok(arr instanceof BigUint64Array);
  const strs = g.takeStrings(10);
  const all = [...a, ...b, ...fromBuf, ...arr, ...strs.map(BigInt)];
  assert.equal(all.length, 4010);
  assert.ok(increasing(all), 'batches continue the sequence in issue order');
  assert.deepEqual(g.take(0), []);
  assert.equal(g.takeBuffer(0).length, 0);
  // 128-bit ids: 16 bytes each, big-endian, equal to their text.
  const u = new idforge.Generator('uuid7', { shared: false });
  const ub = u.takeBuffer(3);
  assert.equal(ub.length, 48);
  const hex = ub.subarray(16, 32).toString('hex');
  assert.equal(idforge.inspect(hex, 'uuid7', { format: 'hex' }).version, 7);
  assert.throws(() => u.takeBigUint64(1), { name: 'TypeError', message: /128 bits.*takeBuffer/ });
  const ob = new idforge.Generator('objectid', { node: 1, shared: false }).takeBuffer(2);
  assert.equal(ob.length, 24);
  const ubuf = idforge.uuid7Buffer(100);
  assert.equal(ubuf.length, 1600);
  assert.equal(ubuf[6] >> 4, 7);
});

test('text formats and TypeID prefixes', () => {
  const g = new idforge.Generator('snowflake', { node: 1, shared: false, format: 'hex' });
  assert.equal(g.returns, 'string');
  assert.match(g.next(), /^[0-9a-f]{16}$/);
  const t = new idforge.Generator('typeid', { prefix: 'order', shared: false });
  assert.match(t.next(), /^order_/);
  const c = new idforge.Generator('custom', { layout: 'time:41,node:10,counter:12', node: 5, shared: false });
  assert.equal(typeof c.next(), 'bigint');
});

test('a fixed clock gives reproducible ids; a Date works as at', () => {
  const a = new idforge.Generator('snowflake', { node: 1, at: '2026-01-01T00:00:00Z' }).take(5);
  const b = new idforge.Generator('snowflake', { node: 1, at: new Date('2026-01-01T00:00:00Z') }).take(5);
  assert.deepEqual(a, b);
  const d = idforge.inspect(a[0], 'snowflake');
  assert.equal(d.date.toISOString(), '2026-01-01T00:00:00.000Z');
  assert.equal(d.counter, 0n);
});

test('inspect returns a plain object; parts by name', () => {
  const d = idforge.inspect('01J5Z3W4VGH4ZQK1N2G9TE1S0J', 'ulid');
  assert.equal(Object.getPrototypeOf(d), Object.prototype);
  assert.equal(d.scheme, 'ulid');
  assert.equal(typeof d.value, 'bigint');
  assert.equal(typeof d.parts, 'object');
  assert.ok(d.date instanceof Date);
  assert.equal(idforge.inspect(123456789n, 'snowflake').value, 123456789n);
});

test('errors: classes and stable codes', () => {
  const cases = [
    [() => new idforge.Generator('snowflak'), idforge.UnknownSchemeError, 'ERR_IDFORGE_UNKNOWN_SCHEME', /did you mean snowflake/],
    [() => new idforge.Generator('snowflake'), idforge.NodeError, 'ERR_IDFORGE_NODE_REQUIRED', /node option/],
    [() => new idforge.Generator('snowflake', { node: 5000 }), idforge.NodeError, 'ERR_IDFORGE_NODE_OUT_OF_RANGE', /0 to 1023/],
    [() => idforge.inspect('not an id'), idforge.ParseError, 'ERR_IDFORGE_MALFORMED_ID', /malformed/],
    [() => new idforge.Generator('uuid7', { state: 'relative.state' }), idforge.ConfigError, 'ERR_IDFORGE_SETTING', /relative path/],
    [() => new idforge.Generator('uuid7', { state: '/x.state', shared: false }), idforge.ConfigError, 'ERR_IDFORGE_SETTING', /give one or the other/],
    [() => new idforge.Generator('uuid7', { durable: true, shared: false }), idforge.ConfigError, 'ERR_IDFORGE_SETTING', /shared: false/],
    [() => idforge.typeid('Bad Prefix'), idforge.ConfigError, undefined, /TypeID prefix/],
  ];
  for (const [f, Class, code, message] of cases) {
    assert.throws(f, (e) => {
      assert.ok(e instanceof Class, `${e.name}: ${e.message}`);
      assert.ok(e instanceof idforge.IdforgeError);
      assert.ok(e instanceof Error);
      assert.equal(e.name, Class.name);
      if (code) assert.equal(e.code, code);
      assert.match(e.code, /^ERR_IDFORGE_[A-Z_]+$/);
      assert.match(e.message, message);
      assert.doesNotMatch(e.message, /::/, 'messages name options, not Rust items');
      return true;
    });
  }
});

test('a state file that is not idforge\'s is refused and left as it was', () => {
  const fs = require('node:fs');
  const f = `${dir}/notes.txt`;
  fs.writeFileSync(f, 'x'.repeat(8192));
  assert.throws(() => new idforge.Generator('uuid7', { state: f }), (e) => e instanceof idforge.StateFileRefusedError && e.code === 'ERR_IDFORGE_STATE_FILE_FOREIGN');
  assert.equal(fs.readFileSync(f, 'utf8'), 'x'.repeat(8192));
});

test('a state directory nobody can write gives the hint about IDFORGE_STATE_DIR', () => {
  const { execFileSync } = require('node:child_process');
  const out = execFileSync(process.execPath, ['-e', `
    const i = require(${JSON.stringify(pkg)});
    try { i.uuid7(); console.log('made'); } catch (e) { console.log(e.name, e.code, e.message); }
  `], { env: { ...process.env, IDFORGE_STATE_DIR: '/proc/idforge-cannot-be-here' } }).toString();
  assert.match(out, /^StateFileError ERR_IDFORGE_STATE_FILE_/);
  assert.match(out, /IDFORGE_STATE_DIR/);
  assert.match(out, /shared: false/);
});

test('ES module entry: named exports and the same module', async () => {
  const m = await import(require.resolve(pkg).replace(/index\.js$/, 'index.mjs'));
  assert.equal(m.default, idforge);
  assert.equal(m.uuid7, idforge.uuid7);
  assert.match(m.uuid7(), UUID7);
});

test('the generator iterates', () => {
  const g = new idforge.Generator('ulid', { shared: false });
  const got = [];
  for (const id of g) {
    got.push(id);
    if (got.length === 5) break;
  }
  assert.equal(got.length, 5);
  assert.ok(increasing(got));
  assert.equal(Object.prototype.toString.call(g), '[object Generator]');
});
