//! The state file's first page: its layout, the fingerprint of what its stamp means, the header
//! a new file starts with, and the checks of an existing one.

use std::path::Path;
use std::time::Duration;

use super::PAGE;
use crate::error::{Error, StateFileError};
use crate::sequencer::{OnExhausted, Policy, Timebase};

pub(super) const MAGIC: [u8; 8] = *b"IDFORGE\x01";
pub(super) const VERSION: u32 = 1;
pub(super) const OFF_CHECKSUM: usize = 16;
pub(super) const OFF_STAMP: usize = 32;
pub(super) const OFF_PENDING: usize = 40;
pub(super) const OFF_DURABLE: usize = 48;
pub(super) const OFF_BOOT: usize = 56;
pub(super) const OFF_FINGERPRINT: usize = 64;
pub(super) const FINGERPRINT_LEN: usize = 256;

/// FNV-1a, 64-bit: a stable checksum (std's hashers may change between Rust releases).
pub(super) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// How a policy is written in a fingerprint: every process sharing a file must agree on it.
pub fn policy_text(policy: &Policy) -> String {
    let lead = if policy.max_lead == Duration::MAX {
        "unbounded".to_string()
    } else {
        format!("{}ns", policy.max_lead.as_nanos())
    };
    format!(
        "{}/{lead}/{}",
        match policy.on_exhausted {
            OnExhausted::Wait => "wait",
            OnExhausted::RunAhead => "run-ahead",
        },
        match policy.on_clock_behind {
            crate::sequencer::OnClockBehind::Wait => "wait",
            crate::sequencer::OnClockBehind::Fail => "fail",
        }
    )
}

/// The fingerprint of a generator: what a state file's stamp means, and the policy every process
/// issuing from it follows.
pub fn fingerprint(
    scheme: &str,
    layout_spec: &str,
    tb: &Timebase,
    node: u64,
    durable: bool,
    policy: &Policy,
) -> String {
    format!(
        "scheme={scheme} layout={layout_spec} tick={}ns epoch={}ns counter={} node={node} durable={} policy={}",
        tb.tick_ns,
        tb.epoch_ns,
        tb.counter_bits,
        if durable { "yes" } else { "no" },
        policy_text(policy),
    )
}

/// The first page of a new state file for `fingerprint` (at most 256 bytes).
pub fn state_header(fingerprint: &str) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    page[0..8].copy_from_slice(&MAGIC);
    page[8..12].copy_from_slice(&VERSION.to_ne_bytes());
    page[12..16].copy_from_slice(&(PAGE as u32).to_ne_bytes());
    let fp = &mut page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN];
    // Longer fingerprints are refused by `HostStamp::open`; here they are cut, never a panic.
    let n = fingerprint.len().min(FINGERPRINT_LEN);
    fp[..n].copy_from_slice(&fingerprint.as_bytes()[..n]);
    let sum = fnv1a(&[
        &page[0..16],
        &page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN],
    ]);
    page[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_ne_bytes());
    page
}

/// Checks a state file's first page against the fingerprint a generator expects: magic,
/// version, checksum, fingerprint, each with its own [`StateFileError`]. `path` is for messages.
///
/// # Errors
/// [`Error::StateFile`] with [`StateFileError::Truncated`] when `page` is shorter than 4096
/// bytes, `Foreign` when the magic bytes are not idforge's, `Version` for another format version,
/// `Corrupt` when the checksum does not match, `PolicyMismatch` when the fingerprint differs
/// only in its policy, and `Mismatch` when it differs otherwise.
///
/// ```
/// use idforge::shm::{check_header, state_header};
/// use std::path::Path;
/// let page = state_header("scheme=a");
/// assert!(check_header(Path::new("a.state"), &page, "scheme=a").is_ok());
/// assert!(check_header(Path::new("a.state"), &page, "scheme=b").is_err());
/// assert!(check_header(Path::new("a.state"), &page[..100], "scheme=a").is_err());
/// ```
pub fn check_header(path: &Path, page: &[u8], fingerprint: &str) -> Result<(), Error> {
    let p = || path.display().to_string();
    if page.len() < PAGE {
        return Err(Error::StateFile(StateFileError::Truncated {
            path: p(),
            len: page.len() as u64,
            expected: PAGE as u64,
        }));
    }
    if page[0..8] != MAGIC {
        return Err(Error::StateFile(StateFileError::Foreign { path: p() }));
    }
    let mut v = [0u8; 4];
    v.copy_from_slice(&page[8..12]);
    let version = u32::from_ne_bytes(v);
    if version != VERSION {
        return Err(Error::StateFile(StateFileError::Version {
            path: p(),
            found: version,
            expected: VERSION,
        }));
    }
    let fp = &page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN];
    let mut s = [0u8; 8];
    s.copy_from_slice(&page[OFF_CHECKSUM..OFF_CHECKSUM + 8]);
    if u64::from_ne_bytes(s) != fnv1a(&[&page[0..16], fp]) {
        return Err(Error::StateFile(StateFileError::Corrupt { path: p() }));
    }
    let end = fp.iter().position(|&b| b == 0).unwrap_or(fp.len());
    let found = String::from_utf8_lossy(&fp[..end]).into_owned();
    if found != fingerprint {
        if let (Some((a, pa)), Some((b, pb))) = (
            found.split_once(" policy="),
            fingerprint.split_once(" policy="),
        ) {
            if a == b {
                return Err(Error::StateFile(StateFileError::PolicyMismatch {
                    path: p(),
                    expected: pb.to_string(),
                    found: pa.to_string(),
                }));
            }
        }
        return Err(Error::StateFile(StateFileError::Mismatch {
            path: p(),
            expected: fingerprint.to_string(),
            found,
        }));
    }
    Ok(())
}
