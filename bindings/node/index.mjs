// The ES module entry point: the same module as `require('idforge')` (one addon, one set of
// generators per process), with named exports.
import idforge from './index.js';

export const {
  uuid7,
  uuid7Buffer,
  uuid4,
  ulid,
  typeid,
  nanots,
  uprotocol,
  locality,
  inspect,
  Generator,
  schemes,
  version,
  IdforgeError,
  ConfigError,
  UnknownSchemeError,
  NodeError,
  ParseError,
  ClockError,
  ClockBehindError,
  StateFileError,
  StateFileRefusedError,
  StateFileLostError,
  LeaseLostError,
} = idforge;

export default idforge;
