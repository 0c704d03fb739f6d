#!/usr/bin/env node
'use strict';
// Builds the addon (`cargo build --release`) and copies it next to index.js as
// `idforge.<platform>-<arch>[-gnu|-musl].node`, the name index.js loads.
//
//   node scripts/build.js          for this machine
//   node scripts/build.js --zig    linux-x64, linked against glibc 2.17's symbols with zig, so
//                                  that it loads on any glibc Linux from 2012 on (the build
//                                  that `npm pack` ships); IDFORGE_ZIG names the command that
//                                  runs zig (default `zig`; `python3 -m ziglang` works)
//   node scripts/build.js --debug  a debug build
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const args = new Set(process.argv.slice(2));
for (const a of args) {
  if (!['--zig', '--debug'].includes(a)) {
    console.error(`build.js: unknown argument ${a} (use --zig, --debug)`);
    process.exit(2);
  }
}
const zig = args.has('--zig');
const profile = args.has('--debug') ? 'debug' : 'release';
const target = zig ? 'x86_64-unknown-linux-gnu' : null;
if (zig && (process.platform !== 'linux' || process.arch !== 'x64')) {
  console.error('build.js: --zig builds for linux-x64 only');
  process.exit(2);
}

const env = { ...process.env };
const cargoArgs = ['build', '--manifest-path', path.join(root, 'Cargo.toml')];
if (profile === 'release') cargoArgs.push('--release');
if (target) {
  cargoArgs.push('--target', target);
  env.CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER = path.join(root, 'scripts', 'zig-cc');
}
console.error(`build.js: cargo ${cargoArgs.join(' ')}`);
try {
  execFileSync('cargo', cargoArgs, { stdio: 'inherit', env });
} catch (e) {
  console.error(
    e.code === 'ENOENT'
      ? 'build.js: cargo is not installed: install Rust from https://rustup.rs and run this again'
      : `build.js: cargo failed (${e.status ?? e.message})`,
  );
  process.exit(1);
}

const targetDir = env.CARGO_TARGET_DIR ? path.resolve(env.CARGO_TARGET_DIR) : path.join(root, 'target');
const outDir = path.join(targetDir, ...(target ? [target] : []), profile);
const lib = { linux: 'libidforge_node.so', darwin: 'libidforge_node.dylib', win32: 'idforge_node.dll' }[
  process.platform
];
if (!lib) {
  console.error(`build.js: no known library name for ${process.platform}`);
  process.exit(1);
}
let name;
if (process.platform === 'linux') {
  const glibc = Boolean(process.report.getReport().header.glibcVersionRuntime);
  name = `idforge.linux-${process.arch}-${glibc || zig ? 'gnu' : 'musl'}.node`;
} else {
  name = `idforge.${process.platform}-${process.arch}.node`;
}
fs.copyFileSync(path.join(outDir, lib), path.join(root, name));
console.error(`build.js: ${name} (${fs.statSync(path.join(root, name)).size} bytes)`);
