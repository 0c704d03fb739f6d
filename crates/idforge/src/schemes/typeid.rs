//! `typeid`: TypeID (<https://github.com/jetify-com/typeid>, spec 0.3.0), a type prefix and a
//! UUIDv7 in lowercase Crockford base32, on idforge's sequencer.
//!
//! ```text
//!  user_01h455vb4pex5vsknk084sn02q
//!  prefix  suffix: the UUID's 128 bits after two zero bits, 26 characters, the first at most 7
//!  unix_ts_ms(48) | ver=7(4) | counter_hi(12) | var=0b10(2) | counter_lo(4) | random(58)
//! ```
//!
//! As the spec defines it: the prefix is empty or at most 63 characters of `a-z` and `_` that
//! start and end with a letter (`^([a-z]([a-z_]{0,61}[a-z])?)?$`), followed by `_` unless it is
//! empty; the suffix is the UUID's 128 bits, most significant first, after two zero bits, in
//! 26 characters of `0123456789abcdefghjkmnpqrstvwxyz` ([`Format::TypeId`]). Decoding is strict
//! as the spec's `invalid.yml` asks: lowercase only, no look-alikes, no hyphens, exactly 26
//! characters, a first character of at most `7`, and the separator never without a prefix. A
//! decoded suffix may hold any UUID (the spec's `valid.yml` has the nil and max UUIDs);
//! generated ones are UUIDv7s, as the spec requires.
//!
//! **What idforge adds.** The UUID is [`uuid7`](super::uuid7)'s layout, from the sequencer: a
//! 16-bit counter per millisecond (RFC 9562 §6.2, method 1) and 58 random bits, so TypeIDs of
//! one generator, of the threads of a process, and of the processes sharing a state file
//! (`idforge gen typeid --shared`, its own file `typeid.state`, apart from uuid7's) are unique
//! and increasing by the counter, not by chance. The prefix is text only: it is not in the
//! 128 bits, so ids of two prefixes from one generator are still distinct UUIDs, and the same
//! UUID with two prefixes is two TypeIDs. The prefix is chosen when ids are written
//! (`--prefix user`, `?prefix=user`); text sorts like the value within one prefix.
//!
//! ```
//! use idforge::schemes::typeid::TypeId;
//! let t: TypeId = "prefix_01h455vb4pex5vsknk084sn02q".parse()?; // valid.yml's valid-uuidv7
//! assert_eq!(t.prefix(), "prefix");
//! assert_eq!(t.uuid(), 0x01890a5d_ac96_774b_bcce_b302099a8057);
//! assert_eq!(t.to_string(), "prefix_01h455vb4pex5vsknk084sn02q");
//! assert!("PREFIX_01h455vb4pex5vsknk084sn02q".parse::<TypeId>().is_err());
//! let id = idforge::schemes::typeid::typeid("user")?;
//! assert!(id.to_string().starts_with("user_0"));
//! # Ok::<(), idforge::Error>(())
//! ```

use std::sync::OnceLock;

use crate::error::Error;
use crate::generator::Generator;
use crate::layout::Layout;
use crate::schemes::Scheme;
use crate::text::{self, TypeIdPrefix};

/// The TypeID layout: uuid7's.
///
/// ```
/// let l = idforge::schemes::typeid::layout();
/// assert_eq!(l.name, "typeid");
/// assert_eq!(l.diagram(), idforge::Scheme::Uuid7.layout().diagram()); // uuid7's bits
/// ```
pub fn layout() -> Layout {
    let mut l = super::uuid7::layout();
    l.name = "typeid".into();
    l
}

/// A TypeID: a checked prefix and a 128-bit UUID.
///
/// ```
/// use idforge::schemes::typeid::TypeId;
/// // A TypeID of the spec (prefix "user") and the UUID its suffix holds.
/// let id: TypeId = "user_01h455vb4pex5vsknk084sn02q".parse()?;
/// assert_eq!(id.prefix(), "user");
/// assert_eq!(id.uuid(), 0x01890a5d_ac96_774b_bcce_b302099a8057);
/// assert!("User_01h455vb4pex5vsknk084sn02q".parse::<TypeId>().is_err()); // prefixes are lowercase
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeId {
    prefix: TypeIdPrefix,
    uuid: u128,
}

impl TypeId {
    /// A TypeID of `prefix` (checked) and `uuid`.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for a prefix the spec does not allow.
    ///
    /// ```
    /// use idforge::schemes::typeid::TypeId;
    /// let id = TypeId::new("user", 0x01890a5d_ac96_774b_bcce_b302099a8057)?;
    /// assert_eq!(id.to_string(), "user_01h455vb4pex5vsknk084sn02q");
    /// assert!(matches!(TypeId::new("user-1", 0), Err(idforge::Error::InvalidFormat(_))));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(prefix: &str, uuid: u128) -> Result<TypeId, Error> {
        Ok(TypeId {
            prefix: TypeIdPrefix::new(prefix)?,
            uuid,
        })
    }
    /// The prefix (possibly empty).
    ///
    /// ```
    /// use idforge::schemes::typeid::TypeId;
    /// assert_eq!(TypeId::new("", 1)?.prefix(), "");
    /// assert_eq!(TypeId::new("", 1)?.to_string(), "00000000000000000000000001"); // no separator
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn prefix(&self) -> &str {
        self.prefix.as_str()
    }
    /// The UUID the suffix holds.
    ///
    /// ```
    /// use idforge::schemes::typeid::typeid;
    /// let id = typeid("order")?;
    /// assert_eq!((id.uuid() >> 76) & 0xF, 7); // a UUIDv7
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn uuid(&self) -> u128 {
        self.uuid
    }
    /// The suffix: 26 characters.
    ///
    /// ```
    /// use idforge::schemes::typeid::TypeId;
    /// let id = TypeId::new("user", 0x01890a5d_ac96_774b_bcce_b302099a8057)?;
    /// assert_eq!(id.suffix().as_str(), "01h455vb4pex5vsknk084sn02q");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn suffix(&self) -> text::Text {
        text::encode(self.uuid, 128, text::Format::TypeId)
    }
}

impl std::fmt::Display for TypeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.prefix.encode(self.uuid).as_str())
    }
}

impl std::str::FromStr for TypeId {
    type Err = Error;
    /// Strict, as the spec's `invalid.yml` asks: the text as given, not trimmed.
    fn from_str(s: &str) -> Result<TypeId, Error> {
        let (prefix, uuid) = text::parse_typeid(s, s)?;
        TypeId::new(prefix, uuid)
    }
}

/// A TypeID of `prefix` from the process-wide generator (in-process stamp; for ids unique across
/// the processes of a host, open `typeid` with a state file: `Generator::host_wide`).
///
/// # Errors
/// A prefix the spec does not allow ([`Error::InvalidFormat`]); otherwise as [`crate::uuid7()`].
///
/// ```
/// use idforge::schemes::typeid::typeid;
/// let (a, b) = (typeid("user")?, typeid("user")?);
/// assert!(a.uuid() < b.uuid());
/// assert!(a.to_string().starts_with("user_0"));
/// assert!(typeid("User").is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn typeid(prefix: &str) -> Result<TypeId, Error> {
    static GEN: OnceLock<Generator> = OnceLock::new();
    let prefix = TypeIdPrefix::new(prefix)?;
    let g = match GEN.get() {
        Some(g) => g,
        None => {
            let g = Generator::new(&Scheme::TypeId, None)?;
            GEN.get_or_init(|| g)
        }
    };
    Ok(TypeId {
        prefix,
        uuid: g.next()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_readme_examples() {
        // spec/README.md's examples table: one UUID under several prefixes.
        let suffix = "01h5fskfsk4fpeqwnsyz5hj55t";
        for p in ["", "user", "my_type", "a_b_c", "my__type", "a"] {
            let t = if p.is_empty() {
                suffix.to_string()
            } else {
                format!("{p}_{suffix}")
            };
            let id: TypeId = t.parse().unwrap();
            assert_eq!(id.prefix(), p);
            assert_eq!(id.to_string(), t);
            assert_eq!(id.suffix().as_str(), suffix);
        }
        let max = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk";
        assert_eq!(max.len(), 63);
        let long = format!("{max}_{suffix}");
        assert_eq!(long.parse::<TypeId>().unwrap().to_string(), long);
        for bad in [
            "PREFIX_01h5fskfsk4fpeqwnsyz5hj55t",
            "12345_01h5fskfsk4fpeqwnsyz5hj55t",
            "_prefix_01h5fskfsk4fpeqwnsyz5hj55t",
            "prefix__01h5fskfsk4fpeqwnsyz5hj55t",
            "prefix_0123456789ABCDEFGHJKMNPQRS",
            "prefix_8zzzzzzzzzzzzzzzzzzzzzzzzz",
        ] {
            assert!(bad.parse::<TypeId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_layout_is_uuid7s() {
        let (a, b) = (layout(), super::super::uuid7::layout());
        assert_eq!(a.spec(), b.spec());
        assert_eq!(a.name, "typeid");
    }
}
