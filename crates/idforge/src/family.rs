//! [`IdFamily`]: which typed id a scheme's ids are. A foundation module (errors name families),
//! re-exported as `idforge::ids::IdFamily` and `idforge::IdFamily`.

use std::fmt;

/// The family of a scheme's ids: which typed id holds them.
///
/// ```
/// use idforge::{IdFamily, Scheme};
/// assert_eq!(Scheme::Uuid7.family(), IdFamily::Uuid);
/// assert_eq!(Scheme::Snowflake.family(), IdFamily::Id64);
/// assert_eq!(Scheme::GlobalId128.family(), IdFamily::Id128);
/// assert_eq!(Scheme::NanoTs.family(), IdFamily::NanoTs);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdFamily {
    /// 128-bit UUIDs ([`UuidId`](crate::UuidId)).
    Uuid,
    /// 64-bit integers ([`Id64`](crate::Id64)).
    Id64,
    /// 128-bit integers that are not UUIDs ([`Id128`](crate::Id128)).
    Id128,
    /// Nanosecond timestamps ([`NanoTs`](crate::NanoTs)).
    NanoTs,
}

impl IdFamily {
    /// The name of the type holding ids of this family (`"UuidId"`, `"Id64"`, ...).
    pub fn type_name(self) -> &'static str {
        match self {
            IdFamily::Uuid => "UuidId",
            IdFamily::Id64 => "Id64",
            IdFamily::Id128 => "Id128",
            IdFamily::NanoTs => "NanoTs",
        }
    }

    /// The [`Generator`](crate::Generator) method that returns ids of this family.
    pub fn method(self) -> &'static str {
        match self {
            IdFamily::Uuid => "next_uuid",
            IdFamily::Id64 => "next_id64",
            IdFamily::Id128 => "next_id128",
            IdFamily::NanoTs => "next_nanots",
        }
    }
}

impl fmt::Display for IdFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdFamily::Uuid => "UUIDs",
            IdFamily::Id64 => "64-bit integer ids",
            IdFamily::Id128 => "128-bit integer ids",
            IdFamily::NanoTs => "nanosecond timestamps",
        })
    }
}
