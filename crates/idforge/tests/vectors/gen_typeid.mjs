// Writes typeid.json: TypeID vectors from typeid-js (npm `typeid-js`, jetify's official
// TypeScript implementation of the TypeID spec).
//
//   mkdir /tmp/t && cd /tmp/t && npm install typeid-js@1.2.0
//   cp gen_typeid.mjs /tmp/t && node /tmp/t/gen_typeid.mjs > typeid.json
//
// Deterministic: the UUIDs come from a seeded PRNG (any version: the spec decodes them all;
// every fourth one given version 7 and variant 10), under prefixes of every shape the spec
// allows; the reference encodes each UUID with its prefix and parses the text back. Then a case
// of our own for each case of the spec's valid.yml and invalid.yml (`spec_case` names it). The
// invalid texts are kept with the reference's error; the script stops if the reference accepts
// one.
import { TypeID } from "typeid-js";
import { readFileSync } from "fs";
import { dirname, join } from "path";
import { createRequire } from "module";

// The package's exports do not include package.json: read it beside its entry point.
const entry = createRequire(import.meta.url).resolve("typeid-js");
const version = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"))).version;

let seed = 20261126n;
function nextByte() {
  seed = (seed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  return Number(seed >> 56n);
}

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const uuidText = (bytes) => {
  const h = hex(bytes);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

const prefixes = [
  "", "a", "user", "my_type", "a_b_c", "my__type", "z",
  "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", // 63 characters
];

const raw = [new Array(16).fill(0), new Array(16).fill(0xff)];
for (let i = 0; i < 198; i++) {
  const b = Array.from({ length: 16 }, nextByte);
  if (i % 4 === 0) {
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
  }
  raw.push(b);
}

const valid = raw.map((bytes, i) => {
  const prefix = prefixes[i % prefixes.length];
  const uuid = uuidText(bytes);
  const id = TypeID.fromUUID(prefix, uuid);
  const text = id.toString();
  const back = TypeID.fromString(text);
  // toUUIDBytes, not toUUID: the `uuid` package's stringify refuses bytes that are not an RFC
  // UUID of versions 1-8 with variant 10 (or nil or max), which the spec still encodes.
  if (hex(back.toUUIDBytes()) !== hex(bytes) || back.getType() !== prefix || back.toString() !== text) {
    throw new Error(text);
  }
  return { text, prefix, uuid };
});

// One case of our own for each case of the spec's valid.yml and invalid.yml (jetify-com/typeid,
// spec/, version 0.3.0), named after it and breaking (or keeping) the same rule; the reference
// decodes each valid text and refuses each invalid one.
const specValid = [
  ["nil", "00000000000000000000000000"],
  ["one", "00000000000000000000000001"],
  ["ten", "0000000000000000000000000a"],
  ["sixteen", "0000000000000000000000000g"],
  ["thirty-two", "00000000000000000000000010"],
  ["max-valid", "7zzzzzzzzzzzzzzzzzzzzzzzzz"],
  ["valid-alphabet", "alphabet_0123456789abcdefghjkmnpqrs"],
  ["valid-alphabet", "alphabet_7tvwxyz0123456789abcdefghj"],
  // A UUIDv7 (the OpenAPI document's example id), with a plain prefix and one with underscores.
  ["valid-uuidv7", TypeID.fromUUID("order", "0193578d-5c2e-7cc2-8f4a-3c1d2b0a9e11").toString()],
  ["prefix-underscore", TypeID.fromUUID("order_line_item", "0193578d-5c2e-7cc2-8f4a-3c1d2b0a9e11").toString()],
];
for (const [spec_case, text] of specValid) {
  const id = TypeID.fromString(text);
  if (id.toString() !== text) throw new Error(text);
  const bytes = id.toUUIDBytes();
  valid.push({ text, prefix: id.getType(), uuid: uuidText(bytes), spec_case });
}

const invalid = [];
for (const [spec_case, text] of [
  ["prefix-uppercase", "User_01h455vb4pex5vsknk084sn02q"],
  ["prefix-numeric", "us3r_01h455vb4pex5vsknk084sn02q"],
  ["prefix-numeric", "123_01h455vb4pex5vsknk084sn02q"],
  ["prefix-period", "us.er_01h455vb4pex5vsknk084sn02q"],
  ["prefix-non-ascii", "usér_01h455vb4pex5vsknk084sn02q"],
  ["prefix-spaces", " user_01h455vb4pex5vsknk084sn02q"],
  ["prefix-64-chars", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl_01h455vb4pex5vsknk084sn02q"],
  ["separator-empty-prefix", "_01h455vb4pex5vsknk084sn02q"],
  ["separator-empty", "_"],
  ["suffix-short", "user_01h455vb4pex5vsknk084sn02"],
  ["suffix-long", "user_01h455vb4pex5vsknk084sn02qq"],
  ["suffix-spaces", "user_01h455vb4pex5vsknk084sn02 "],
  ["suffix-spaces", "user_01h455vb4pex5vsknk084sn02q "],
  ["suffix-uppercase", "user_01H455VB4PEX5VSKNK084SN02Q"],
  ["suffix-uppercase", "01H455VB4PEX5VSKNK084SN02Q"],
  ["suffix-hyphens", "user_01h455vb4-ex5vsknk084sn02q"],
  ["suffix-wrong-alphabet", "user_01h455vb4pex5vsknk084sn0uq"],
  ["suffix-ambiguous-crockford", "user_01h455vb4pex5vsknk084sn0iq"],
  ["suffix-ambiguous-crockford", "user_01h455vb4pex5vsknk084sn0lq"],
  ["suffix-ambiguous-crockford", "user_01h455vb4pex5vsknk084sn0oq"],
  ["suffix-hyphens-crockford", "user_01h455vb-4pex5vsk-nk084sn02q"],
  ["suffix-overflow", "user_81h455vb4pex5vsknk084sn02q"],
  ["suffix-overflow", "8zzzzzzzzzzzzzzzzzzzzzzzzz"],
  ["prefix-underscore-start", "_user_01h455vb4pex5vsknk084sn02q"],
  ["prefix-underscore-end", "user__01h455vb4pex5vsknk084sn02q"],
  ["empty", ""],
  ["prefix-empty", "user_"],
  [null, "user-01h455vb4pex5vsknk084sn02q"],
]) {
  let accepted = false;
  try {
    TypeID.fromString(text);
    accepted = true;
  } catch (e) {
    invalid.push({ text, spec_case, reference_error: String(e.message ?? e) });
  }
  if (accepted) throw new Error(`the reference accepts ${JSON.stringify(text)}`);
}

console.log(JSON.stringify({
  source: `typeid-js ${version} (npm, jetify's reference), generated by crates/idforge/tests/vectors/gen_typeid.mjs`,
  valid,
  invalid,
}, null, 1));
