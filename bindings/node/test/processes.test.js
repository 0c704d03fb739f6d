'use strict';
// Unique across processes: workers of node:cluster (what PM2's cluster mode runs) and children
// of child_process.fork that first make an id after they start never repeat one, and each
// worker's ids increase.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const cluster = require('node:cluster');
const { fork } = require('node:child_process');
const path = require('node:path');
const { privateStateDir, firstDuplicate, increasing } = require('./helpers');

const dir = privateStateDir();
const WORKER = path.join(__dirname, 'fixtures', 'worker.js');
const WORKERS = 4;

function merged(results, key) {
  return results.flatMap((r) => r[key]);
}

function check(results, counts) {
  assert.equal(results.length, WORKERS);
  assert.equal(new Set(results.map((r) => r.pid)).size, WORKERS, 'one process per worker');
  for (const [key, n] of Object.entries(counts)) {
    const all = merged(results, key);
    assert.equal(all.length, WORKERS * n, key);
    assert.equal(firstDuplicate(all), undefined, `${key}: an id repeated across workers`);
    for (const r of results) {
      const mine = key === 'uuid7' ? r[key] : r[key].map(BigInt);
      assert.ok(increasing(mine), `${key}: worker ${r.pid}'s ids do not increase`);
    }
  }
}

/** Runs WORKERS cluster workers with `job`; resolves with what each sent. */
function runCluster(job, env = {}) {
  return new Promise((resolve, reject) => {
    cluster.setupPrimary({ exec: WORKER, args: [JSON.stringify(job)], silent: false });
    const results = [];
    let exited = 0;
    for (let i = 0; i < WORKERS; i++) {
      const w = cluster.fork({ ...process.env, ...env });
      w.on('message', (m) => results.push(m));
      w.on('exit', (code, signal) => {
        if (code !== 0) reject(new Error(`worker ${w.process.pid} exited with ${code ?? signal}`));
        if (++exited === WORKERS) resolve(results);
      });
    }
  });
}

/** Runs WORKERS children of child_process.fork with `job`. */
function runForked(job, env = {}) {
  return Promise.all(
    Array.from(
      { length: WORKERS },
      () =>
        new Promise((resolve, reject) => {
          const c = fork(WORKER, [JSON.stringify(job)], { env: { ...process.env, ...env } });
          let got;
          c.on('message', (m) => {
            got = m;
          });
          c.on('exit', (code, signal) => {
            if (code !== 0 || !got) reject(new Error(`child ${c.pid} exited with ${code ?? signal}`));
            else resolve(got);
          });
        }),
    ),
  );
}

const counts = { uuid7: 20000, nanots: 5000, snowflake: 20000 };

test('cluster workers share one sequence: no repeats, each increasing', async () => {
  const results = await runCluster(counts);
  check(results, counts);
  // Through the default files of the state directory the tests set.
  for (const f of ['uuid7.state', 'nanots.state', 'snowflake-node7.state']) {
    assert.ok(require('node:fs').existsSync(path.join(dir, f)), f);
  }
});

test('child_process.fork children share one sequence', async () => {
  const results = await runForked(counts);
  check(results, counts);
});

// The evidence that the state file is what keeps workers apart: with a fixed clock every
// worker's ids come from the same instant, so only the shared counter separates them. Kept in
// each process (shared: false), the workers repeat each other's ids, certainly.
test('a fixed clock on a shared file never repeats; kept per process it repeats', async () => {
  const job = { fixed: 3000, fixedState: path.join(dir, 'fixed.state') };
  const shared = await runCluster(job);
  check(shared, { fixed: 3000 });
  const apart = await runCluster({ ...job, shared: false });
  const all = merged(apart, 'fixed');
  assert.notEqual(firstDuplicate(all), undefined, 'per-process sequences at one instant should repeat');
  // Each worker alone still increases.
  for (const r of apart) assert.ok(increasing(r.fixed.map(BigInt)));
});

test('IDFORGE_SHARED=0 keeps module generators per process (documented opt-out)', async () => {
  const results = await runForked({ uuid7: 10 }, { IDFORGE_SHARED: '0' });
  // No state file was made for them; ids are still UUIDv7s.
  for (const r of results) for (const u of r.uuid7) assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  const bad = await new Promise((resolve) => {
    const c = fork(WORKER, [JSON.stringify({ uuid7: 1 })], {
      env: { ...process.env, IDFORGE_SHARED: 'maybe' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let err = '';
    c.stderr.on('data', (d) => {
      err += d;
    });
    c.on('exit', (code) => resolve({ code, err }));
  });
  assert.notEqual(bad.code, 0);
  assert.match(bad.err, /IDFORGE_SHARED="maybe"/);
});
