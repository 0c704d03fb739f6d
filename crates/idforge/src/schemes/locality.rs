//! `locality`: Groupon's Locality UUID, version `b`, whose first characters spread ids over a
//! cluster (variable mode) or gather them on one shard (sequential mode).
//!
//! ```text
//!  wwwwwwww-xxxx-byyy-yyyy-zzzzzzzzzzzz
//!  bytes 0-3    counter (32)          variable mode: nibbles least significant first
//!                                     sequential mode: big-endian
//!  bytes 4-5    process id (16)       big-endian, the pid modulo 65,536
//!  byte  6      version b (4) | MAC byte 2, low nibble (4)
//!  bytes 7-9    MAC bytes 3-5 (24)    together: the last 28 bits of the MAC address
//!  bytes 10-15  Unix milliseconds (48), big-endian, UTC
//! ```
//!
//! This implements *Locality UUID (vB)* by Peter Bakkum and Michael Craig at Groupon, as described
//! in the README of its Java and Ruby libraries (`groupon/locality-uuid.java`, `.rb`), byte for
//! byte. The article's example decodes as it says:
//!
//! ```
//! use idforge::schemes::locality::LocalityUuid;
//! let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
//! assert_eq!(id.counter_reversed()?, 3_488_672_514);
//! assert_eq!(id.pid()?, 12_618);
//! assert_eq!(format!("{:07x}", id.mac()?), "d537a50");
//! assert_eq!(id.unix_ms()?, 1_350_327_498_450); // 2012-10-15T18:58:18.450Z
//! # Ok::<(), idforge::Error>(())
//! ```
//!
//! # The counter and its two modes
//!
//! **Variable mode** (the default): the counter starts at a random 32-bit value and every id first
//! adds the prime [`PRIME`] (198,491,317, wrapping modulo 2^32), then uses the new value. The 8 hex
//! characters are its nibbles least significant first, so the *fast-changing* end of the counter
//! comes first in the text. Since `PRIME ≡ 5 (mod 16)` and is odd, the first character of 16
//! consecutive ids takes each of the 16 values exactly once, the first two characters of 256
//! consecutive ids each of the 256 values once, and so on: writes keyed by these ids spread
//! evenly over range-partitioned shards. Stepping by an odd number is a full-period permutation of
//! the 2^32 counter values, so a generator repeats a counter only after 2^32 ids.
//!
//! **Sequential mode**: the counter is seeded from the MD5 of the generator's clock time in UTC as
//! `yyyyMMddHHm` (year, month, day, hour and the *tens digit* of the minute: 11 characters, a new
//! seed every 10 minutes that every machine computes alike), digest bytes 0-3 read
//! little-endian ([`sequential_seed`]); every id adds 1 first and uses the value, written
//! big-endian. Ids made in the same 10 minutes, on any machine, start with the same few
//! characters: their writes land on the same shard.
//!
//! Mode switches, [`LocalityGenerator::use_sequential`] and [`LocalityGenerator::use_variable`]:
//!
//! * the counter's position (a 63-bit count) and the mode live in one `AtomicU64`
//!   (`position << 1 | mode`), so a switch is a single atomic swap, and an id that takes its
//!   position from that word takes its mode with it, from its one `fetch_add` (of 1, in either
//!   mode). In sequential mode the counter is the position; in variable mode it is the position
//!   times [`PRIME`] (both modulo 2^32: `PRIME` is odd, so distinct positions less than 2^32
//!   apart give distinct counters, and the values are exactly those of stepping the counter by
//!   `PRIME`). Threads that share a generator take variable-mode positions in blocks (below);
//! * switching to sequential mode while already in it does nothing; switching from variable mode
//!   reseeds from the current 10-minute bucket (as the original does), except that re-entering
//!   sequential mode within a bucket this generator already seeded continues after the last
//!   sequential value it issued (see "What changed" below);
//! * each mode keeps its own counter: switching to variable mode continues from where variable
//!   mode was left (a switch swaps the state word, so no step taken before it is lost), never
//!   from a value it already stepped past. (Earlier, variable mode continued from the
//!   counter's current value, which re-entering sequential mode had set back: a
//!   variable → sequential → variable round trip with no sequential id in between repeated the
//!   variable ids.)
//!
//! Switches are serialised by a lock in the generator's fork-shared page (so also across a
//! `fork()`); [`LocalityGenerator::next`] never takes it.
//!
//! # Threads: blocks of positions
//!
//! One `fetch_add` of the shared word per id moves that word's cache line between the cores on
//! every id once two threads share the generator: two threads made 0.64–0.77× the ids per second
//! of one (docs/BENCHMARKS.md). So a thread that has seen another take positions of the same
//! generator between two of its own reserves a *block* of 32 to 63 variable-mode positions with
//! one `compare_exchange` of the shared word and issues them itself, reading the word (a load;
//! other threads write it once per block) only to check the mode and that the word has not run
//! 2^31 positions past the block. Two threads then make 1.09–1.19× the ids per second of one,
//! and one thread pays about 1.5 ns more per id.
//!
//! * **Alone, a thread takes one position per id**, as does a thread alternating between
//!   generators (it cannot tell whether another thread took positions in between): each id is
//!   the one before plus `PRIME`, no position is skipped, and [`LocalityGenerator::counter`] is
//!   the last id's counter.
//! * **Sequential mode never takes blocks**: its ids stay consecutive under any number of threads.
//!   A block reserved in variable mode is not used while the generator is in sequential mode, and
//!   is used again after a switch back (variable mode resumes above every position reserved).
//! * **Spread.** Positions a thread gives up unused (it exits, or turns to another generator) are
//!   skipped; which positions are used then follows the pattern of the calls. The block size
//!   varies with a hash of the position where the block starts, so that no pattern of calls
//!   keeps landing on the same partitions: with one fixed size (63), a thread that took a block,
//!   used two of its ids and turned away, over and over, filled half the partitions 1.2× and the
//!   others 0.8×; with the varying size that stays within the 10 % the test allows, and two
//!   threads, alternating generators, thread pools and short-lived threads fill the 16
//!   partitions evenly (tests/locality.rs). This holds for call patterns that do not depend on
//!   the ids: a thread that reads its ids and turns away whenever its block's next id would
//!   start with `0` (the next is the last plus `PRIME`, so it can tell) starves that partition.
//! * **Identity.** A block is tagged with the generator's number (never reused in a process,
//!   unlike an address) and the process's fork generation ([`crate::shm::fork_generation`]): a
//!   forked child never continues a block its parent continues. Blocks are used only where
//!   every fork is counted, including forks made without the `pthread_atfork` handlers (through
//!   a `MADV_WIPEONFORK` page, Linux 4.14 and later); elsewhere each id takes its position from
//!   the shared word.
//! * **Signal handlers.** `next` marks the thread's block busy while it reads and writes it; a
//!   `next` in a signal handler that interrupted it finds the mark and takes its position from
//!   the shared word, leaving the block alone. A handler that forks, with the child returning
//!   into the interrupted `next`, is outside this: that call has its position already (from
//!   the block or from its `fetch_add`), and parent and child both issue it (55 of 332 such
//!   children repeated a parent's id with one thread, no block involved).
//!
//! # Uniqueness
//!
//! Two ids differ if they differ in millisecond, process id, MAC fragment or counter. Every
//! position is handed out once, by a read-modify-write of the shared word (alone, or as part of
//! a block), and positions of one mode less than 2^32 apart have distinct counters. A generator
//! moves through fewer than 2^32 positions per millisecond, so its counter does not repeat
//! within one; an id uses its position within nanoseconds of taking it, or, from a block, only
//! while the shared word is less than 2^31 positions past it. On a frozen clock
//! ([`ManualClock`](crate::ManualClock), `--at`) a thread alone, or alternating generators,
//! repeats an id after 2^32 ids; threads sharing a generator can repeat one after about 2^31:
//! a thread may still issue a position of its block while the state word is up to 2^31 positions
//! past it, and the state word reaches that position's counter again 2^32 positions after the
//! position, so only 2^31 + 2 positions after that late id (fewer ids still where blocks were
//! given up, whose positions are skipped). The
//! argument holds for processes only if **no two processes share both a pid (mod 65,536) and the
//! last 28 bits of a MAC address**, and within a process only for **one generator**: two
//! generators with the same pid and MAC fragment can issue the same id in the same millisecond (in
//! sequential mode they certainly will). Use [`shared`] for the process-wide one.
//! Sequential and variable values are different encodings of different counter values; an id of
//! one mode equals an id of the other only if, in the same millisecond, one counter value is the
//! nibble-reversal of the other (about one chance in 2^32 per pair). Per pair is what counts: a
//! millisecond with thousands of ids of each mode holds millions of pairs, so a program that
//! switches modes while other threads issue does see such repeats, a few per million ids when it
//! switches every few thousand ids (measured: 6 and 7 in 3,000,010 ids of a parent and two
//! children switching every 20,000 ids; 0 or 1 in 4,000,400 ids of 4 threads beside 200
//! switches). Within one mode no id repeats. Do not switch modes on a generator that must never
//! repeat an id while it is in use.
//!
//! # Fork
//!
//! A generator's counter, mode and switch state live in one page of `MAP_SHARED` anonymous memory
//! ([`SharedWords`]): a child `fork()`ed after the generator was built (a prefork server) shares
//! them with its parent instead of copying them. Parent and children then take counter values
//! from one sequence and never repeat each other's ids in a millisecond, whether the pid field
//! is the default (the parent's pid, kept in the child's ids) or set explicitly (`.pid(N)`,
//! `--pid`), and through [`shared`] as well. A generator built in the child after the fork is a
//! new generator with the child's pid. Two processes that did not fork from one generator share
//! nothing: they need distinct pid or MAC fragments, as below.
//!
//! # Decoding the counter
//!
//! An id does not record its mode. [`LocalityUuid::counter_reversed`] reads the counter as
//! variable mode wrote it (the default mode, and how the article decodes its example);
//! [`LocalityUuid::counter_sequential`] reads the first 8 characters as one big-endian number, as
//! sequential mode wrote it. `idforge inspect` reports the first.
//!
//! # What changed from the original, and why
//!
//! * **The Java bug.** The Java library writes the counter's two top nibbles with
//!   `(count & 0xF0000000) >> 28`, an arithmetic shift: when the counter's top bit is set (a
//!   negative `int`) the sign bits fill hex character 6 with `f`, whatever that counter nibble was.
//!   Half of all variable-mode ids from Java show `f` there (the article's examples `c8c9cef9`,
//!   `14951cfa`, ... all do). This module writes the true nibble. Old Java ids still parse; their
//!   [`counter_reversed`](LocalityUuid::counter_reversed) is off in that nibble, which matters to
//!   no one since the counter is not meant to be read back.
//! * **No silent modulo.** The default pid is `std::process::id()` modulo 65,536, as the format
//!   says. A pid or MAC fragment given explicitly that does not fit is refused
//!   ([`Error::PidOutOfRange`], [`Error::MacFragmentOutOfRange`]) rather than wrapped: wrapping
//!   would quietly make two processes alike.
//! * **No repeats on re-entering sequential mode.** The original resets the counter to the seed
//!   on every switch into sequential mode, so sequential → variable → sequential within one
//!   millisecond issues `seed + 1` again at the same time: a duplicate. Here a generator
//!   re-entering sequential mode in a 10-minute bucket it already seeded continues after the last
//!   sequential value it issued; in a new bucket it reseeds, as the original does.
//! * **A generator, not a process-wide flag.** The Java mode is a plain `static boolean` shared by
//!   the process (and read without synchronisation). Here mode and counter belong to a
//!   [`LocalityGenerator`]; [`shared`] is the process-wide one.
//! * **Deterministic MAC choice.** The default MAC is the first interface, by name, in
//!   `/sys/class/net` with a non-zero address, preferring interfaces backed by a device (real
//!   hardware) over virtual ones; zeros if none (or not on Linux).
//!
//! # When you must set the pid and MAC
//!
//! The uniqueness argument assumes each machine has its own MAC suffix and each process its own
//! pid. Containers break both, silently:
//!
//! * every container's main process is often **PID 1** (or another small number), so all replicas
//!   of a service write the same pid;
//! * container network interfaces get **generated MAC addresses**: Docker's classic scheme derives
//!   them from the container's IP, and the first container on each host's default bridge is
//!   `172.17.0.2`, hence `02:42:ac:11:00:02` on every host. With PID 1, replicas on different hosts
//!   write identical pid and MAC fields; other runtimes pick random addresses, which only makes a
//!   clash unlikely;
//! * Linux allows pids above 65,535 (`kernel.pid_max` is 4,194,304 on many distributions), so
//!   processes on one host can share a pid modulo 65,536.
//!
//! Two replicas with equal pid and MAC fragment issue colliding ids whenever their counters meet in
//! the same millisecond: in sequential mode, which seeds every machine alike, that is immediate.
//! So in containers, or anywhere pids and MACs are not unique across the id space, assign each
//! process a distinct (pid, MAC fragment) pair from your deployment (an ordinal of a StatefulSet,
//! a slot from a coordinator) with [`LocalityBuilder::pid`] and [`LocalityBuilder::mac_fragment`]
//! (on the command line: `--pid`, `--mac` or `IDFORGE_PID`, `IDFORGE_MAC`). That gives 2^44
//! distinct generators.

use std::cell::Cell;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::OnceLock;

use md5::{Digest, Md5};

use crate::clock::{Clock, SystemClock};
use crate::error::{clip, malformed, Error};
use crate::shm::SharedWords;
use crate::text::{self, Format};
use crate::time::{format_unix_ns, year_of_unix_ns};

/// The scheme's name, as `idforge` spells it.
pub const NAME: &str = "locality";
/// The UUID version nibble: `b`.
pub const VERSION: u8 = 0xb;
/// The step of the variable-mode counter: a prime (odd, so stepping visits all 2^32 values).
pub const PRIME: u32 = 198_491_317;
/// The inverse of [`PRIME`] modulo 2^32: a variable-mode counter `c` sits at position
/// `c * PRIME_INVERSE` (Newton's iteration, each step doubling the bits that are right).
const PRIME_INVERSE: u32 = {
    let mut inv = PRIME;
    let mut i = 0;
    while i < 5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(PRIME.wrapping_mul(inv)));
        i += 1;
    }
    inv
};
const _: () = assert!(PRIME.wrapping_mul(PRIME_INVERSE) == 1);

/// The counter at position `position` of the state word in `mode`.
#[inline]
fn counter_at(position: u32, mode: CounterMode) -> u32 {
    match mode {
        CounterMode::Variable => position.wrapping_mul(PRIME),
        CounterMode::Sequential => position,
    }
}
/// Width of the MAC fragment: the low nibble of MAC byte 2 and bytes 3 to 5.
pub const MAC_BITS: u32 = 28;
/// The largest MAC fragment.
pub const MAX_MAC_FRAGMENT: u32 = (1 << MAC_BITS) - 1;
/// The largest process id the 16-bit field holds.
pub const MAX_PID: u16 = u16::MAX;
/// Width of the millisecond timestamp; it runs out in the year 10889.
pub const TIME_BITS: u32 = 48;
/// Length of a sequential-mode seed bucket: 10 minutes, in milliseconds.
pub const BUCKET_MS: u64 = 600_000;

const MS_MASK: u128 = (1 << TIME_BITS) - 1;
/// Mode bit in the generator's state word; the counter's *position*, a 63-bit count, sits in the
/// bits above it, so adding `n << POSITION_SHIFT` moves the position and never touches the mode.
/// The counter is the position's low 32 bits through [`counter_at`]; the high bits tell a
/// position from the one 2^32 before it, which a thread's block needs (see [`LAP_LIMIT`]).
const SEQUENTIAL_BIT: u64 = 1;
const POSITION_SHIFT: u32 = 1;
/// The fewest variable-mode positions a thread reserves at a time, once it has seen another
/// thread take positions of the same generator; [`block_size`] picks 32 to 63.
const BLOCK_MIN: u64 = 32;
/// A thread issues a position of its block only while the state word is less than this many
/// positions past it: a block left unused while other threads took 2^32 positions would hold
/// counter values they issue again.
const LAP_LIMIT: u64 = 1 << 31;

/// How a generator steps and writes its counter.
///
/// ```
/// use idforge::schemes::locality::{CounterMode, LocalityGenerator};
/// let g = LocalityGenerator::builder().build()?;
/// assert_eq!(g.mode(), CounterMode::Variable); // the default
/// g.use_sequential();
/// assert_eq!(g.mode(), CounterMode::Sequential);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CounterMode {
    /// Add [`PRIME`] per id, write the nibbles least significant first: ids spread over shards.
    #[default]
    Variable,
    /// Add 1 per id from a seed shared by every machine for 10 minutes, written big-endian: ids
    /// cluster on one shard.
    Sequential,
}

/// Reverses the order of the 8 nibbles of a `u32` (its own inverse). Variable mode writes its
/// counter this way.
///
/// ```
/// use idforge::schemes::locality::reverse_nibbles;
/// assert_eq!(reverse_nibbles(0xCFF0_EB02), 0x20BE_0FFC);
/// assert_eq!(reverse_nibbles(0x20BE_0FFC), 0xCFF0_EB02);
/// ```
#[inline]
pub const fn reverse_nibbles(x: u32) -> u32 {
    (((x & 0x0F0F_0F0F) << 4) | ((x >> 4) & 0x0F0F_0F0F)).swap_bytes()
}

/// The 10-minute bucket text sequential mode hashes: the UTC time as `yyyyMMddHHm` (the last
/// character is the tens digit of the minute).
///
/// ```
/// // 2013-04-28T01:04:00.038Z
/// assert_eq!(idforge::schemes::locality::bucket_key(1_367_111_040_038), "20130428010");
/// ```
pub fn bucket_key(unix_ms: u64) -> String {
    let t = format_unix_ns(i128::from(unix_ms) * 1_000_000, 0);
    // "YYYY-MM-DDTHH:MM:SSZ" (a year past 9999 is written "+YYYYY"): keep the date's digits and
    // the first three of the time.
    let (date, time) = t.split_once('T').unwrap_or((t.as_str(), ""));
    date.chars()
        .filter(char::is_ascii_digit)
        .chain(time.chars().filter(char::is_ascii_digit).take(3))
        .collect()
}

/// The sequential-mode seed for a time: bytes 0 to 3 of the MD5 of [`bucket_key`], read
/// little-endian. The first sequential id of the bucket uses `seed + 1`.
///
/// ```
/// // The article's sequential examples were made at 2013-04-28T01:04Z: f5166776..., f5166777...
/// assert_eq!(idforge::schemes::locality::sequential_seed(1_367_111_040_038), 0xf516_6775);
/// ```
pub fn sequential_seed(unix_ms: u64) -> u32 {
    let d = Md5::digest(bucket_key(unix_ms).as_bytes());
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// The 28-bit fragment of a MAC address the format stores: the low nibble of byte 2 and bytes 3
/// to 5.
///
/// ```
/// use idforge::schemes::locality::mac_fragment;
/// assert_eq!(mac_fragment([0x00, 0x1b, 0x4d, 0x53, 0x7a, 0x50]), 0xd53_7a50);
/// ```
pub const fn mac_fragment(mac: [u8; 6]) -> u32 {
    ((mac[2] as u32 & 0xF) << 24) | ((mac[3] as u32) << 16) | ((mac[4] as u32) << 8) | mac[5] as u32
}

/// Parses a MAC address: six bytes of two hex digits each, separated by `:` or `-`.
///
/// # Errors
/// [`Error::InvalidMac`] when the text (trimmed) does not have six groups, or a group is not two
/// hex digits.
///
/// ```
/// use idforge::schemes::locality::parse_mac;
/// assert_eq!(parse_mac("02:42:AC:11:00:02")?, [0x02, 0x42, 0xac, 0x11, 0x00, 0x02]);
/// assert!(parse_mac("02:42:ac:11:00").is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn parse_mac(text: &str) -> Result<[u8; 6], Error> {
    let invalid = |reason: String| Error::InvalidMac {
        input: clip(text),
        reason,
    };
    let t = text.trim();
    let sep = if t.contains('-') { '-' } else { ':' };
    let groups: Vec<&str> = t.split(sep).collect();
    if groups.len() != 6 {
        return Err(invalid(format!(
            "it has {} groups separated by {sep:?}, a MAC address has 6",
            groups.len()
        )));
    }
    let mut mac = [0u8; 6];
    for (i, g) in groups.iter().enumerate() {
        if g.len() != 2 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(invalid(format!(
                "group {} ({g:?}) is not two hex digits",
                i + 1
            )));
        }
        mac[i] = u8::from_str_radix(g, 16).map_err(|e| invalid(e.to_string()))?;
    }
    Ok(mac)
}

/// The machine's MAC address as the default generator finds it: on Linux, the first interface in
/// `/sys/class/net` (in name order) with a non-zero address, preferring interfaces backed by a
/// device over virtual ones (bridges, veths, tunnels); `None` if there is none or the directory
/// does not exist (other systems).
///
/// ```
/// use idforge::schemes::locality::{mac_fragment, system_mac, LocalityGenerator};
/// // What the default generator writes: the machine's MAC fragment, or zeros without one.
/// let expected = system_mac().map_or(0, mac_fragment);
/// assert_eq!(LocalityGenerator::builder().build()?.mac(), expected);
/// if let Some(mac) = system_mac() {
///     assert_ne!(mac, [0; 6]);
/// }
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn system_mac() -> Option<[u8; 6]> {
    let dir = std::fs::read_dir("/sys/class/net").ok()?;
    let mut interfaces: Vec<_> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n != "lo"))
        .collect();
    interfaces.sort();
    let address = |p: &std::path::PathBuf| -> Option<[u8; 6]> {
        let text = std::fs::read_to_string(p.join("address")).ok()?;
        parse_mac(&text).ok().filter(|m| *m != [0; 6])
    };
    let hardware = |p: &&std::path::PathBuf| Path::exists(&p.join("device"));
    interfaces
        .iter()
        .filter(hardware)
        .find_map(address)
        .or_else(|| interfaces.iter().find_map(address))
}

/// A UUID held for reading as a Locality UUID: 16 bytes, most significant first.
///
/// Any UUID parses; the locality fields (counter, pid, MAC fragment, time) are refused with
/// [`Error::WrongVersion`] unless its version nibble is `b`. It has the traits of the typed ids
/// ([`UuidId`](crate::UuidId)): with the `serde` feature it is its text in human-readable formats
/// and 16 bytes in binary ones; with `uuid` it converts to and from `uuid::Uuid`.
///
/// ```
/// use idforge::schemes::locality::LocalityUuid;
/// let id: LocalityUuid = " 20BE0FFC-314A-BD53-7A50-013A65CA76D2\n".parse()?;
/// assert_eq!(id.to_string(), "20be0ffc-314a-bd53-7a50-013a65ca76d2");
/// assert_eq!(LocalityUuid::from_bytes(id.to_bytes()), id);
/// let v4: LocalityUuid = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80".parse()?;
/// assert!(v4.pid().is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalityUuid(u128);

impl LocalityUuid {
    /// The UUID whose 128 bits, most significant first, are `value`.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id = LocalityUuid::from_u128(0x20be0ffc_314a_bd53_7a50_013a65ca76d2);
    /// assert_eq!(id.to_string(), "20be0ffc-314a-bd53-7a50-013a65ca76d2");
    /// ```
    pub const fn from_u128(value: u128) -> Self {
        Self(value)
    }

    /// The 128 bits as a number (byte 0 most significant).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
    /// assert_eq!(id.as_u128(), 0x20be0ffc_314a_bd53_7a50_013a65ca76d2);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The UUID of 16 raw bytes.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let mut bytes = [0u8; 16];
    /// bytes[6] = 0xb0; // the version nibble
    /// assert!(LocalityUuid::from_bytes(bytes).is_locality());
    /// assert_eq!(LocalityUuid::from_bytes(bytes).as_u128(), 0xb << 76);
    /// ```
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(bytes))
    }

    /// The UUID of a byte slice, which must be exactly 16 bytes.
    ///
    /// # Errors
    /// [`Error::ByteLength`] when the slice is not 16 bytes long.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// assert!(LocalityUuid::from_slice(&[0; 16]).is_ok());
    /// assert!(LocalityUuid::from_slice(&[0; 15]).is_err());
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Self, Error> {
        let bytes: [u8; 16] = bytes.try_into().map_err(|_| Error::ByteLength {
            what: "UUID",
            expected: 16,
            found: bytes.len(),
        })?;
        Ok(Self::from_bytes(bytes))
    }

    /// The 16 raw bytes, most significant first.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
    /// assert_eq!(id.to_bytes()[..4], [0x20, 0xbe, 0x0f, 0xfc]); // the counter comes first
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Builds the id a generator in `mode` writes for these fields.
    ///
    /// Refuses a MAC fragment wider than 28 bits and a time past the 48-bit field (the year 10889).
    ///
    /// # Errors
    /// [`Error::MacFragmentOutOfRange`] when `mac_fragment > 0xfffffff`;
    /// [`Error::TimeOutOfRange`] when `unix_ms` does not fit in 48 bits.
    ///
    /// ```
    /// use idforge::schemes::locality::{CounterMode, LocalityUuid};
    /// let id = LocalityUuid::from_parts(0xCFF0_EB02, CounterMode::Variable, 12_618, 0xd53_7a50, 1_350_327_498_450)?;
    /// assert_eq!(id.to_string(), "20be0ffc-314a-bd53-7a50-013a65ca76d2");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn from_parts(
        counter: u32,
        mode: CounterMode,
        pid: u16,
        mac_fragment: u32,
        unix_ms: u64,
    ) -> Result<Self, Error> {
        if mac_fragment > MAX_MAC_FRAGMENT {
            return Err(Error::MacFragmentOutOfRange {
                fragment: u64::from(mac_fragment),
            });
        }
        if u128::from(unix_ms) > MS_MASK {
            return Err(Error::TimeOutOfRange {
                scheme: NAME.into(),
                time: format_unix_ns(i128::from(unix_ms) * 1_000_000, 3),
                year: year_of_unix_ns(MS_MASK * 1_000_000),
            });
        }
        Ok(Self::compose(
            counter,
            mode,
            middle(pid, mac_fragment),
            unix_ms,
        ))
    }

    #[inline]
    fn compose(counter: u32, mode: CounterMode, middle: u128, unix_ms: u64) -> Self {
        let written = match mode {
            CounterMode::Variable => reverse_nibbles(counter),
            CounterMode::Sequential => counter,
        };
        Self((u128::from(written) << 96) | middle | (u128::from(unix_ms) & MS_MASK))
    }

    /// The version nibble (`0xb` for a Locality UUID), whatever the UUID.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let v4: LocalityUuid = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80".parse()?;
    /// assert_eq!(v4.version(), 4);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn version(self) -> u8 {
        ((self.0 >> 76) & 0xF) as u8
    }

    /// Whether the version nibble is `b`.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
    /// assert!(id.is_locality());
    /// let v4: LocalityUuid = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80".parse()?;
    /// assert!(!v4.is_locality());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn is_locality(self) -> bool {
        self.version() == VERSION
    }

    fn check(self) -> Result<(), Error> {
        if self.is_locality() {
            Ok(())
        } else {
            Err(Error::WrongVersion {
                input: self.to_string(),
                scheme: NAME.into(),
                expected: VERSION,
                found: self.version(),
            })
        }
    }

    /// The counter as variable mode wrote it (nibbles least significant first): the default mode,
    /// and the article's reading. For a sequential-mode id use
    /// [`counter_sequential`](Self::counter_sequential); the id cannot tell which it is.
    ///
    /// # Errors
    /// [`Error::WrongVersion`] when the UUID's version nibble is not `b` (not a Locality UUID).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
    /// assert_eq!(id.counter_reversed()?, 0xCFF0_EB02);
    /// assert_eq!(id.counter_sequential()?, 0x20BE_0FFC);
    /// assert_eq!(id.pid()?, 12_618);
    /// assert_eq!(id.mac()?, 0xd53_7a50);
    /// assert_eq!(id.unix_ms()?, 1_350_327_498_450);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter_reversed(self) -> Result<u32, Error> {
        self.check()?;
        Ok(reverse_nibbles((self.0 >> 96) as u32))
    }

    /// The counter as sequential mode wrote it: the first 8 hex characters, big-endian.
    ///
    /// # Errors
    /// [`Error::WrongVersion`] when the UUID's version nibble is not `b` (not a Locality UUID).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// // The article's sequential example (2013-04-28T01:04Z).
    /// let id: LocalityUuid = "f5166776-7a7f-bd53-7a50-013e4e2afc26".parse()?;
    /// assert_eq!(id.counter_sequential()?, 0xf516_6776);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter_sequential(self) -> Result<u32, Error> {
        self.check()?;
        Ok((self.0 >> 96) as u32)
    }

    /// The process id field (the generating pid modulo 65,536, or the one set explicitly).
    ///
    /// # Errors
    /// [`Error::WrongVersion`] when the UUID's version nibble is not `b` (not a Locality UUID).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "f5166776-7a7f-bd53-7a50-013e4e2afc26".parse()?;
    /// assert_eq!(id.pid()?, 0x7a7f);
    /// let v4: LocalityUuid = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80".parse()?;
    /// assert!(matches!(v4.pid(), Err(idforge::Error::WrongVersion { found: 4, .. })));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn pid(self) -> Result<u16, Error> {
        self.check()?;
        Ok((self.0 >> 80) as u16)
    }

    /// The 28-bit MAC fragment; `format!("{:07x}", ...)` writes it as the article does (`d537a50`).
    ///
    /// # Errors
    /// [`Error::WrongVersion`] when the UUID's version nibble is not `b` (not a Locality UUID).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse()?;
    /// assert_eq!(format!("{:07x}", id.mac()?), "d537a50");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn mac(self) -> Result<u32, Error> {
        self.check()?;
        Ok(((self.0 >> 48) as u32) & MAX_MAC_FRAGMENT)
    }

    /// Milliseconds since the Unix epoch, UTC.
    ///
    /// # Errors
    /// [`Error::WrongVersion`] when the UUID's version nibble is not `b` (not a Locality UUID).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityUuid;
    /// let id: LocalityUuid = "f5166776-7a7f-bd53-7a50-013e4e2afc26".parse()?;
    /// assert_eq!(id.unix_ms()?, 1_367_111_040_038); // 2013-04-28T01:04:00.038Z
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_ms(self) -> Result<u64, Error> {
        self.check()?;
        Ok((self.0 & MS_MASK) as u64)
    }
}

impl fmt::Display for LocalityUuid {
    /// Canonical lowercase UUID text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(text::encode(self.0, 128, Format::Uuid).as_str())
    }
}

impl fmt::Debug for LocalityUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalityUuid({self})")
    }
}

impl FromStr for LocalityUuid {
    type Err = Error;

    /// Parses UUID text: 36 characters, hyphens at 8, 13, 18 and 23, hex digits in either case,
    /// surrounding whitespace ignored.
    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim();
        if t.is_empty() {
            return Err(malformed(
                s,
                "empty: expected a UUID (8-4-4-4-12 hex digits)",
            ));
        }
        text::parse_uuid(t, s).map(Self)
    }
}

impl From<LocalityUuid> for u128 {
    fn from(id: LocalityUuid) -> u128 {
        id.0
    }
}

impl From<u128> for LocalityUuid {
    fn from(value: u128) -> Self {
        Self(value)
    }
}

impl From<[u8; 16]> for LocalityUuid {
    fn from(bytes: [u8; 16]) -> Self {
        Self::from_bytes(bytes)
    }
}

impl TryFrom<&[u8]> for LocalityUuid {
    type Error = Error;
    fn try_from(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_slice(bytes)
    }
}

#[cfg(feature = "uuid")]
impl From<LocalityUuid> for uuid::Uuid {
    fn from(id: LocalityUuid) -> uuid::Uuid {
        uuid::Uuid::from_u128(id.0)
    }
}

#[cfg(feature = "uuid")]
impl From<uuid::Uuid> for LocalityUuid {
    fn from(id: uuid::Uuid) -> LocalityUuid {
        LocalityUuid(id.as_u128())
    }
}

/// As [`UuidId`](crate::UuidId): its text in human-readable formats, 16 bytes in binary ones.
#[cfg(feature = "serde")]
impl serde::Serialize for LocalityUuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::ids::serde_impl::serialize_uuid(self.0, s)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for LocalityUuid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::ids::serde_impl::deserialize_uuid(d)
    }
}

/// Bytes 4 to 9 in place: pid, version, MAC fragment.
const fn middle(pid: u16, mac_fragment: u32) -> u128 {
    ((pid as u128) << 80)
        | ((VERSION as u128) << 76)
        | (((mac_fragment & MAX_MAC_FRAGMENT) as u128) << 48)
}

/// The words of a generator's fork-shared page.
const W_STATE: usize = 0;
/// The 10-minute bucket (Unix ms / [`BUCKET_MS`]) last seeded, plus one (0: none yet).
const W_BUCKET: usize = 1;
/// The position when sequential mode was last left.
const W_RESUME: usize = 2;
/// The switch lock: 0 when free, else the process id of the holder.
const W_LOCK: usize = 3;
/// The position when variable mode was last left: above every block reserved before.
const W_VAR_RESUME: usize = 4;

/// Holds the switch lock of a generator's shared page; released on drop.
struct SwitchLock<'a>(&'a AtomicU64);

impl<'a> SwitchLock<'a> {
    /// Takes the lock: a spin lock in the fork-shared page, so it serialises switches of every
    /// thread of every process that shares the generator. A holder that died inside a switch
    /// (`kill -9`) is detected and its lock taken over.
    fn take(word: &'a AtomicU64) -> SwitchLock<'a> {
        let me = u64::from(std::process::id());
        let mut spins = 0u32;
        loop {
            match word.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return SwitchLock(word),
                Err(holder) => {
                    spins = spins.wrapping_add(1);
                    if spins % 256 == 0
                        && holder != 0
                        && holder != me
                        && !crate::shm::process_alive(holder)
                        && word
                            .compare_exchange(holder, me, Ordering::Acquire, Ordering::Relaxed)
                            .is_ok()
                    {
                        return SwitchLock(word);
                    }
                    std::thread::yield_now();
                }
            }
        }
    }
}

impl Drop for SwitchLock<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Makes Locality UUIDs: one `fetch_add` per id, or, for threads sharing it, one
/// `compare_exchange` per block of 32 to 63 ids (see the module docs); no lock. Share it between
/// threads (`&` or `Arc`); make one per process ([`shared`]) unless you give each its own pid or
/// MAC fragment.
///
/// ```
/// use idforge::ManualClock;
/// use idforge::schemes::locality::LocalityGenerator;
/// // The article's sequential examples: pid 0x7a7f, MAC ..:_d:53:7a:50, 2013-04-28T01:04:00.038Z.
/// let g = LocalityGenerator::builder()
///     .clock(ManualClock::new(1_367_111_040_038_000_000))
///     .pid(0x7a7f)
///     .mac_fragment(0xd53_7a50)
///     .sequential(true)
///     .build()?;
/// assert_eq!(g.next().to_string(), "f5166776-7a7f-bd53-7a50-013e4e2afc26");
/// assert_eq!(g.next().to_string(), "f5166777-7a7f-bd53-7a50-013e4e2afc26");
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct LocalityGenerator<C: Clock = SystemClock> {
    clock: C,
    /// A page a forked child shares with its parent (a private copy of the counter would let
    /// both issue the same ids): word 0 is `position << 1 | mode`, one word so each position
    /// and its mode come from one atomic read-modify-write; then the sequential-mode bucket,
    /// the resume values and the switch lock.
    words: SharedWords,
    /// This generator's number in the process, which thread blocks are tagged with (never reused,
    /// unlike an address); 0 when this process cannot have thread blocks (see `assemble`).
    number: u64,
    /// Bytes 4 to 9, the same in every id.
    middle: u128,
    pid: u16,
    mac: u32,
}

impl<C: Clock> fmt::Debug for LocalityGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalityGenerator")
            .field("mode", &self.mode())
            .field("pid", &self.pid)
            .field("mac", &format_args!("{:07x}", self.mac))
            .finish_non_exhaustive()
    }
}

impl LocalityGenerator<SystemClock> {
    /// A generator on the system clock (its fast, millisecond-accurate reading), in variable mode from a random counter, with this process's
    /// id (modulo 65,536) and the machine's MAC ([`system_mac`], zeros if none). In containers,
    /// set the pid and MAC instead (see the module docs).
    ///
    /// # Panics
    /// If one page of shared memory cannot be mapped (the system is out of memory or of
    /// mappings); [`LocalityGenerator::builder`] returns that as an error instead.
    ///
    /// ```
    /// use idforge::schemes::locality::{CounterMode, LocalityGenerator};
    /// let g = LocalityGenerator::new();
    /// let id = g.next();
    /// assert_eq!(id.pid()?, (std::process::id() % 65_536) as u16);
    /// assert_eq!(g.mode(), CounterMode::Variable);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new() -> Self {
        Self::assemble(
            SystemClock::fast(),
            default_pid(),
            system_mac().map_or(0, mac_fragment),
            rand::random(),
            false,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A builder, to set the pid, MAC, clock, counter start or mode.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// let g = LocalityGenerator::builder().pid(7).mac_fragment(0x123_4567).build()?;
    /// assert_eq!((g.pid(), g.mac()), (7, 0x123_4567));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn builder() -> LocalityBuilder<SystemClock> {
        LocalityBuilder {
            clock: SystemClock::fast(),
            pid: None,
            mac: None,
            counter: None,
            sequential: false,
        }
    }
}

impl Default for LocalityGenerator<SystemClock> {
    fn default() -> Self {
        Self::new()
    }
}

/// This process's id modulo 65,536, as the format defines the default pid field.
fn default_pid() -> u16 {
    (std::process::id() % 65_536) as u16
}

impl<C: Clock> LocalityGenerator<C> {
    fn assemble(
        clock: C,
        pid: u16,
        mac: u32,
        counter: u32,
        sequential: bool,
    ) -> Result<Self, Error> {
        let words = SharedWords::new()?;
        // Variable mode: the position whose counter is `counter`.
        words.word(W_STATE).store(
            u64::from(counter.wrapping_mul(PRIME_INVERSE)) << POSITION_SHIFT,
            Ordering::Relaxed,
        );
        // Thread blocks need every fork counted, also forks made without the `pthread_atfork`
        // handlers: a child must never go on with a block its parent goes on with too. Where
        // that cannot be known, each id takes its position from the shared word.
        let number = if crate::shm::forks_always_counted() {
            NEXT_GENERATOR.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        let g = Self {
            clock,
            words,
            number,
            middle: middle(pid, mac),
            pid,
            mac,
        };
        if sequential {
            g.use_sequential();
        }
        Ok(g)
    }

    #[inline]
    fn state(&self) -> &AtomicU64 {
        self.words.word(W_STATE)
    }

    /// The next id: take a position (from this thread's block, or one `fetch_add` of the shared
    /// word), read the clock, assemble.
    ///
    /// ```
    /// use idforge::schemes::locality::{LocalityGenerator, PRIME};
    /// use idforge::ManualClock;
    /// let g = LocalityGenerator::builder()
    ///     .clock(ManualClock::new(1_350_327_498_450_000_000))
    ///     .pid(12_618)
    ///     .mac_fragment(0xd53_7a50)
    ///     .counter(0xCFF0_EB02u32.wrapping_sub(PRIME))
    ///     .build()?;
    /// // The article's example id: the first id adds PRIME to the start.
    /// assert_eq!(g.next().to_string(), "20be0ffc-314a-bd53-7a50-013a65ca76d2");
    /// assert_eq!(g.next().counter_reversed()?, 0xCFF0_EB02u32.wrapping_add(PRIME));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next(&self) -> LocalityUuid {
        let (position, mode) = if self.number == 0 {
            take_one(self.state())
        } else {
            THREAD_BLOCK.with(|b| self.take_position(b))
        };
        let unix_ms = self.clock.now_ns() / 1_000_000;
        LocalityUuid::compose(
            counter_at(position as u32, mode),
            mode,
            self.middle,
            unix_ms,
        )
    }

    /// This id's position, through this thread's block `b`. `b.busy` is set while `b` is read
    /// and written: a signal handler that interrupts this and makes an id itself finds it set
    /// and takes its position from the shared word alone, leaving `b` as the interrupted code
    /// sees it (the fences keep the compiler from moving any access of `b` out of that span).
    #[inline(always)]
    fn take_position(&self, b: &ThreadBlock) -> (u64, CounterMode) {
        if b.busy.get() {
            return take_one(self.state());
        }
        b.busy.set(true);
        compiler_fence(Ordering::SeqCst);
        let taken = take_position(self.state(), b, self.number, crate::shm::fork_generation);
        compiler_fence(Ordering::SeqCst);
        b.busy.set(false);
        taken
    }

    /// Switches to sequential mode (see the module docs for the exact semantics): from variable
    /// mode the counter is reseeded from the clock's 10-minute bucket, or, re-entering a bucket
    /// this generator already seeded, continues after its last sequential value. Already in
    /// sequential mode, nothing changes.
    ///
    /// ```
    /// use idforge::schemes::locality::{sequential_seed, LocalityGenerator};
    /// use idforge::ManualClock;
    /// let g = LocalityGenerator::builder().clock(ManualClock::new(1_367_111_040_038_000_000)).build()?;
    /// g.use_sequential();
    /// // Seeded from the 10-minute bucket, then +1 per id: every machine starts at the same value.
    /// assert_eq!(g.next().counter_sequential()?, sequential_seed(1_367_111_040_038) + 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn use_sequential(&self) {
        let _lock = SwitchLock::take(self.words.word(W_LOCK));
        if mode_of(self.state().load(Ordering::Relaxed)) == CounterMode::Sequential {
            return;
        }
        let unix_ms = self.clock.now_ns() / 1_000_000;
        let bucket = unix_ms / BUCKET_MS;
        let start = if self.words.word(W_BUCKET).load(Ordering::Relaxed) == bucket + 1 {
            self.words.word(W_RESUME).load(Ordering::Relaxed)
        } else {
            self.words
                .word(W_BUCKET)
                .store(bucket + 1, Ordering::Relaxed);
            u64::from(sequential_seed(unix_ms))
        };
        // A swap, not a store: every variable-mode step taken until now is in `before`, so
        // variable mode later continues above all of them.
        // Every thread block lies below `before`'s position too: variable mode resumes above
        // them, so a block left unfinished stays its thread's alone.
        let before = self.state().swap(
            (start << POSITION_SHIFT) | SEQUENTIAL_BIT,
            Ordering::Relaxed,
        );
        self.words
            .word(W_VAR_RESUME)
            .store(before >> POSITION_SHIFT, Ordering::Relaxed);
    }

    /// Switches to variable mode, continuing from where variable mode was left (or, if it never
    /// was, from the counter's current value).
    ///
    /// ```
    /// use idforge::schemes::locality::{CounterMode, LocalityGenerator, PRIME};
    /// let g = LocalityGenerator::builder().counter(1_000).build()?;
    /// g.use_sequential();
    /// g.use_variable();
    /// assert_eq!(g.mode(), CounterMode::Variable);
    /// assert_eq!(g.next().counter_reversed()?, 1_000 + PRIME); // variable mode resumes where it was
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn use_variable(&self) {
        let _lock = SwitchLock::take(self.words.word(W_LOCK));
        if mode_of(self.state().load(Ordering::Relaxed)) == CounterMode::Variable {
            return;
        }
        // Each mode continues its own counter: going back to variable mode must not restart it
        // from a value it already stepped past (that repeated ids when a sequential stretch
        // issued nothing in between).
        let resume = self.words.word(W_VAR_RESUME).load(Ordering::Relaxed);
        let before = self
            .state()
            .swap(resume << POSITION_SHIFT, Ordering::Relaxed);
        self.words
            .word(W_RESUME)
            .store(before >> POSITION_SHIFT, Ordering::Relaxed);
    }

    /// The current mode.
    ///
    /// ```
    /// use idforge::schemes::locality::{CounterMode, LocalityGenerator};
    /// let g = LocalityGenerator::builder().sequential(true).build()?;
    /// assert_eq!(g.mode(), CounterMode::Sequential);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn mode(&self) -> CounterMode {
        mode_of(self.state().load(Ordering::Relaxed))
    }

    /// The counter at the shared word's position: the last id's counter when one thread uses the
    /// generator (or, before the first id, the start); with threads holding blocks, the counter
    /// of the last position reserved.
    ///
    /// ```
    /// use idforge::schemes::locality::{LocalityGenerator, PRIME};
    /// let g = LocalityGenerator::builder().counter(5).build()?;
    /// assert_eq!(g.counter(), 5);
    /// let id = g.next();
    /// assert_eq!(g.counter(), 5 + PRIME);
    /// assert_eq!(id.counter_reversed()?, g.counter());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter(&self) -> u32 {
        let state = self.state().load(Ordering::Relaxed);
        counter_at((state >> POSITION_SHIFT) as u32, mode_of(state))
    }

    /// The pid written into every id.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// let g = LocalityGenerator::builder().pid(4_242).build()?;
    /// assert_eq!(g.pid(), 4_242);
    /// assert_eq!(g.next().pid()?, 4_242);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn pid(&self) -> u16 {
        self.pid
    }

    /// The 28-bit MAC fragment written into every id.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// let g = LocalityGenerator::builder().mac([0x02, 0x42, 0xac, 0x11, 0x00, 0x02]).build()?;
    /// assert_eq!(g.mac(), 0xc11_0002); // the last 28 bits
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn mac(&self) -> u32 {
        self.mac
    }

    /// The generator's clock.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// use idforge::ManualClock;
    /// let g = LocalityGenerator::builder().clock(ManualClock::new(5_000_000)).build()?;
    /// g.clock().advance(1_000_000);
    /// assert_eq!(g.next().unix_ms()?, 6);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

/// One position straight from the shared state word (one `fetch_add`), over any cell with a
/// `fetch_add` (the real `AtomicU64`, or loom's in the model test): the position this id owns and
/// the mode the same `fetch_add` read. Relaxed is enough: every position comes from its own
/// read-modify-write of the one word, and all of those sit in that word's one modification
/// order whatever their ordering; no other memory is published through it.
#[inline]
fn take_one<A: CounterCell>(state: &A) -> (u64, CounterMode) {
    let before = state.fetch_add_relaxed(1 << POSITION_SHIFT);
    ((before >> POSITION_SHIFT) + 1, mode_of(before))
}

/// The next position of the generator numbered `number` for the thread whose block is `b`;
/// `fork` reads the process's fork generation ([`crate::shm::fork_generation`]), only when a
/// block is used or reserved.
///
/// * The block's next position, if `b` belongs to this generator and process, has one left, the
///   generator is in variable mode and its state word is less than [`LAP_LIMIT`] past it (one
///   relaxed load of the state word, which other threads write once per block).
/// * Otherwise, if this thread has seen another take positions of this generator between two of
///   its own reservations, and the mode is variable: a new block of [`block_size`] positions (one
///   `compare_exchange` of the state word, which fails rather than take positions of sequential
///   mode).
/// * Otherwise one position (one `fetch_add`, in either mode), as without blocks. A thread alone
///   on a generator, or alternating between generators, always takes its positions so: each id
///   is the one before plus `PRIME` (or 1), and no position is left unused.
///
/// Positions are handed out only by the state word's read-modify-writes: a position is in one
/// thread's block, or one id's, never two. A block of a variable-mode stretch survives a switch
/// to sequential mode unused and is taken up again when the generator is back in variable mode,
/// which resumes above it. A block of another generator or process is never continued (its
/// number or fork generation differs), nor one the state word has lapped.
#[inline(always)]
fn take_position<A: CounterCell>(
    state: &A,
    b: &ThreadBlock,
    number: u64,
    fork: impl Fn() -> u64,
) -> (u64, CounterMode) {
    let ours = b.generator.get() == number;
    let next = b.next.get();
    let end = b.end.get();
    if ours && next != end && b.fork.get() == fork() {
        let seen = state.load_relaxed();
        if mode_of(seen) == CounterMode::Variable
            && ((seen >> POSITION_SHIFT) + 1).wrapping_sub(next) < LAP_LIMIT
        {
            b.next.set(next + 1);
            return (next, CounterMode::Variable);
        }
    }
    // The last position this thread reserved from this generator (meaningful when `ours`).
    let last = end.wrapping_sub(1);
    if ours && b.contended.get() {
        if let Some(first) = reserve_block(state, b, fork(), last) {
            return (first, CounterMode::Variable);
        }
    }
    let (position, mode) = take_one(state);
    if mode == CounterMode::Variable {
        // An empty block: it tells the next call which generator and position came last. (Its
        // fork generation is not needed: a block with positions left sets its own.)
        // When `ours`, `contended` is already false (or a block was not reserved because the
        // mode was sequential a moment ago; staying true then only makes the next reservation a
        // block): a thread alone stores only `next` and `end`.
        let contended = ours && position - 1 != last;
        if contended || !ours {
            b.contended.set(contended);
            b.generator.set(number);
        }
        b.next.set(position + 1);
        b.end.set(position + 1);
    }
    (position, mode)
}

/// A new block for this thread, in variable mode only (a `compare_exchange` of the state word,
/// retried while it stays in variable mode): its first position, the rest left in `b`. `last` is
/// the last position this thread reserved before.
#[cold]
#[inline(never)]
fn reserve_block<A: CounterCell>(state: &A, b: &ThreadBlock, fork: u64, last: u64) -> Option<u64> {
    let mut seen = state.load_relaxed();
    while mode_of(seen) == CounterMode::Variable {
        let size = block_size(seen >> POSITION_SHIFT);
        match state.compare_exchange_relaxed(seen, seen + (size << POSITION_SHIFT)) {
            Ok(_) => {
                let first = (seen >> POSITION_SHIFT) + 1;
                b.fork.set(fork);
                b.next.set(first + 1);
                b.end.set(first + size);
                // Still shared, if another thread reserved since this thread's last.
                b.contended.set(first - 1 != last);
                return Some(first);
            }
            Err(now) => seen = now,
        }
    }
    None
}

/// How many positions a block reserved after `position` holds: 32 to 63, from the top bits of a
/// mixing hash of the position (SplitMix64's finalizer). A thread may give its block up after a
/// few ids (it exits, or turns to another generator); with one fixed size the positions used
/// would then follow the pattern of the calls, and a pattern in step with the size would fill
/// some of the 16 partitions and starve others. With the size varying this way, where the next
/// block starts, and so which partitions its first ids fall in, does not follow any pattern of
/// calls.
///
/// A multiplicative hash alone (`position * 0x9E3779B97F4A7C15`, top bits) is not enough: the
/// top bits of `x * c` and of `(x + d) * c` differ by a near-constant for small `d`, so the size
/// of a block reserved right after another's was a function of the first's, and two threads
/// each taking a block, using its first id and turning away filled the partitions 1.12× and
/// 0.87× (`two_threads_giving_blocks_up_after_one_id_spread_over_every_partition`).
#[inline]
fn block_size(position: u64) -> u64 {
    let mut z = position.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    BLOCK_MIN + (z >> 59)
}

/// What [`take_position`] needs of the state word.
trait CounterCell {
    fn fetch_add_relaxed(&self, v: u64) -> u64;
    fn load_relaxed(&self) -> u64;
    fn compare_exchange_relaxed(&self, current: u64, new: u64) -> Result<u64, u64>;
}

impl CounterCell for AtomicU64 {
    #[inline]
    fn fetch_add_relaxed(&self, v: u64) -> u64 {
        self.fetch_add(v, Ordering::Relaxed)
    }
    #[inline]
    fn load_relaxed(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
    #[inline]
    fn compare_exchange_relaxed(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

/// The process's next generator number: tells a thread's block which generator it belongs to.
static NEXT_GENERATOR: AtomicU64 = AtomicU64::new(1);

/// Positions this thread reserved from one generator's state word with one read-modify-write,
/// issued one by one: `next..end` are left.
struct ThreadBlock {
    /// Set while `next` uses the block (a signal handler finding it set leaves the block alone).
    busy: Cell<bool>,
    /// The generator's number (0: none).
    generator: Cell<u64>,
    /// The process's fork generation when reserved: a forked child never continues a block it
    /// inherited (its parent does).
    fork: Cell<u64>,
    next: Cell<u64>,
    end: Cell<u64>,
    /// Whether another thread took positions of this generator between this thread's last two
    /// reservations: then the next reservation is a block.
    contended: Cell<bool>,
}

impl ThreadBlock {
    const fn none() -> ThreadBlock {
        ThreadBlock {
            busy: Cell::new(false),
            generator: Cell::new(0),
            fork: Cell::new(0),
            next: Cell::new(0),
            end: Cell::new(0),
            contended: Cell::new(false),
        }
    }
}

thread_local! {
    /// This thread's block of the generator it used last. Constant-initialised and without a
    /// destructor, so reading it needs no registration (also from a signal handler).
    static THREAD_BLOCK: ThreadBlock = const { ThreadBlock::none() };
}

#[inline]
fn mode_of(state: u64) -> CounterMode {
    if state & SEQUENTIAL_BIT == 0 {
        CounterMode::Variable
    } else {
        CounterMode::Sequential
    }
}

#[derive(Debug, Clone, Copy)]
enum MacSource {
    Address([u8; 6]),
    Fragment(u64),
}

/// Configures a [`LocalityGenerator`]: clock, pid, MAC, counter start and mode.
///
/// ```
/// use idforge::schemes::locality::LocalityGenerator;
/// use idforge::ManualClock;
/// let g = LocalityGenerator::builder()
///     .clock(ManualClock::new(1_000_000_000))
///     .pid(1)
///     .mac_fragment(2)
///     .counter(3)
///     .build()?;
/// let id = g.next();
/// assert_eq!((id.pid()?, id.mac()?, id.unix_ms()?), (1, 2, 1_000));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct LocalityBuilder<C: Clock = SystemClock> {
    clock: C,
    pid: Option<u64>,
    mac: Option<MacSource>,
    counter: Option<u32>,
    sequential: bool,
}

impl<C: Clock> LocalityBuilder<C> {
    /// The clock ids take their time from, and sequential mode its seed (a
    /// [`ManualClock`](crate::ManualClock) reproduces the ids of a given moment).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// use idforge::ManualClock;
    /// let g = LocalityGenerator::builder().clock(ManualClock::new(1_367_111_040_038_000_000)).build()?;
    /// assert_eq!(g.next().unix_ms()?, 1_367_111_040_038);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn clock<D: Clock>(self, clock: D) -> LocalityBuilder<D> {
        LocalityBuilder {
            clock,
            pid: self.pid,
            mac: self.mac,
            counter: self.counter,
            sequential: self.sequential,
        }
    }

    /// The process id to write, 0 to 65,535 (default: this process's id modulo 65,536). Larger
    /// values are refused by [`build`](Self::build), not wrapped.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// assert_eq!(LocalityGenerator::builder().pid(65_535).build()?.pid(), 65_535);
    /// let e = LocalityGenerator::builder().pid(65_536).build().unwrap_err();
    /// assert!(matches!(e, idforge::Error::PidOutOfRange { .. }));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn pid(mut self, pid: u64) -> Self {
        self.pid = Some(pid);
        self
    }

    /// The MAC address whose last 28 bits to write (default: [`system_mac`]).
    ///
    /// ```
    /// use idforge::schemes::locality::{parse_mac, LocalityGenerator};
    /// let g = LocalityGenerator::builder().mac(parse_mac("00:1b:4d:53:7a:50")?).build()?;
    /// assert_eq!(g.mac(), 0xd53_7a50);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn mac(mut self, mac: [u8; 6]) -> Self {
        self.mac = Some(MacSource::Address(mac));
        self
    }

    /// The 28-bit MAC fragment to write directly, up to `0xfffffff` (larger values are refused by
    /// [`build`](Self::build)).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// assert_eq!(LocalityGenerator::builder().mac_fragment(0xfff_ffff).build()?.mac(), 0xfff_ffff);
    /// let e = LocalityGenerator::builder().mac_fragment(0x1000_0000).build().unwrap_err();
    /// assert!(matches!(e, idforge::Error::MacFragmentOutOfRange { .. }));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn mac_fragment(mut self, fragment: u64) -> Self {
        self.mac = Some(MacSource::Fragment(fragment));
        self
    }

    /// The counter's starting value (default: random). The first variable-mode id uses
    /// `start + PRIME`. Sequential mode seeds from the clock instead.
    ///
    /// ```
    /// use idforge::schemes::locality::{LocalityGenerator, PRIME};
    /// let g = LocalityGenerator::builder().counter(u32::MAX).build()?;
    /// assert_eq!(g.next().counter_reversed()?, PRIME - 1); // wraps modulo 2^32
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter(mut self, start: u32) -> Self {
        self.counter = Some(start);
        self
    }

    /// Start in sequential mode (default: variable).
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// let g = LocalityGenerator::builder().sequential(true).build()?;
    /// let (a, b) = (g.next(), g.next());
    /// assert_eq!(b.counter_sequential()?, a.counter_sequential()?.wrapping_add(1));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn sequential(mut self, on: bool) -> Self {
        self.sequential = on;
        self
    }

    /// The generator; refuses a pid above 65,535 or a MAC fragment wider than 28 bits.
    ///
    /// # Errors
    /// [`Error::PidOutOfRange`] when the pid set is above 65,535;
    /// [`Error::MacFragmentOutOfRange`] when the MAC fragment set is wider than 28 bits;
    /// [`Error::StateFile`] ([`StateFileError::Io`](crate::StateFileError::Io)) when the shared
    /// page for the counter cannot be mapped.
    ///
    /// ```
    /// use idforge::schemes::locality::LocalityGenerator;
    /// let g = LocalityGenerator::builder().pid(4_242).mac_fragment(0xabc_def0).build()?;
    /// let id = g.next();
    /// assert_eq!((id.pid()?, id.mac()?), (4_242, 0xabc_def0));
    /// assert!(LocalityGenerator::builder().pid(70_000).build().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn build(self) -> Result<LocalityGenerator<C>, Error> {
        let pid = match self.pid {
            None => default_pid(),
            Some(p) => u16::try_from(p).map_err(|_| Error::PidOutOfRange { pid: p })?,
        };
        let mac = match self.mac {
            None => system_mac().map_or(0, mac_fragment),
            Some(MacSource::Address(m)) => mac_fragment(m),
            Some(MacSource::Fragment(f)) => match u32::try_from(f) {
                Ok(f) if f <= MAX_MAC_FRAGMENT => f,
                _ => return Err(Error::MacFragmentOutOfRange { fragment: f }),
            },
        };
        let counter = self.counter.unwrap_or_else(rand::random);
        LocalityGenerator::assemble(self.clock, pid, mac, counter, self.sequential)
    }
}

/// The process-wide generator on the wall clock, with this process's pid and the machine's MAC.
///
/// ```
/// let a = idforge::schemes::locality::shared().next();
/// let b = idforge::schemes::locality::shared().next();
/// assert_ne!(a, b);
/// assert_eq!(a.pid()?, (std::process::id() % 65_536) as u16);
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn shared() -> &'static LocalityGenerator {
    static GEN: OnceLock<LocalityGenerator> = OnceLock::new();
    GEN.get_or_init(LocalityGenerator::new)
}

/// Loom model of the position protocol: every interleaving of threads taking positions (from
/// their own blocks, with new blocks by `compare_exchange` and single positions by `fetch_add`)
/// and of a thread switching the mode there and back, as `use_sequential`/`use_variable` do,
/// gives each id its own position in its mode. Built only with `--cfg loom`:
/// `RUSTFLAGS="--cfg loom" cargo test -p idforge --lib loom_model`, as `.ci/run` does.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::{AtomicU64 as LoomU64, Ordering as LoomOrdering};
    use loom::sync::Arc;

    struct Word(LoomU64);

    impl CounterCell for Word {
        fn fetch_add_relaxed(&self, v: u64) -> u64 {
            self.0.fetch_add(v, LoomOrdering::Relaxed)
        }
        fn load_relaxed(&self) -> u64 {
            self.0.load(LoomOrdering::Relaxed)
        }
        fn compare_exchange_relaxed(&self, current: u64, new: u64) -> Result<u64, u64> {
            self.0
                .compare_exchange_weak(current, new, LoomOrdering::Relaxed, LoomOrdering::Relaxed)
        }
    }

    /// A thread's block of generator 1, process generation 0, which (if `contended`) reserves a
    /// block at its first id, as after having seen another thread.
    fn block(contended: bool) -> ThreadBlock {
        let b = ThreadBlock::none();
        b.generator.set(1);
        b.contended.set(contended);
        b
    }

    fn take(word: &Word, b: &ThreadBlock) -> (u64, CounterMode) {
        take_position(word, b, 1, || 0)
    }

    fn distinct(mut v: Vec<(u64, CounterMode)>) {
        let n = v.len();
        v.sort_by_key(|(p, m)| (*p, *m as u8));
        v.dedup();
        assert_eq!(v.len(), n, "two ids took the same position");
    }

    /// Every interleaving with at most `bound` preemptions (unbounded, these models run for many
    /// minutes; loom's own advice is that 2 or 3 find almost every bug).
    fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(bound);
        model.check(f);
    }

    #[test]
    fn threads_taking_positions_never_share_one() {
        // Both threads reserve blocks (compare_exchange), or one takes single positions
        // (fetch_add) and then a block while the other takes from its block.
        for contended in [[true, true], [true, false]] {
            model(3, move || {
                let word = Arc::new(Word(LoomU64::new(7 << POSITION_SHIFT)));
                let hs: Vec<_> = (0..2)
                    .map(|t| {
                        let word = word.clone();
                        loom::thread::spawn(move || {
                            let b = block(contended[t]);
                            (0..2).map(|_| take(&word, &b)).collect::<Vec<_>>()
                        })
                    })
                    .collect();
                let all: Vec<_> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
                assert!(all.iter().all(|(p, _)| *p > 7));
                distinct(all);
            });
        }
    }

    #[test]
    fn a_mode_round_trip_racing_a_thread_with_a_block() {
        // A thread reserves a block and takes from it while another switches to sequential mode
        // and back and takes ids in between: variable mode resumes above the block.
        model(3, || {
            let word = Arc::new(Word(LoomU64::new(7 << POSITION_SHIFT)));
            let taker = {
                let word = word.clone();
                loom::thread::spawn(move || {
                    let b = block(true);
                    (0..2).map(|_| take(&word, &b)).collect::<Vec<_>>()
                })
            };
            // use_sequential: swap in a sequential position (1,000), keep where variable mode
            // was; use_variable: swap that back.
            let before = word.0.swap(
                (1_000 << POSITION_SHIFT) | SEQUENTIAL_BIT,
                LoomOrdering::Relaxed,
            );
            let b = block(true);
            let mut all = vec![take(&word, &b)];
            word.0.swap(
                (before >> POSITION_SHIFT) << POSITION_SHIFT,
                LoomOrdering::Relaxed,
            );
            all.push(take(&word, &b));
            all.extend(taker.join().unwrap());
            for (p, m) in &all {
                match m {
                    CounterMode::Variable => assert!(*p > 7),
                    CounterMode::Sequential => assert!(*p > 1_000),
                }
            }
            distinct(all);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use proptest::prelude::*;

    const ARTICLE: &str = "20be0ffc-314a-bd53-7a50-013a65ca76d2";
    /// 2013-04-28T01:04:00.038Z, the time of the article's sequential examples.
    const SEQ_MS: u64 = 1_367_111_040_038;

    fn at(ms: u64) -> ManualClock {
        ManualClock::new(ms * 1_000_000)
    }

    /// Makes this thread hold a block of `g` (a thread reserves one after it saw another thread
    /// take a position between two of its own) and returns the block's next position.
    fn hold_a_block(g: &LocalityGenerator<ManualClock>) -> u64 {
        g.next();
        std::thread::scope(|s| {
            s.spawn(|| g.next());
        });
        g.next();
        g.next();
        THREAD_BLOCK.with(|b| {
            assert_eq!(b.generator.get(), g.number);
            assert!(b.end.get() - b.next.get() >= BLOCK_MIN - 1, "no block held");
            b.next.get()
        })
    }

    fn position_of(id: LocalityUuid) -> u32 {
        id.counter_reversed().unwrap().wrapping_mul(PRIME_INVERSE)
    }

    #[test]
    fn a_signal_handler_interrupting_next_never_takes_the_position_it_was_taking() {
        // A handler runs `next` while the interrupted `next` has marked the block busy and read
        // its next position, not yet written it back: the handler must take its position from
        // the state word and leave the block as it was. (Thread-local blocks without the mark
        // repeated 7 ids in 59 million with a handler issuing ids.)
        let g = LocalityGenerator::builder()
            .clock(at(SEQ_MS))
            .build()
            .unwrap();
        let interrupted = hold_a_block(&g);
        let from_handler = THREAD_BLOCK.with(|b| {
            b.busy.set(true);
            let id = g.next();
            assert_eq!(b.next.get(), interrupted, "the handler used the block");
            b.busy.set(false);
            id
        });
        assert_ne!(
            u64::from(position_of(from_handler)),
            interrupted & 0xffff_ffff
        );
        // Past the busy mark, the block gives the position the interrupted call would have.
        assert_eq!(u64::from(position_of(g.next())), interrupted & 0xffff_ffff);
    }

    #[test]
    fn a_block_the_state_word_has_lapped_is_given_up() {
        // Other threads took 2^31 positions while this one held its block: the block's counter
        // values come round again soon, so its positions must not be issued any more.
        let g = LocalityGenerator::builder()
            .clock(at(SEQ_MS))
            .build()
            .unwrap();
        let held = hold_a_block(&g);
        let before = g
            .state()
            .fetch_add(LAP_LIMIT << POSITION_SHIFT, Ordering::Relaxed);
        let id = g.next();
        assert_ne!(u64::from(position_of(id)), held & 0xffff_ffff);
        assert_eq!(
            u64::from(position_of(id)),
            ((before >> POSITION_SHIFT) + LAP_LIMIT + 1) & 0xffff_ffff,
            "the id should come from the state word"
        );
    }

    #[test]
    fn two_threads_giving_blocks_up_after_one_id_spread_over_every_partition() {
        // Two threads (their blocks `a` and `b`, driven here in a fixed order) taking turns: each
        // takes one id; then each takes one id (seeing the other's: contended), reserves a block,
        // uses its first id and turns to another generator, giving the rest up. Each round's
        // second block starts right after the first: with the sizes from a multiplicative hash
        // of the position, the second size followed from the first and the 120,000 ids filled
        // the partitions 1.12x and 0.87x.
        let word = AtomicU64::new(12_345 << POSITION_SHIFT);
        let other = AtomicU64::new(0);
        let (a, b) = (ThreadBlock::none(), ThreadBlock::none());
        let take = |t: &ThreadBlock| take_position(&word, t, 1, || 0);
        let mut counts = [0u64; 16];
        let mut count = |(position, mode): (u64, CounterMode)| {
            assert_eq!(mode, CounterMode::Variable);
            counts[(counter_at(position as u32, mode) & 0xF) as usize] += 1;
        };
        for _ in 0..20_000 {
            for t in [&a, &b] {
                count(take(t));
            }
            for t in [&a, &b] {
                count(take(t));
                count(take(t));
                assert!(
                    t.end.get() - t.next.get() >= BLOCK_MIN - 1,
                    "no block reserved"
                );
                take_position(&other, t, 2, || 0);
            }
        }
        let total: u64 = counts.iter().sum();
        let share = |c: &u64| *c as f64 * 16.0 / total as f64;
        let max = counts.iter().map(share).fold(0.0, f64::max);
        let min = counts.iter().map(share).fold(f64::MAX, f64::min);
        // 7,500 ids a partition: evenly random would stay within about 4 % (3.5 standard
        // deviations).
        assert!(
            max <= 1.05 && min >= 0.95,
            "{max:.3} / {min:.3}: {counts:?}"
        );
    }

    #[test]
    fn on_a_frozen_clock_a_held_block_repeats_an_id_after_two_to_the_31_positions() {
        // The documented limit, pinned: a block may still be used while the state word is up to
        // 2^31 positions past it, so on a frozen clock the state word comes round to one of its
        // counters only 2^31 + 2 positions after that id was issued (not 2^32). The jumps of the
        // state word stand for other threads' positions.
        let g = LocalityGenerator::builder()
            .clock(at(SEQ_MS))
            .build()
            .unwrap();
        let held = hold_a_block(&g);
        let now = |g: &LocalityGenerator<ManualClock>| {
            g.state().load(Ordering::Relaxed) >> POSITION_SHIFT
        };
        // Just short of the lap limit: the block is still used.
        let jump = LAP_LIMIT - 2 - (now(&g) - held);
        g.state()
            .fetch_add(jump << POSITION_SHIFT, Ordering::Relaxed);
        let late = g.next();
        assert_eq!(u64::from(position_of(late)), held & 0xffff_ffff);
        let issued_at = now(&g);
        // Another thread takes the position 2^32 after the held one.
        let jump = held + (1 << 32) - 1 - now(&g);
        g.state()
            .fetch_add(jump << POSITION_SHIFT, Ordering::Relaxed);
        let again = std::thread::scope(|s| s.spawn(|| g.next()).join().unwrap());
        assert_eq!(again, late);
        assert_eq!(now(&g) - issued_at, LAP_LIMIT + 2);
    }

    #[test]
    fn block_sizes_are_32_to_63_and_vary() {
        let sizes: std::collections::HashSet<u64> = (0..10_000u64).map(block_size).collect();
        assert_eq!(sizes.len(), 32);
        assert!(sizes.iter().all(|s| (32..=63).contains(s)));
    }

    #[test]
    fn article_example_decodes() {
        let id: LocalityUuid = ARTICLE.parse().unwrap();
        assert_eq!(id.version(), 0xb);
        assert_eq!(id.counter_reversed().unwrap(), 3_488_672_514);
        assert_eq!(id.counter_sequential().unwrap(), 0x20be_0ffc);
        assert_eq!(id.pid().unwrap(), 12_618);
        assert_eq!(id.mac().unwrap(), 0xd53_7a50);
        assert_eq!(id.unix_ms().unwrap(), 1_350_327_498_450);
        assert_eq!(
            format_unix_ns(i128::from(id.unix_ms().unwrap()) * 1_000_000, 3),
            "2012-10-15T18:58:18.450Z"
        );
    }

    #[test]
    fn generator_reproduces_the_article_example() {
        let g = LocalityGenerator::builder()
            .clock(at(1_350_327_498_450))
            .pid(12_618)
            .mac([0, 0, 0x0d, 0x53, 0x7a, 0x50])
            .counter(0xCFF0_EB02u32.wrapping_sub(PRIME))
            .build()
            .unwrap();
        assert_eq!(g.next().to_string(), ARTICLE);
        assert_eq!(g.counter(), 0xCFF0_EB02);
    }

    #[test]
    fn sequential_seed_of_the_article_bucket() {
        assert_eq!(bucket_key(SEQ_MS), "20130428010");
        assert_eq!(sequential_seed(SEQ_MS), 0xf516_6775);
        // The bucket is 10 minutes: 01:00:00.000 to 01:09:59.999.
        let start = SEQ_MS - 4 * 60_000 - 38;
        assert_eq!(bucket_key(start), "20130428010");
        assert_eq!(bucket_key(start - 1), "20130428005");
        assert_eq!(bucket_key(start + BUCKET_MS - 1), "20130428010");
        assert_eq!(bucket_key(start + BUCKET_MS), "20130428011");
        assert_eq!(bucket_key(0), "19700101000");
    }

    #[test]
    fn sequential_mode_counts_by_one_from_seed_plus_one() {
        let g = LocalityGenerator::builder()
            .clock(at(SEQ_MS))
            .pid(0x7a7f)
            .mac_fragment(0xd53_7a50)
            .sequential(true)
            .build()
            .unwrap();
        let ids: Vec<String> = (0..9).map(|_| g.next().to_string()).collect();
        assert_eq!(ids[0], "f5166776-7a7f-bd53-7a50-013e4e2afc26");
        // The article lists f5166777 ... f516677e: the next eight.
        for (i, id) in ids[1..].iter().enumerate() {
            assert_eq!(&id[..8], format!("{:08x}", 0xf516_6777u32 + i as u32));
            assert_eq!(&id[8..], "-7a7f-bd53-7a50-013e4e2afc26");
        }
        assert_eq!(g.mode(), CounterMode::Sequential);
    }

    #[test]
    fn article_variable_examples_step_by_the_prime_below_the_java_bug() {
        // The article's consecutive variable-mode ids. Each has its counter's top bit set, so the
        // Java library forced hex character 6 (counter nibble 6) to `f`; the low 24 bits of
        // consecutive counters still differ by exactly PRIME.
        let ids = [
            "c8c9cef9", "14951cfa", "6f5169fb", "ba2da6fc", "06f8f3fc", "51c441fd", "ac809efe",
            "f75cdbff",
        ];
        let counters: Vec<u32> = ids
            .iter()
            .map(|s| reverse_nibbles(u32::from_str_radix(s, 16).unwrap()))
            .collect();
        for (s, c) in ids.iter().zip(&counters) {
            assert!(c >> 31 == 1 && &s[6..7] == "f", "{s}");
        }
        for w in counters.windows(2) {
            assert_eq!(w[1].wrapping_sub(w[0]) & 0xFF_FFFF, PRIME & 0xFF_FFFF);
        }
    }

    #[test]
    fn top_bit_counters_keep_their_true_nibble() {
        // Counter 0x8123_4567: the Java library would write "7654321f"; the format says 76543218.
        let id = LocalityUuid::from_parts(0x8123_4567, CounterMode::Variable, 1, 2, 3).unwrap();
        assert_eq!(&id.to_string()[..8], "76543218");
    }

    #[test]
    fn variable_mode_steps_by_the_prime_and_wraps() {
        let start = u32::MAX - PRIME + 5; // one step past 2^32 - 1
        let g = LocalityGenerator::builder()
            .clock(at(1))
            .pid(1)
            .mac_fragment(1)
            .counter(start)
            .build()
            .unwrap();
        let a = g.next();
        assert_eq!(a.counter_reversed().unwrap(), 4, "wrapped modulo 2^32");
        let b = g.next();
        assert_eq!(b.counter_reversed().unwrap(), 4 + PRIME);
        assert_ne!(&a.to_string()[..1], &b.to_string()[..1]);
    }

    #[test]
    fn odd_steps_have_full_period_on_small_moduli() {
        // x -> x + PRIME (mod 2^k) visits all 2^k values before repeating, for every k up to 20;
        // the same holds for 2^32 because PRIME is odd (gcd(PRIME, 2^k) = 1 for every k).
        assert_eq!(PRIME % 2, 1);
        for k in 1..=20u32 {
            let m = 1u64 << k;
            let step = u64::from(PRIME) % m;
            let mut seen = vec![false; m as usize];
            let mut x = 12_345 % m;
            for _ in 0..m {
                assert!(!seen[x as usize], "repeat before 2^{k}");
                seen[x as usize] = true;
                x = (x + step) % m;
            }
            assert_eq!(x, 12_345 % m, "back at the start after exactly 2^{k}");
        }
    }

    #[test]
    fn switching_modes() {
        let clock = at(SEQ_MS);
        let g = LocalityGenerator::builder()
            .clock(clock.clone())
            .pid(3)
            .mac_fragment(4)
            .counter(100)
            .build()
            .unwrap();
        assert_eq!(g.mode(), CounterMode::Variable);
        assert_eq!(g.next().counter_reversed().unwrap(), 100 + PRIME);
        g.use_sequential();
        g.use_sequential(); // no effect while sequential
        assert_eq!(g.next().counter_sequential().unwrap(), 0xf516_6776);
        assert_eq!(g.next().counter_sequential().unwrap(), 0xf516_6777);
        // Back to variable: continues from where variable mode was left.
        g.use_variable();
        assert_eq!(g.next().counter_reversed().unwrap(), 100 + PRIME + PRIME);
        // Re-entering sequential mode in the same bucket continues, never repeats.
        g.use_sequential();
        assert_eq!(g.next().counter_sequential().unwrap(), 0xf516_6778);
        // In a new bucket it reseeds.
        g.use_variable();
        clock.advance(BUCKET_MS * 1_000_000);
        g.use_sequential();
        let seed = sequential_seed(SEQ_MS + BUCKET_MS);
        assert_eq!(g.next().counter_sequential().unwrap(), seed.wrapping_add(1));
    }

    #[test]
    fn builder_refuses_out_of_range_values() {
        let e = LocalityGenerator::builder()
            .pid(65_536)
            .build()
            .unwrap_err();
        assert_eq!(e, Error::PidOutOfRange { pid: 65_536 });
        assert!(e.to_string().contains("from 0 to 65535"), "{e}");
        assert!(LocalityGenerator::builder().pid(65_535).build().is_ok());
        let e = LocalityGenerator::builder()
            .mac_fragment(1 << 28)
            .build()
            .unwrap_err();
        assert_eq!(e, Error::MacFragmentOutOfRange { fragment: 1 << 28 });
        assert!(e.to_string().contains("0xfffffff"), "{e}");
        let e = LocalityGenerator::builder()
            .mac_fragment(u64::MAX)
            .build()
            .unwrap_err();
        assert!(matches!(e, Error::MacFragmentOutOfRange { .. }));
    }

    #[test]
    fn from_parts_refuses_what_does_not_fit() {
        let e = LocalityUuid::from_parts(0, CounterMode::Variable, 0, 1 << 28, 0).unwrap_err();
        assert!(matches!(
            e,
            Error::MacFragmentOutOfRange {
                fragment: 0x1000_0000
            }
        ));
        let e = LocalityUuid::from_parts(0, CounterMode::Variable, 0, 0, 1 << 48).unwrap_err();
        assert!(
            matches!(e, Error::TimeOutOfRange { year: 10889, .. }),
            "{e:?}"
        );
        assert!(LocalityUuid::from_parts(0, CounterMode::Variable, 0, 0, (1 << 48) - 1).is_ok());
    }

    #[test]
    fn fields_of_other_versions_are_refused() {
        let v4: LocalityUuid = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80".parse().unwrap();
        assert_eq!(v4.version(), 4);
        let expect = |r: Result<u64, Error>| {
            let e = r.unwrap_err();
            assert!(
                matches!(&e, Error::WrongVersion { expected: 0xb, found: 4, scheme, .. } if scheme == "locality"),
                "{e:?}"
            );
            assert!(
                e.to_string()
                    .contains("not the version b that locality requires"),
                "{e}"
            );
        };
        expect(v4.counter_reversed().map(u64::from));
        expect(v4.counter_sequential().map(u64::from));
        expect(v4.pid().map(u64::from));
        expect(v4.mac().map(u64::from));
        expect(v4.unix_ms());
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("00-1B-4D-53-7A-50").unwrap(),
            [0, 0x1b, 0x4d, 0x53, 0x7a, 0x50]
        );
        assert_eq!(
            parse_mac(" 00:1b:4d:53:7a:50\n").unwrap(),
            [0, 0x1b, 0x4d, 0x53, 0x7a, 0x50]
        );
        for (bad, needle) in [
            ("", "1 groups"),
            ("00:1b:4d:53:7a", "5 groups"),
            ("00:1b:4d:53:7a:50:01", "7 groups"),
            ("00:1b:4d:53:7a:5", "group 6"),
            ("00:1b:4d:53:7a:5g", "group 6"),
            ("00:1b:4d:53:7a:+5", "group 6"),
            ("00:1b-4d:53:7a:50", "2 groups"),
        ] {
            let e = parse_mac(bad).unwrap_err();
            assert!(matches!(e, Error::InvalidMac { .. }), "{bad}");
            let msg = e.to_string();
            assert!(
                msg.contains(needle) && msg.contains("for example"),
                "{bad}: {msg}"
            );
        }
    }

    #[test]
    fn system_mac_is_never_zero_or_loopback() {
        if let Some(m) = system_mac() {
            assert_ne!(m, [0; 6]);
        }
        let g = LocalityGenerator::new();
        assert_eq!(g.mac(), system_mac().map_or(0, mac_fragment));
        assert_eq!(g.pid(), (std::process::id() % 65_536) as u16);
        assert!(format!("{g:?}").contains("Variable"));
    }

    proptest! {
        #[test]
        fn bytes_text_bytes_round_trip(bytes in any::<[u8; 16]>()) {
            let id = LocalityUuid::from_bytes(bytes);
            let text = id.to_string();
            let back: LocalityUuid = text.parse().unwrap();
            prop_assert_eq!(back, id);
            prop_assert_eq!(back.to_bytes(), bytes);
            let upper: LocalityUuid = text.to_uppercase().parse().unwrap();
            prop_assert_eq!(upper, id);
            prop_assert_eq!(LocalityUuid::from_slice(&bytes).unwrap(), id);
        }

        #[test]
        fn fields_round_trip(counter in any::<u32>(), seq in any::<bool>(), pid in any::<u16>(),
                             mac in 0..=MAX_MAC_FRAGMENT, ms in 0..(1u64 << 48)) {
            let mode = if seq { CounterMode::Sequential } else { CounterMode::Variable };
            let id = LocalityUuid::from_parts(counter, mode, pid, mac, ms).unwrap();
            let read = if seq { id.counter_sequential() } else { id.counter_reversed() };
            prop_assert_eq!(read.unwrap(), counter);
            prop_assert_eq!(id.pid().unwrap(), pid);
            prop_assert_eq!(id.mac().unwrap(), mac);
            prop_assert_eq!(id.unix_ms().unwrap(), ms);
            prop_assert_eq!(id.version(), VERSION);
        }

        #[test]
        fn reverse_nibbles_is_an_involution(x in any::<u32>()) {
            prop_assert_eq!(reverse_nibbles(reverse_nibbles(x)), x);
            let s = format!("{x:08x}");
            let r: String = s.chars().rev().collect();
            prop_assert_eq!(format!("{:08x}", reverse_nibbles(x)), r);
        }
    }
}
