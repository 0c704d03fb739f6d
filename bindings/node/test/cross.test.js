'use strict';
// One sequence across languages: a Node.js generator, `idforge gen --shared` and a Python
// process on one state file never repeat an id, and their ids interleave.
//
// IDFORGE_CLI names the command line (else `idforge` on PATH), IDFORGE_PYTHON a Python with the
// idforge package. scripts/node-test sets both and IDFORGE_REQUIRE_CROSS=1, which makes a
// missing one a failure; run by hand without them, the test is skipped with the reason.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { privateStateDir, load, increasing } = require('./helpers');

const dir = privateStateDir();
const idforge = load();

function which(cmd) {
  for (const d of (process.env.PATH || '').split(path.delimiter)) {
    const f = path.join(d, cmd);
    if (fs.existsSync(f)) return f;
  }
  return null;
}

const cli = process.env.IDFORGE_CLI || which('idforge');
const python = process.env.IDFORGE_PYTHON || null;
const required = process.env.IDFORGE_REQUIRE_CROSS === '1';

function missing() {
  const m = [];
  if (!cli) m.push('the command line (set IDFORGE_CLI)');
  if (!python) m.push('a Python with idforge (set IDFORGE_PYTHON)');
  return m.length ? `needs ${m.join(' and ')}` : null;
}

const why = missing();
if (why && required) {
  test('the cross-language test has what it needs', () => assert.fail(why));
}

const PY = `
import idforge, sys
g = idforge.Generator("uuid7", shared=True)
print(g.state_path, flush=True)
out = []
import time
for _ in range(300):
    out.extend(g.take_ints(200))
    time.sleep(0.0005)
sys.stdout.write("\\n".join(format(v, "032x") for v in out))
`;

test('Node.js, the command line and Python share one uuid7 sequence', { skip: !required && why ? why : false }, async () => {
  const g = new idforge.Generator('uuid7', { shared: true });
  assert.equal(g.statePath, path.join(dir, 'uuid7.state'));
  const cliPath = execFileSync(cli, ['gen', 'uuid7', '--shared', '--state-path']).toString().trim();
  assert.equal(cliPath, g.statePath, 'the command line names the same file');

  const mine = [];
  const hex = (u) => u.replace(/-/g, '');
  for (let i = 0; i < 500; i++) mine.push(hex(g.nextString()));
  const collect = (p) => {
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    return new Promise((resolve, reject) =>
      p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${p.spawnargs[0]} exited ${code}: ${err}`)))),
    );
  };
  const c = spawn(cli, ['gen', 'uuid7', '--shared', '-n', '300000', '--format', 'hex']);
  const p = spawn(python, ['-c', PY]);
  const cliDone = collect(c);
  const pyDone = collect(p);
  let running = 2;
  cliDone.finally(() => running--);
  pyDone.finally(() => running--);
  while (running > 0) {
    for (let i = 0; i < 100; i++) mine.push(hex(g.nextString()));
    // Leave the others a core.
    await new Promise((r) => setTimeout(r, 1));
  }
  for (let i = 0; i < 500; i++) mine.push(hex(g.nextString()));
  const theirs = (await cliDone).split('\n').filter(Boolean);
  const [pyPath, ...pyIds] = (await pyDone).split('\n').filter(Boolean);
  assert.equal(pyPath, g.statePath, 'Python names the same file');
  assert.equal(theirs.length, 300000);
  assert.equal(pyIds.length, 60000);
  for (const ids of [mine, theirs, pyIds]) assert.ok(increasing(ids));
  const all = new Set([...mine, ...theirs, ...pyIds]);
  assert.equal(all.size, mine.length + theirs.length + pyIds.length, 'an id repeated across languages');
  // Node issued before, during and after the others ran: one interleaved sequence.
  const lo = theirs[0];
  const hi = theirs[theirs.length - 1];
  assert.ok(mine[0] < lo && mine[mine.length - 1] > hi);
  assert.ok(mine.some((v) => v > lo && v < hi), 'Node ids between the command line\'s first and last');
});
