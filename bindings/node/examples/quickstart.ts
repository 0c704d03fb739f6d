// The API in TypeScript: scripts/node-test type-checks this file against index.d.ts
// (`tsc --strict`), and runs it.
import { Generator, inspect, nanots, typeid, uuid7, uuid7Buffer, NodeError, type Decoded } from 'idforge';

const id: string = uuid7(); // '019...-7...': time-ordered, unique across the host's processes
const user: string = typeid('user'); // 'user_01...'
const stamp: bigint = nanots(); // Unix nanoseconds, unique on the host

// A Snowflake generator for node 7: 64-bit ids as bigints (never numbers).
const snowflake = new Generator('snowflake', { node: 7 });
const next = snowflake.next();
const batch: BigUint64Array = snowflake.takeBigUint64(1000);
const bytes: Buffer = uuid7Buffer(100); // 100 UUIDv7s, 16 bytes each

const d: Decoded = inspect(id);
const when: Date | null = d.date;

try {
  new Generator('snowflake'); // no node id: refused, never guessed
} catch (e) {
  if (e instanceof NodeError) console.log(`${e.code}: ${e.message}`);
}
console.log(id, user, stamp, next, batch.length, bytes.length, when?.toISOString());
