//! `ksuid`: Segment's K-Sortable Unique IDentifier (the reference implementation and its
//! README, <https://github.com/segmentio/ksuid>), on idforge's sequencer.
//!
//! ```text
//!  timestamp(32) | payload(128) = counter(32) | random(96)     20 bytes; 27 base62 characters
//! ```
//!
//! As the reference defines it: 20 bytes, a 4-byte big-endian count of seconds since the KSUID
//! epoch 1400000000 (2014-05-13T16:53:20Z; it runs out in 2150) and a 16-byte payload; text is
//! the 20 bytes read as one big-endian number written in base62 with the alphabet
//! `0-9A-Za-z` (in ASCII order, so text sorts like the bytes), left-padded with `0` to 27
//! characters. KSUIDs are ordered by their bytes (`ksuid.Compare`), so by time first. Parsing
//! follows the reference's `ksuid.Parse`: exactly 27 characters (else "Valid encoded KSUIDs are
//! 27 characters"), and a value that does not fit 20 bytes, that is above
//! `aWgEPTl1tmebfsQzFP4bxwgy80V`, is refused. Characters outside `0-9A-Za-z` are refused too,
//! as the README's "alphanumeric base62" says and the Python `svix-ksuid` and the npm `ksuid`
//! packages do; the Go reference's decoder does not check them (it maps any byte to some digit
//! value), so a few such texts it accepts are refused here. Case matters: `a` and `A` are
//! different digits.
//!
//! **What idforge changes, and what it guarantees.** The reference fills the whole payload with
//! random bytes, so KSUIDs are unique by chance and unordered within a second. 160 bits do not
//! fit idforge's 128-bit sequencer path, so a KSUID is made in two steps: the sequencer issues
//! a 128-bit value of the layout [`layout`] (`seconds(32) | counter(32) | random(64)`, one tick
//! a second, the counter from 0 in each second, 64 fresh random bits), whose 16 bytes are the
//! KSUID's timestamp and the first 12 bytes of its payload; 4 more random bytes from the same
//! per-thread secure generator end the payload ([`Ksuid::from_generated`]). The counter in the
//! payload's top 32 bits makes KSUIDs unique by construction and increasing per generator, across
//! the threads of a process and across the processes of a host that share a state file
//! (`idforge gen ksuid --shared`, `Generator::host_wide`), 4,294,967,296 per second; 96 bits of
//! the payload stay random. KSUID has no node field: ids of two hosts differ by their random
//! bits only, as the reference's do.
//!
//! ```
//! use idforge::schemes::ksuid::{self, Ksuid};
//! // The reference README's `ksuid -f inspect 0ujtsYcgvSTl8PAuAdqWYSMnLOv`.
//! let k: Ksuid = "0ujtsYcgvSTl8PAuAdqWYSMnLOv".parse()?;
//! assert_eq!(k.timestamp(), 107_608_047);
//! assert_eq!(k.unix_seconds(), 1_507_608_047); // 2017-10-10T04:00:47Z
//! assert_eq!(k.to_string(), "0ujtsYcgvSTl8PAuAdqWYSMnLOv");
//! assert_eq!(Ksuid::MAX.to_string(), "aWgEPTl1tmebfsQzFP4bxwgy80V");
//! assert!("aWgEPTl1tmebfsQzFP4bxwgy80W".parse::<Ksuid>().is_err()); // above the largest
//! let (a, b) = (ksuid::ksuid()?, ksuid::ksuid()?);
//! assert!(b > a && b.to_string() > a.to_string());
//! # Ok::<(), idforge::Error>(())
//! ```

use std::sync::OnceLock;

use crate::error::{malformed, Error};
use crate::generator::{random_u32, Generator, RandomSource};
use crate::layout::{Field, Layout};
use crate::schemes::Scheme;

/// The KSUID epoch, in Unix seconds (2014-05-13T16:53:20Z).
pub const EPOCH_SECONDS: u64 = 1_400_000_000;
/// Width of the seconds field.
pub const TIME_BITS: u32 = 32;
/// Width of the sequencer's counter, the top of the payload.
pub const COUNTER_BITS: u32 = 32;
/// Random bits of the sequencer's 128-bit value (the payload has 32 more: [`TAIL_BITS`]).
pub const RANDOM_BITS: u32 = 64;
/// Random bits drawn when the 128-bit value becomes a KSUID.
pub const TAIL_BITS: u32 = 32;
/// Bytes of a KSUID.
pub const BYTES: usize = 20;
/// Characters of KSUID text.
pub const TEXT_LEN: usize = 27;
/// The text of the largest KSUID (20 bytes of 0xff).
pub const MAX_TEXT: &str = "aWgEPTl1tmebfsQzFP4bxwgy80V";
/// The layout's diagram, most significant bit first (`idforge schemes`).
pub const DIAGRAM: &str = "seconds(32) | counter(32) | random(96)";

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The 128 bits the sequencer issues: the timestamp and the first 12 payload bytes.
pub fn layout() -> Layout {
    Layout::builder("ksuid", 128)
        .time(Field::at(128 - TIME_BITS, TIME_BITS))
        .counter(Field::at(RANDOM_BITS, COUNTER_BITS))
        .random(Field::at(0, RANDOM_BITS))
        .tick_ns(1_000_000_000)
        .epoch_ns(EPOCH_SECONDS * 1_000_000_000)
        .build()
        .unwrap_or_else(|e| unreachable!("the ksuid preset is valid: {e}"))
}

/// A KSUID: 20 bytes, ordered as the reference's `Compare` orders them (by bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ksuid(pub [u8; BYTES]);

impl Ksuid {
    /// The reference's `Nil`: 20 zero bytes, `000000000000000000000000000`.
    pub const NIL: Ksuid = Ksuid([0; BYTES]);
    /// The reference's `Max`: 20 bytes of 0xff, `aWgEPTl1tmebfsQzFP4bxwgy80V`.
    pub const MAX: Ksuid = Ksuid([0xff; BYTES]);

    /// From the reference's parts: the raw timestamp (seconds since [`EPOCH_SECONDS`]) and the
    /// payload.
    pub fn from_parts(timestamp: u32, payload: [u8; 16]) -> Ksuid {
        let mut b = [0u8; BYTES];
        b[..4].copy_from_slice(&timestamp.to_be_bytes());
        b[4..].copy_from_slice(&payload);
        Ksuid(b)
    }

    /// A KSUID from a 128-bit value of [`layout`] (the sequencer's) and the 32 bits that end
    /// the payload.
    pub fn from_generated(id: u128, tail: u32) -> Ksuid {
        let mut b = [0u8; BYTES];
        b[..16].copy_from_slice(&id.to_be_bytes());
        b[16..].copy_from_slice(&tail.to_be_bytes());
        Ksuid(b)
    }

    /// A KSUID from a 128-bit value of [`layout`], the payload ended by 32 bits of the calling
    /// thread's secure generator.
    ///
    /// ```
    /// use idforge::{schemes::ksuid::Ksuid, Generator, Scheme};
    /// let g = Generator::new(&Scheme::Ksuid, None)?;
    /// let id = g.next()?;
    /// let k = Ksuid::from_id(id);
    /// assert_eq!(k.as_bytes()[..16], id.to_be_bytes());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn from_id(id: u128) -> Ksuid {
        Ksuid::from_generated(id, random_u32(RandomSource::Secure))
    }

    /// The 20 bytes.
    pub fn as_bytes(&self) -> &[u8; BYTES] {
        &self.0
    }

    /// From the 20 bytes.
    pub fn from_bytes(b: [u8; BYTES]) -> Ksuid {
        Ksuid(b)
    }

    /// The raw timestamp: seconds since the KSUID epoch (the reference's `Timestamp()`).
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]])
    }

    /// The time: Unix seconds (the reference's `Time()`).
    pub fn unix_seconds(&self) -> u64 {
        u64::from(self.timestamp()) + EPOCH_SECONDS
    }

    /// The 16-byte payload (the reference's `Payload()`).
    pub fn payload(&self) -> [u8; 16] {
        let mut p = [0u8; 16];
        p.copy_from_slice(&self.0[4..]);
        p
    }

    /// The payload as a number.
    pub fn payload_u128(&self) -> u128 {
        u128::from_be_bytes(self.payload())
    }

    /// The text: 27 base62 characters, on the stack.
    pub fn encode(&self) -> KsuidText {
        // Five 32-bit words, most significant first, divided by 62^5 at a time (a constant the
        // compiler turns into a multiplication: the remainder times 2^32 plus a word fits 64
        // bits); each remainder gives five digits, two at a time from a table. Six rounds write
        // 30 digits, of which a value below 2^160 < 62^27 leaves the first three `0`.
        const CHUNK: u64 = 62u64.pow(5);
        let mut w = [0u32; 5];
        for (i, c) in self.0.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        let mut out = [b'0'; 30];
        let mut start = 0;
        for round in 0..6 {
            if start == 5 {
                break;
            }
            let mut rem = 0u64;
            for word in w.iter_mut().skip(start) {
                let acc = rem << 32 | u64::from(*word);
                *word = (acc / CHUNK) as u32;
                rem = acc % CHUNK;
            }
            let r = rem as u32;
            let (lo, r) = (r % 3844, r / 3844);
            let (mid, top) = (r % 3844, r / 3844);
            let at = 30 - 5 * (round + 1);
            out[at] = ALPHABET[top as usize];
            out[at + 1..at + 3].copy_from_slice(&PAIRS[mid as usize]);
            out[at + 3..at + 5].copy_from_slice(&PAIRS[lo as usize]);
            while start < 5 && w[start] == 0 {
                start += 1;
            }
        }
        let mut text = [0u8; TEXT_LEN];
        text.copy_from_slice(&out[30 - TEXT_LEN..]);
        KsuidText(text)
    }
}

/// The two base62 digits of every number below 62^2.
const PAIRS: [[u8; 2]; 3844] = {
    let mut t = [[0u8; 2]; 3844];
    let mut i = 0;
    while i < 3844 {
        t[i] = [ALPHABET[i / 62], ALPHABET[i % 62]];
        i += 1;
    }
    t
};

/// KSUID text on the stack ([`Ksuid::encode`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KsuidText([u8; TEXT_LEN]);

impl KsuidText {
    /// The text.
    pub fn as_str(&self) -> &str {
        // Only alphabet bytes are written.
        std::str::from_utf8(&self.0).unwrap_or_else(|_| unreachable!("base62 is ASCII"))
    }
    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Display for KsuidText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for KsuidText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for Ksuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.encode().as_str())
    }
}

impl std::str::FromStr for Ksuid {
    type Err = Error;
    fn from_str(s: &str) -> Result<Ksuid, Error> {
        parse(s)
    }
}

/// The value of a base62 digit.
const fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'Z' => Some(c - b'A' + 10),
        b'a'..=b'z' => Some(c - b'a' + 36),
        _ => None,
    }
}

/// Base62 digit values, 0xFF for other bytes.
static DIGITS: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut c = 0;
    while c < 256 {
        if let Some(d) = digit(c as u8) {
            t[c] = d;
        }
        c += 1;
    }
    t
};

/// Valid KSUID text read nine digits at a time (62^9 < 2^64) into three words, as its
/// timestamp (seconds since the KSUID epoch) and payload, or `None` (then [`parse`] says what
/// is wrong). The parts come from registers: a `Ksuid`'s bytes, stored and read back in other
/// widths, stall store forwarding.
pub(crate) fn parse_fast_parts(s: &str) -> Option<(u32, u128)> {
    const M: u128 = 62u128.pow(9);
    let b = s.as_bytes();
    if b.len() != TEXT_LEN {
        return None;
    }
    // Each run of nine as the sum of its digits times their powers of 62 (independent
    // products, not nine multiply-adds in a chain).
    const POW: [u64; 9] = {
        let mut p = [1u64; 9];
        let mut i = 8;
        while i > 0 {
            p[i - 1] = p[i] * 62;
            i -= 1;
        }
        p
    };
    let mut bad = 0u8;
    let mut chunk = |run: &[u8]| {
        run.iter().zip(POW).fold(0u64, |acc, (&c, p)| {
            let d = DIGITS[usize::from(c)];
            bad |= d;
            acc + u64::from(d & 0x3F) * p
        })
    };
    let (c0, c1, c2) = (chunk(&b[..9]), chunk(&b[9..18]), chunk(&b[18..]));
    if bad & 0xC0 != 0 {
        return None;
    }
    // (c0 * M + c1) * M + c2 in 192 bits: a * M as two 64-bit halves of a times M.
    let a = u128::from(c0) * M + u128::from(c1);
    let lo = (a & u128::from(u64::MAX)) * M + u128::from(c2);
    let hi = (a >> 64) * M + (lo >> 64);
    // The value is hi * 2^64 + (lo mod 2^64); it must fit 160 bits.
    if hi >> 96 != 0 {
        return None;
    }
    // hi holds the top 96 bits: the timestamp and the payload's upper half.
    Some((
        (hi >> 64) as u32,
        (hi as u64 as u128) << 64 | (lo as u64 as u128),
    ))
}

/// Whether text has the shape of KSUID text: 27 characters of the base62 alphabet, not all
/// digits (a decimal integer is read as one).
pub fn looks_like_ksuid(t: &str) -> bool {
    // Counts, not `all`: no early exit, so the 27 bytes are a few vector compares.
    let b = t.as_bytes();
    b.len() == TEXT_LEN
        && b.iter().filter(|c| c.is_ascii_alphanumeric()).count() == TEXT_LEN
        && b.iter().filter(|c| c.is_ascii_digit()).count() != TEXT_LEN
}

/// Parses KSUID text as the reference's `ksuid.Parse` does (the text as given, not trimmed).
///
/// # Errors
/// [`Error::MalformedId`] naming the length, the character outside the alphabet, or the value
/// above the largest KSUID.
pub fn parse(s: &str) -> Result<Ksuid, Error> {
    let b = s.as_bytes();
    if b.len() != TEXT_LEN {
        let n = s.chars().count();
        return Err(malformed(
            s,
            if n == TEXT_LEN {
                format!("KSUID text has {TEXT_LEN} base62 characters, which are ASCII: these take {} bytes", b.len())
            } else {
                format!("KSUID text has {TEXT_LEN} base62 characters, not {n}")
            },
        ));
    }
    let mut w = [0u32; 5];
    for &c in b {
        let Some(d) = digit(c) else {
            let ch = s[s.bytes().position(|x| x == c).unwrap_or(0)..]
                .chars()
                .next()
                .unwrap_or('?');
            return Err(malformed(
                s,
                format!("character {ch:?} is not base62 (0-9, A-Z, a-z)"),
            ));
        };
        // w = w * 62 + d over five words, least significant last.
        let mut carry = u64::from(d);
        for word in w.iter_mut().rev() {
            let acc = u64::from(*word) * 62 + carry;
            *word = acc as u32;
            carry = acc >> 32;
        }
        if carry != 0 {
            return Err(malformed(
                s,
                format!(
                    "the value is above the largest KSUID, {MAX_TEXT} (it does not fit 20 bytes)"
                ),
            ));
        }
    }
    let mut out = [0u8; BYTES];
    for (i, word) in w.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    Ok(Ksuid(out))
}

/// A KSUID from the process-wide generator (in-process stamp; for KSUIDs unique across the
/// processes of a host, open `ksuid` with a state file, `Generator::host_wide`, and make each
/// with [`Ksuid::from_id`]).
///
/// # Errors
/// As [`crate::uuid7()`]: a shared page that cannot be mapped on first use, the clock stepped
/// back by more than a second, the time field run out (2150).
pub fn ksuid() -> Result<Ksuid, Error> {
    static GEN: OnceLock<Generator> = OnceLock::new();
    let g = match GEN.get() {
        Some(g) => g,
        None => {
            let g = Generator::new(&Scheme::Ksuid, None)?;
            GEN.get_or_init(|| g)
        }
    };
    g.next().map(Ksuid::from_id)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_shape_check_agrees_with_a_byte_by_byte_one() {
        let alphabet = b"09azAZ_-.\x00\x7f\xc3";
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = if x % 4 == 0 {
                (x >> 8) as usize % 30
            } else {
                super::TEXT_LEN
            };
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let y = x.rotate_left(i as u32 * 5);
                    match y % 16 {
                        0 => alphabet[(y >> 8) as usize % alphabet.len()],
                        1..=9 => b'0' + (y >> 8) as u8 % 10,
                        _ => b'a' + (y >> 8) as u8 % 26,
                    }
                })
                .collect();
            let Ok(t) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let slow = t.len() == super::TEXT_LEN
                && t.bytes().all(|c| c.is_ascii_alphanumeric())
                && !t.bytes().all(|c| c.is_ascii_digit());
            assert_eq!(super::looks_like_ksuid(t), slow, "{t:?}");
        }
        assert!(!super::looks_like_ksuid(&"1".repeat(27)));
        assert!(super::looks_like_ksuid(&format!("{}a", "1".repeat(26))));
    }

    #[test]
    fn the_fast_reading_agrees_with_parse() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let mut texts = vec![
            MAX_TEXT.to_string(),
            "000000000000000000000000000".into(),
            "aWgEPTl1tmebfsQzFP4bxwgy80W".into(), // above the largest
            "zzzzzzzzzzzzzzzzzzzzzzzzzzz".into(),
            "0ujtsYcgvSTl8PAuAdqWYSMnLO*".into(),
            "0ujtsYcgvSTl8PAuAdqWYSMnLO".into(),
        ];
        for _ in 0..2000 {
            let mut b = [0u8; BYTES];
            for byte in &mut b {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            texts.push(Ksuid::from_bytes(b).to_string());
        }
        for t in &texts {
            let parsed = parse(t).ok();
            assert_eq!(
                parse_fast_parts(t),
                parsed.map(|k| (k.timestamp(), k.payload_u128())),
                "{t}"
            );
            if let Some((timestamp, payload)) = parse_fast_parts(t) {
                assert_eq!(
                    Ksuid::from_parts(timestamp, payload.to_be_bytes())
                        .encode()
                        .as_str(),
                    t
                );
            }
        }
    }
    use super::*;

    #[test]
    fn readme_examples_and_limits() {
        // The reference README's inspect example: Raw 0669F7EFB5A1CD34B5F99D1154FB6853345C9735.
        let k: Ksuid = "0ujtsYcgvSTl8PAuAdqWYSMnLOv".parse().unwrap();
        assert_eq!(
            k.0,
            [
                0x06, 0x69, 0xF7, 0xEF, 0xB5, 0xA1, 0xCD, 0x34, 0xB5, 0xF9, 0x9D, 0x11, 0x54, 0xFB,
                0x68, 0x53, 0x34, 0x5C, 0x97, 0x35
            ]
        );
        assert_eq!(Ksuid::NIL.to_string(), "000000000000000000000000000");
        assert_eq!(MAX_TEXT.parse::<Ksuid>().unwrap(), Ksuid::MAX);
        assert_eq!(layout().end_year(), 2150);
        assert_eq!(layout().ids_per_tick(), 1 << 32);
    }

    #[test]
    fn refusals() {
        for (bad, says) in [
            ("0ujtsYcgvSTl8PAuAdqWYSMnLO", "27 base62 characters, not 26"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLOvv", "not 28"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLO-", "'-' is not base62"),
            ("aWgEPTl1tmebfsQzFP4bxwgy80W", "above the largest KSUID"),
            ("zzzzzzzzzzzzzzzzzzzzzzzzzzz", "above the largest KSUID"),
        ] {
            let e = bad.parse::<Ksuid>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn generated_ksuids_keep_the_counter_in_the_payload() {
        let id: u128 = 0x1234_5678 << 96 | 7 << 64 | 0xdead_beef;
        let k = Ksuid::from_generated(id, 0xabcd_ef01);
        assert_eq!(k.timestamp(), 0x1234_5678);
        assert_eq!(k.payload()[..4], [0, 0, 0, 7]);
        assert_eq!(k.payload()[12..], [0xab, 0xcd, 0xef, 0x01]);
        assert_eq!(k.to_string().parse::<Ksuid>().unwrap(), k);
    }
}
