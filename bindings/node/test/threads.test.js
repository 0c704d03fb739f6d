'use strict';
// worker_threads: threads of one process share the module's generators (one addon, one set of
// generators per process) and generators on one state file, and never repeat an id.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { privateStateDir, load, firstDuplicate, increasing, pkg } = require('./helpers');

const dir = privateStateDir();
const idforge = load();
const THREADS = 4;

function runThreads(code, data) {
  return Promise.all(
    Array.from(
      { length: THREADS },
      (_, i) =>
        new Promise((resolve, reject) => {
          const w = new Worker(code, { eval: true, workerData: { ...data, pkg, i } });
          w.once('message', resolve);
          w.once('error', reject);
          w.once('exit', (c) => c !== 0 && reject(new Error(`thread exited with ${c}`)));
        }),
    ),
  );
}

test('threads share the module generators: no repeats, each thread increasing', async () => {
  const before = idforge.uuid7();
  const results = await runThreads(
    `const { parentPort, workerData } = require('node:worker_threads');
     const idforge = require(workerData.pkg);
     const u = [], n = [];
     for (let k = 0; k < 20000; k++) { u.push(idforge.uuid7()); if (k % 4 === 0) n.push(idforge.nanots()); }
     parentPort.postMessage({ u, n });`,
    {},
  );
  const after = idforge.uuid7();
  const all = results.flatMap((r) => r.u);
  assert.equal(all.length, THREADS * 20000);
  assert.equal(firstDuplicate(all), undefined);
  for (const r of results) {
    assert.ok(increasing(r.u));
    assert.ok(increasing(r.n));
    assert.ok(r.u[0] > before && r.u[r.u.length - 1] < after, 'the main thread\'s sequence continues');
  }
  assert.equal(firstDuplicate(results.flatMap((r) => r.n)), undefined);
});

test('threads with a Generator each, on one state file', async () => {
  const state = path.join(dir, 'threads-snowflake.state');
  const results = await runThreads(
    `const { parentPort, workerData } = require('node:worker_threads');
     const idforge = require(workerData.pkg);
     const g = new idforge.Generator('snowflake', { node: 11, state: workerData.state });
     const ids = [];
     for (let k = 0; k < 200; k++) ids.push(...g.take(50));
     parentPort.postMessage(ids);`,
    { state },
  );
  const all = results.flat();
  assert.equal(all.length, THREADS * 10000);
  assert.equal(firstDuplicate(all), undefined);
  for (const r of results) assert.ok(increasing(r));
});
