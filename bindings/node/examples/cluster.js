'use strict';
// An HTTP server on every core with node:cluster (PM2's cluster mode runs the same way): each
// worker answers with ids from the host-wide sequence, so no two workers ever hand out the same
// id, and each worker's ids increase.
//
//   node examples/cluster.js          then: curl localhost:3000
const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');
const idforge = require('idforge');

if (cluster.isPrimary) {
  const workers = Math.min(os.availableParallelism(), 4);
  for (let i = 0; i < workers; i++) cluster.fork();
  console.log(`${workers} workers on http://localhost:3000`);
} else {
  // Each worker opens its own generators on first use; they share one state file per scheme
  // (in ~/.local/state/idforge, or $IDFORGE_STATE_DIR).
  const orders = new idforge.Generator('snowflake', { node: 1 });
  http
    .createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ request: idforge.uuid7(), order: orders.next().toString(), worker: process.pid }));
    })
    .listen(3000);
}
