'use strict';
// What every test file shares: the package under test and a private state directory.
//
// IDFORGE_PACKAGE names the package to test: `idforge` when scripts/node-test runs these
// tests in a scratch project where the packed tarball was installed, else this checkout.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const pkg = process.env.IDFORGE_PACKAGE || path.resolve(__dirname, '..');

/**
 * A fresh private directory (mode 700) for state files, set as IDFORGE_STATE_DIR for this
 * process and the processes it starts, removed at exit: tests never write to the user's own
 * state directory.
 */
function privateStateDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idforge-node-test-'));
  process.env.IDFORGE_STATE_DIR = dir;
  delete process.env.IDFORGE_STATE;
  delete process.env.IDFORGE_SHARED;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function load() {
  return require(pkg);
}

/** The first value that occurs twice in `values`, or undefined. */
function firstDuplicate(values) {
  const seen = new Set();
  for (const v of values) {
    if (seen.has(v)) return v;
    seen.add(v);
  }
  return undefined;
}

/** Whether `values` strictly increase (strings compare by code unit, bigints by value). */
function increasing(values) {
  for (let i = 1; i < values.length; i++) if (!(values[i - 1] < values[i])) return false;
  return true;
}

module.exports = { pkg, privateStateDir, load, firstDuplicate, increasing };
