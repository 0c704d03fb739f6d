'use strict';
// Where a generator's sequence lives, and the mistakes refused rather than turned into repeated
// ids (each case found by an attack on the package).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { privateStateDir, load, pkg, firstDuplicate } = require('./helpers');

const dir = privateStateDir();
const idforge = load();

test('a policy of its own, or durable mode, must say where the sequence lives', () => {
  // Kept in the process unasked, two processes with the same policy repeated 196,608 of
  // 400,000 snowflake ids; on the default file it would refuse every default generator.
  // Asked to share the default file (shared: true), too: its fingerprint would stay in the file
  // and refuse every default generator of the host.
  for (const opts of [{ policy: { onExhausted: 'wait' } }, { policy: {} }, { durable: true }, { policy: {}, shared: true }, { durable: true, shared: true }]) {
    assert.throws(
      () => new idforge.Generator('snowflake', { node: 7, ...opts }),
      (e) => e instanceof idforge.ConfigError && e.code === 'ERR_IDFORGE_SETTING' && /default state file.*add \{ state: PATH \}.*or shared: false/.test(e.message),
    );
  }
  const own = new idforge.Generator('snowflake', { node: 7, policy: { onExhausted: 'wait' }, state: path.join(dir, 'own.state') });
  assert.equal(own.statePath, path.join(dir, 'own.state'));
  assert.equal(new idforge.Generator('snowflake', { node: 7, durable: true, state: path.join(dir, 'durable.state') }).statePath, path.join(dir, 'durable.state'));
  assert.equal(new idforge.Generator('snowflake', { node: 7, policy: {}, shared: false }).statePath, null);
  // With IDFORGE_SHARED=0 every default generator is in its process, this one too.
  const out = execFileSync(process.execPath, ['-e', `
    const i = require(${JSON.stringify(pkg)});
    console.log(String(new i.Generator('snowflake', { node: 7, policy: { onExhausted: 'wait' } }).statePath));`], { env: { ...process.env, IDFORGE_SHARED: '0' } }).toString().trim();
  assert.equal(out, 'null');
  // A fixed clock makes reproducible ids: in the process unless given a file.
  assert.equal(new idforge.Generator('snowflake', { node: 7, at: '2026-01-01T00:00:00Z' }).statePath, null);
});

test('IDFORGE_STATE: the default, shared: true and the command line use the one file it names', () => {
  const one = path.join(dir, 'one.state');
  const code = `
    const i = require(${JSON.stringify(pkg)});
    const a = new i.Generator('snowflake', { node: 7 }).statePath;
    const b = new i.Generator('snowflake', { node: 7, shared: true }).statePath;
    let other;
    try { new i.Generator('uuid7'); other = 'opened'; } catch (e) { other = e.code + ' ' + e.message; }
    console.log(JSON.stringify([a, b, other]));`;
  const [a, b, other] = JSON.parse(execFileSync(process.execPath, ['-e', code], { env: { ...process.env, IDFORGE_STATE: one } }).toString());
  assert.equal(a, one);
  assert.equal(b, one);
  // Another scheme on that one file is refused, saying what to set instead.
  assert.match(other, /^ERR_IDFORGE_STATE_FILE_MISMATCH .*IDFORGE_STATE names one state file.*IDFORGE_STATE_DIR/);
});

test('generators of the same options share one mapping: a generator per call does not run out', () => {
  // A process maps at most 256 state files; the garbage collector freed generators made per
  // request too late, and the 257th failed.
  const ids = [];
  for (let k = 0; k < 2000; k++) ids.push(new idforge.Generator('uuid7').next());
  for (let k = 0; k < 600; k++) ids.push(new idforge.Generator('snowflake', { node: 3 }).next().toString());
  assert.equal(firstDuplicate(ids), undefined);
});

test('a state file deleted under a generator: a new one opens a new file', () => {
  const fs = require('node:fs');
  const f = path.join(dir, 'deleted.state');
  const g = new idforge.Generator('uuid7', { state: f });
  g.next();
  fs.unlinkSync(f);
  // Noticed at the next check (every millisecond of wall or stamp time), then for good.
  let lost = null;
  for (let k = 0; k < 10_000_000 && !lost; k++) {
    try {
      g.next();
    } catch (e) {
      lost = e;
    }
  }
  assert.ok(lost instanceof idforge.StateFileLostError, String(lost));
  assert.throws(() => g.next(), (e) => e instanceof idforge.StateFileLostError);
  const h = new idforge.Generator('uuid7', { state: f });
  assert.match(h.next(), /^[0-9a-f-]{36}$/);
  assert.ok(fs.existsSync(f));
});

test('options inherited from a polluted Object.prototype are not options', () => {
  Object.prototype.shared = false; // eslint-disable-line no-extend-native
  Object.prototype.fastRandom = true; // eslint-disable-line no-extend-native
  Object.prototype.node = 5; // eslint-disable-line no-extend-native
  try {
    const g = new idforge.Generator('uuid7');
    assert.equal(g.statePath, path.join(dir, 'uuid7.state'), 'still host-wide');
    assert.equal(new idforge.Generator('snowflake', { node: 7 }).statePath, path.join(dir, 'snowflake-node7.state'));
  } finally {
    delete Object.prototype.shared;
    delete Object.prototype.fastRandom;
    delete Object.prototype.node;
  }
});

test('module functions advise what they can change: the environment', () => {
  const out = execFileSync(process.execPath, ['-e', `
    const i = require(${JSON.stringify(pkg)});
    try { i.uuid7(); console.log('made'); } catch (e) { console.log(e.message); }
  `], { env: { ...process.env, IDFORGE_STATE_DIR: '/proc/idforge-cannot-be-here' } }).toString();
  assert.match(out, /IDFORGE_STATE_DIR/);
  assert.match(out, /a Generator with \{ shared: false \}/);
  assert.doesNotMatch(out, /\{ state: PATH \}/);
});

test('numbers out of range are RangeErrors with the limits', () => {
  assert.throws(() => new idforge.Generator('uuid7', { policy: { maxLead: 1e20 }, shared: false }), (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE' && /at most/.test(e.message));
  assert.throws(() => new idforge.Generator('uuid7', { stateMode: 0o1600 }), (e) => e instanceof RangeError && /not 0o1600/.test(e.message));
});

test('a handle from another copy of the addon is refused', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const addon = path.join(path.dirname(require.resolve(pkg)), 'idforge.linux-x64-gnu.node');
  const copy = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'idforge-copy-')), 'copy.node');
  fs.copyFileSync(addon, copy);
  const a = require(addon);
  const b = require(copy);
  fs.rmSync(path.dirname(copy), { recursive: true });
  const h = b.openGenerator('uuid7', { shared: false });
  assert.match(b.genNextString(h), /^[0-9a-f-]{36}$/);
  assert.throws(() => a.genNext(h), /generator handle/);
  assert.throws(() => a.genNext({}), /generator handle/);
});

test('module functions carry on after their state file is deleted: a new file, ids still increasing', () => {
  const fs = require('node:fs');
  const f = path.join(dir, 'uuid7.state');
  const ids = [idforge.uuid7()];
  assert.ok(fs.existsSync(f));
  fs.unlinkSync(f);
  // Noticed at the next check (every millisecond); the generator is replaced by one on a new
  // file, without an error.
  for (let k = 0; k < 200000; k++) ids.push(idforge.uuid7());
  assert.ok(fs.existsSync(f), 'a new state file');
  assert.ok(require('./helpers').increasing(ids));
  // The buffer form too.
  fs.unlinkSync(f);
  for (let k = 0; k < 2000; k++) idforge.uuid7Buffer(100);
  assert.ok(fs.existsSync(f));
});
