'use strict';
// idforge against the ids Node.js services use today, measured in one run (these machines are
// shared and noisy: only ratios within a run mean anything). Each case runs in rounds that
// alternate with the others; the table shows the median round's time per id, the best round's,
// and the ratio of medians to the peer it is measured against.
//
//   scripts/node-test --bench    (installs uuid and ulid into a scratch project and runs this)
//   node bench/bench.js          from a project where idforge, uuid and ulid are installed
// IDFORGE_BENCH_ROUNDS sets the rounds (default 15).
const crypto = require('node:crypto');

const ROUNDS = Number(process.env.IDFORGE_BENCH_ROUNDS || 15);

async function main() {
  const idforge = require(process.env.IDFORGE_PACKAGE || 'idforge');
  const uuid = await import('uuid');
  const { monotonicFactory } = await import('ulid');
  const ulidMono = monotonicFactory();
  const sf = new idforge.Generator('snowflake', { node: 1 });
  const u7 = new idforge.Generator('uuid7');
  const ns = new idforge.Generator('nanots');

  let sink = 0;
  const use = (v) => {
    sink ^= typeof v === 'string' ? v.charCodeAt(v.length - 1) : Number(v.length ?? v & 0xffn);
  };
  // [name, ids per call, calls per round, function]
  const cases = [
    ['uuid v7()', 1, 20000, () => use(uuid.v7())],
    ['crypto.randomUUID()', 1, 200000, () => use(crypto.randomUUID())],
    ['uuid v4()', 1, 200000, () => use(uuid.v4())],
    ['ulid monotonicFactory()', 1, 50000, () => use(ulidMono())],
    ['idforge.uuid7()', 1, 200000, () => use(idforge.uuid7())],
    ['idforge.uuid4()', 1, 200000, () => use(idforge.uuid4())],
    ['idforge.ulid()', 1, 200000, () => use(idforge.ulid())],
    ['idforge.nanots() (bigint)', 1, 200000, () => use(idforge.nanots())],
    // Snowflake's layout holds 4,096 ids a millisecond: past that rate it waits (244 ns an id).
    ['Generator(snowflake).next() (bigint; layout-limited)', 1, 20000, () => use(sf.next())],
    ['idforge.uuid7Buffer(1000)', 1000, 200, () => use(idforge.uuid7Buffer(1000))],
    ['Generator(uuid7).takeBuffer(1000)', 1000, 200, () => use(u7.takeBuffer(1000))],
    ['Generator(nanots).takeBigUint64(1000)', 1000, 200, () => use(ns.takeBigUint64(1000))],
    ['Generator(nanots).takeBuffer(1000)', 1000, 200, () => use(ns.takeBuffer(1000))],
  ];
  const times = new Map(cases.map((c) => [c[0], []]));
  for (const [, , calls, f] of cases) for (let i = 0; i < calls / 10; i++) f(); // warm up
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, per, calls, f] of cases) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) f();
      const ns = Number(process.hrtime.bigint() - t0);
      times.get(name).push(ns / (calls * per));
    }
    process.stderr.write(`\rround ${r + 1}/${ROUNDS}`);
  }
  process.stderr.write('\n');
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const med = (name) => median(times.get(name));
  const against = {
    'idforge.uuid7()': ['uuid v7()', 'crypto.randomUUID()'],
    'idforge.uuid4()': ['uuid v4()', 'crypto.randomUUID()'],
    'idforge.ulid()': ['ulid monotonicFactory()'],
  };
  console.log(`Node.js ${process.version}, ${ROUNDS} rounds; ns per id (median round, best round)`);
  console.log('| case | ns/id (median) | best | ratio |');
  console.log('|---|---:|---:|---|');
  for (const [name] of cases) {
    const xs = times.get(name);
    const ratio = (against[name] || []).map((p) => `${(med(name) / med(p)).toFixed(2)}x ${p}`).join(', ');
    console.log(`| ${name} | ${med(name).toFixed(1)} | ${Math.min(...xs).toFixed(1)} | ${ratio} |`);
  }
  if (sink === 0.5) console.log('');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
