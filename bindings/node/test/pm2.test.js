'use strict';
// PM2's cluster mode: `pm2 start app.js -i 4` starts four instances through node:cluster; each
// makes ids after it starts. No id repeats across instances, and each instance's ids increase.
//
// Needs the pm2 package: scripts/node-test installs it into its scratch project and sets
// IDFORGE_REQUIRE_PM2=1, which makes its absence a failure; run by hand without it, the test is
// skipped with the reason. PM2 runs with a PM2_HOME of the test's own, killed at the end.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { privateStateDir, firstDuplicate, increasing, pkg } = require('./helpers');

const dir = privateStateDir();
let pm2Bin = null;
try {
  pm2Bin = path.join(path.dirname(require.resolve('pm2/package.json')), 'bin', 'pm2');
} catch {
  pm2Bin = null;
}
const required = process.env.IDFORGE_REQUIRE_PM2 === '1';
const INSTANCES = 4;
const COUNT = 20000;

if (!pm2Bin && required) {
  test('the PM2 test has pm2', () => assert.fail('the pm2 package is not installed'));
}

test('PM2 cluster-mode instances share one sequence', { skip: !pm2Bin && !required ? 'the pm2 package is not installed' : false }, async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'idforge-pm2-'));
  const out = path.join(home, 'out');
  fs.mkdirSync(out);
  const env = {
    ...process.env,
    PM2_HOME: home,
    IDFORGE_STATE_DIR: dir,
    IDFORGE_PACKAGE: pkg,
    IDFORGE_TEST_OUT: out,
    IDFORGE_TEST_COUNT: String(COUNT),
  };
  const pm2 = (...args) => execFileSync(process.execPath, [pm2Bin, ...args], { env, stdio: 'pipe' }).toString();
  try {
    pm2('start', path.join(__dirname, 'fixtures', 'pm2-worker.js'), '-i', String(INSTANCES), '--name', 'idforge-test', '--no-autorestart');
    const jlist = JSON.parse(pm2('jlist'));
    assert.equal(jlist.length, INSTANCES);
    for (const p of jlist) assert.equal(p.pm2_env.exec_mode, 'cluster_mode');
    // Wait for every instance's file (no time bound: a loaded machine is slow, not wrong).
    for (;;) {
      const done = fs.readdirSync(out).filter((f) => f.endsWith('.json'));
      if (done.length === INSTANCES) break;
      const states = JSON.parse(pm2('jlist')).map((p) => p.pm2_env.status);
      assert.ok(states.every((s) => s === 'online'), `an instance stopped: ${states.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    try {
      pm2('kill');
    } catch {
      // already gone
    }
  }
  const results = fs.readdirSync(out).map((f) => JSON.parse(fs.readFileSync(path.join(out, f), 'utf8')));
  fs.rmSync(home, { recursive: true, force: true });
  assert.equal(results.length, INSTANCES);
  for (const key of ['uuid7', 'nanots', 'snowflake']) {
    const all = results.flatMap((r) => r[key]);
    assert.equal(all.length, INSTANCES * COUNT);
    assert.equal(firstDuplicate(all), undefined, `${key}: an id repeated across PM2 instances`);
    for (const r of results) assert.ok(increasing(key === 'uuid7' ? r[key] : r[key].map(BigInt)), key);
  }
});
