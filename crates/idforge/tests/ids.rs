//! Typed ids: text round trips, ordering, typed generation and its refusals; with the `serde`
//! feature the exact JSON shapes and the binary forms, with `uuid` the `uuid::Uuid` conversions.

use idforge::{
    Error, Generator, Id128, Id64, IdFamily, Layout, ManualClock, NanoTs, Scheme, UuidId,
};
use proptest::prelude::*;

proptest! {
    #[test]
    fn uuid_text_round_trips(v in any::<u128>()) {
        let id = UuidId::from(v);
        let t = id.to_string();
        prop_assert_eq!(t.len(), 36);
        prop_assert_eq!(&t, &t.to_lowercase());
        prop_assert_eq!(t.parse::<UuidId>().unwrap(), id);
        prop_assert_eq!(t.to_uppercase().parse::<UuidId>().unwrap(), id);
        prop_assert_eq!(format!("{v:032x}").parse::<UuidId>().unwrap(), id);
        prop_assert_eq!(UuidId::from_bytes(id.to_bytes()), id);
        prop_assert_eq!(u128::from(id), v);
    }

    #[test]
    fn id64_text_round_trips(v in any::<u64>()) {
        let id = Id64::from(v);
        prop_assert_eq!(id.to_string(), v.to_string());
        prop_assert_eq!(id.to_string().parse::<Id64>().unwrap(), id);
        prop_assert_eq!(format!("0x{v:x}").parse::<Id64>().unwrap(), id);
        prop_assert_eq!(Id64::from_bytes(id.to_bytes()), id);
        prop_assert_eq!(u64::from(id), v);
    }

    #[test]
    fn id128_text_round_trips(v in any::<u128>()) {
        let id = Id128::from(v);
        prop_assert_eq!(id.to_string(), v.to_string());
        prop_assert_eq!(id.to_string().parse::<Id128>().unwrap(), id);
        prop_assert_eq!(Id128::from_bytes(id.to_bytes()), id);
        prop_assert_eq!(id.as_u128(), v);
    }

    #[test]
    fn nanots_text_round_trips(v in any::<u64>()) {
        let ts = NanoTs::from(v);
        prop_assert_eq!(ts.to_string(), v.to_string());
        prop_assert_eq!(ts.to_string().parse::<NanoTs>().unwrap(), ts);
        prop_assert_eq!(ts.to_time_text().parse::<NanoTs>().unwrap(), ts);
        prop_assert_eq!(NanoTs::from_bytes(ts.to_bytes()), ts);
    }

    #[test]
    fn typed_ids_order_like_their_values(a in any::<u128>(), b in any::<u128>()) {
        prop_assert_eq!(UuidId::from(a).cmp(&UuidId::from(b)), a.cmp(&b));
        prop_assert_eq!(Id128::from(a).cmp(&Id128::from(b)), a.cmp(&b));
        let (x, y) = (a as u64, b as u64);
        prop_assert_eq!(Id64::from(x).cmp(&Id64::from(y)), x.cmp(&y));
        prop_assert_eq!(NanoTs::from(x).cmp(&NanoTs::from(y)), x.cmp(&y));
        // Big-endian bytes sort like the values too.
        prop_assert_eq!(UuidId::from(a).to_bytes().cmp(&UuidId::from(b).to_bytes()), a.cmp(&b));
        prop_assert_eq!(Id64::from(x).to_bytes().cmp(&Id64::from(y).to_bytes()), x.cmp(&y));
    }

    #[test]
    fn parsing_never_panics(s in ".{0,48}") {
        let _ = s.parse::<UuidId>();
        let _ = s.parse::<Id64>();
        let _ = s.parse::<Id128>();
        let _ = s.parse::<NanoTs>();
    }
}

#[test]
fn malformed_text_is_an_idforge_error() {
    assert!(matches!(
        "12".parse::<UuidId>(),
        Err(Error::MalformedId { .. })
    ));
    assert!(matches!(
        "18446744073709551616".parse::<Id64>(),
        Err(Error::MalformedId { .. })
    ));
    assert!(matches!(
        "12x".parse::<Id128>(),
        Err(Error::MalformedId { .. })
    ));
    assert!("2021-13-28T14:07:02".parse::<NanoTs>().is_err());
    assert_eq!(
        format!("{:?}", Id64::from(5)),
        "Id64(5)",
        "Debug names the type"
    );
}

fn on_manual_clock(scheme: &Scheme, node: Option<u64>) -> Generator<ManualClock> {
    Generator::with_clock(
        scheme,
        node,
        ManualClock::new(1_700_000_000_000_000_000),
        scheme.default_policy(),
    )
    .unwrap()
}

#[test]
fn typed_generation_matches_the_family_of_every_preset() {
    for scheme in Scheme::PRESETS
        .iter()
        .filter(|s| **s != Scheme::UProtocolV8)
    {
        let g = on_manual_clock(scheme, scheme.needs_node().then_some(3));
        let raw = g.next().unwrap();
        match scheme.family() {
            IdFamily::Uuid => {
                let id = g.next_uuid().unwrap();
                assert!(id.as_u128() > raw);
                assert_eq!(id.version(), 7);
                assert_eq!(id.to_string().parse::<UuidId>().unwrap(), id);
            }
            IdFamily::Id64 => {
                let id = g.next_id64().unwrap();
                assert!(u128::from(id.as_u64()) > raw);
                assert_eq!(g.layout().decode(id.as_u64().into()).node, 3);
            }
            IdFamily::Id128 => assert!(g.next_id128().unwrap().as_u128() > raw),
            IdFamily::NanoTs => assert!(u128::from(g.next_nanots().unwrap().as_u64()) > raw),
            f => panic!("unexpected family {f:?}"),
        }
    }
    let v8 = idforge::schemes::uprotocol_v8::generator()
        .next_uuid()
        .unwrap();
    assert_eq!(v8.version(), 8);
}

#[test]
fn custom_layouts_are_integer_ids_of_their_width() {
    let narrow = Scheme::Custom(Layout::parse_spec("time:41,node:10,counter:12").unwrap());
    let wide = Scheme::Custom(Layout::parse_spec("node:20,time:90,counter:17").unwrap());
    assert_eq!(narrow.family(), IdFamily::Id64);
    assert_eq!(wide.family(), IdFamily::Id128);
    let g = on_manual_clock(&wide, Some(1));
    let a = g.next_id128().unwrap();
    assert!(g.next_id::<Id128>().unwrap() > a);
}

#[test]
fn a_typed_id_of_the_wrong_family_is_refused_and_nothing_is_issued() {
    let g = on_manual_clock(&Scheme::Snowflake, Some(1));
    let before = g.next().unwrap();
    let e = g.next_uuid().unwrap_err();
    assert_eq!(
        e,
        Error::WrongIdType {
            scheme: "snowflake".into(),
            requested: IdFamily::Uuid,
            found: IdFamily::Id64,
        }
    );
    assert_eq!(
        e.to_string(),
        "snowflake ids are 64-bit integer ids, not UUIDs: use Generator::next_id64() for a Id64"
    );
    assert!(g.next_id128().is_err());
    assert!(g.next_nanots().is_err());
    // The refusals took no stamp: the next id is the one right after `before`.
    let after = g.next_id64().unwrap();
    assert_eq!(g.layout().decode(after.as_u64().into()).counter, {
        g.layout().decode(before).counter + 1
    });

    let u = on_manual_clock(&Scheme::Uuid7, None);
    assert!(matches!(
        u.next_id64(),
        Err(Error::WrongIdType {
            found: IdFamily::Uuid,
            ..
        })
    ));
    let n = on_manual_clock(&Scheme::NanoTs, None);
    assert!(n.next_id64().is_err(), "nanots values are NanoTs, not Id64");
}

#[test]
fn nanots_host_generates_typed_values() {
    use idforge::schemes::nanots::{HostGenerator, POLICY};
    // A frozen clock: the second value runs ahead by one tick, as POLICY allows.
    let g = HostGenerator::with_clock(7, 2, ManualClock::new(1_000), POLICY).unwrap();
    let a = g.next_nanots().unwrap();
    assert_eq!(a.as_u64() % 100, 7);
    assert!(g.next_nanots().unwrap() > a);
}

#[cfg(feature = "serde")]
mod serde_forms {
    use super::*;
    use serde_test::{assert_de_tokens, assert_tokens, Configure, Token};

    #[test]
    fn json_carries_integer_ids_as_strings_and_uuids_as_text() {
        let id = Id64::from(1_541_815_603_606_036_480);
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"1541815603606036480\""
        );
        let wide = Id128::from(u128::MAX);
        assert_eq!(
            serde_json::to_string(&wide).unwrap(),
            "\"340282366920938463463374607431768211455\""
        );
        let ts = NanoTs::from(1_640_700_422_954_100_128);
        assert_eq!(
            serde_json::to_string(&ts).unwrap(),
            "\"1640700422954100128\""
        );
        let u: UuidId = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F".parse().unwrap();
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            "\"017f22e2-79b0-7cc3-98c4-dc0c0c07398f\""
        );
        assert_eq!(
            serde_json::to_value([id]).unwrap(),
            serde_json::json!(["1541815603606036480"])
        );
    }

    #[test]
    fn json_reads_strings_numbers_and_other_text_forms() {
        let id = Id64::from(1_541_815_603_606_036_480);
        assert_eq!(
            serde_json::from_str::<Id64>("\"1541815603606036480\"").unwrap(),
            id
        );
        assert_eq!(
            serde_json::from_str::<Id64>("1541815603606036480").unwrap(),
            id
        );
        assert_eq!(
            serde_json::from_str::<Id64>("\"0x1565a11f6217a000\"").unwrap(),
            id
        );
        assert!(serde_json::from_str::<Id64>("-1").is_err());
        assert!(serde_json::from_str::<Id64>("\"18446744073709551616\"").is_err());
        // An Id128 above 2^64 as a JSON number reaches serde as a rounded float: refused with
        // advice, never read as a nearby value. As a string it reads exactly.
        let big = "340282366920938463463374607431768211455";
        let e = serde_json::from_str::<Id128>(big).unwrap_err().to_string();
        assert!(
            e.contains("arrive rounded") && e.contains("as a string"),
            "{e}"
        );
        assert_eq!(
            serde_json::from_str::<Id128>(&format!("\"{big}\"")).unwrap(),
            Id128::from(u128::MAX)
        );
        assert_eq!(
            serde_json::from_str::<Id128>("18446744073709551615").unwrap(),
            Id128::from(u128::from(u64::MAX))
        );
        assert_eq!(
            serde_json::from_str::<NanoTs>("\"2021-12-28T14:07:02.954100128\"").unwrap(),
            NanoTs::from(1_640_700_422_954_100_128)
        );
        assert!(serde_json::from_str::<UuidId>("\"12\"").is_err());
        let e = serde_json::from_str::<UuidId>("\"0188e6f2-a1b2-7c3d-8e4f-5a6b7c8d9e0g\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("position 35"), "{e}");
    }

    #[test]
    fn generated_ids_round_trip_through_json() {
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Row {
            id: UuidId,
            order: Id64,
            wide: Id128,
            at: NanoTs,
        }
        let row = Row {
            id: on_manual_clock(&Scheme::Uuid7, None).next_uuid().unwrap(),
            order: on_manual_clock(&Scheme::GlobalId, Some(3))
                .next_id64()
                .unwrap(),
            wide: on_manual_clock(&Scheme::GlobalId128, Some(3))
                .next_id128()
                .unwrap(),
            at: on_manual_clock(&Scheme::NanoTs, None)
                .next_nanots()
                .unwrap(),
        };
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        for field in ["id", "order", "wide", "at"] {
            assert!(v[field].is_string(), "{field} is not a string in {json}");
        }
    }

    #[test]
    fn readable_formats_get_text() {
        assert_tokens(&Id64::from(42).readable(), &[Token::Str("42")]);
        assert_tokens(&NanoTs::from(42).readable(), &[Token::Str("42")]);
        assert_tokens(
            &Id128::from(1u128 << 100).readable(),
            &[Token::Str("1267650600228229401496703205376")],
        );
        assert_tokens(
            &UuidId::from(0x0188_0000_0000_7000_8000_0000_0000_0001).readable(),
            &[Token::Str("01880000-0000-7000-8000-000000000001")],
        );
        assert_de_tokens(&Id64::from(42).readable(), &[Token::U64(42)]);
    }

    #[test]
    fn binary_formats_get_numbers_and_bytes() {
        assert_tokens(&Id64::from(42).compact(), &[Token::U64(42)]);
        assert_tokens(&NanoTs::from(u64::MAX).compact(), &[Token::U64(u64::MAX)]);
        let u = UuidId::from(0x0188_0000_0000_7000_8000_0000_0000_0001);
        assert_tokens(
            &u.compact(),
            &[Token::Bytes(&[
                0x01, 0x88, 0, 0, 0, 0, 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, 1,
            ])],
        );
        // serde_test has no u128 token: Id128 goes through a probe of its own.
        assert_eq!(
            probe::serialize(&Id128::from(u128::MAX)),
            probe::Seen::U128(u128::MAX)
        );
        assert_eq!(
            probe::serialize(&Id64::from(7)),
            probe::Seen::U64(7),
            "the probe sees what serde_test sees"
        );
    }

    /// A binary (not human-readable) serializer that records the one primitive it is given.
    mod probe {
        use serde::ser::{self, Impossible, Serialize};
        use std::fmt;

        #[derive(Debug, PartialEq)]
        pub enum Seen {
            U64(u64),
            U128(u128),
        }

        #[derive(Debug)]
        pub struct Unsupported;
        impl fmt::Display for Unsupported {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("not a u64 or u128")
            }
        }
        impl std::error::Error for Unsupported {}
        impl ser::Error for Unsupported {
            fn custom<T: fmt::Display>(_: T) -> Self {
                Unsupported
            }
        }

        pub fn serialize<T: Serialize>(v: &T) -> Seen {
            v.serialize(Probe).unwrap()
        }

        struct Probe;

        macro_rules! refuse {
            ($($name:ident($($t:ty),*)),* $(,)?) => {
                $(fn $name(self, $(_: $t),*) -> Result<Seen, Unsupported> { Err(Unsupported) })*
            };
        }

        impl ser::Serializer for Probe {
            type Ok = Seen;
            type Error = Unsupported;
            type SerializeSeq = Impossible<Seen, Unsupported>;
            type SerializeTuple = Impossible<Seen, Unsupported>;
            type SerializeTupleStruct = Impossible<Seen, Unsupported>;
            type SerializeTupleVariant = Impossible<Seen, Unsupported>;
            type SerializeMap = Impossible<Seen, Unsupported>;
            type SerializeStruct = Impossible<Seen, Unsupported>;
            type SerializeStructVariant = Impossible<Seen, Unsupported>;

            fn is_human_readable(&self) -> bool {
                false
            }
            fn serialize_u64(self, v: u64) -> Result<Seen, Unsupported> {
                Ok(Seen::U64(v))
            }
            fn serialize_u128(self, v: u128) -> Result<Seen, Unsupported> {
                Ok(Seen::U128(v))
            }
            refuse!(
                serialize_bool(bool),
                serialize_i8(i8),
                serialize_i16(i16),
                serialize_i32(i32),
                serialize_i64(i64),
                serialize_u8(u8),
                serialize_u16(u16),
                serialize_u32(u32),
                serialize_f32(f32),
                serialize_f64(f64),
                serialize_char(char),
                serialize_str(&str),
                serialize_bytes(&[u8]),
                serialize_none(),
                serialize_unit(),
                serialize_unit_struct(&'static str),
                serialize_unit_variant(&'static str, u32, &'static str),
            );
            fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Seen, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_newtype_struct<T: ?Sized + Serialize>(
                self,
                _: &'static str,
                _: &T,
            ) -> Result<Seen, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_newtype_variant<T: ?Sized + Serialize>(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: &T,
            ) -> Result<Seen, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_tuple_struct(
                self,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeTupleStruct, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_tuple_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeTupleVariant, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_struct(
                self,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeStruct, Unsupported> {
                Err(Unsupported)
            }
            fn serialize_struct_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeStructVariant, Unsupported> {
                Err(Unsupported)
            }
        }
    }
}

#[cfg(feature = "uuid")]
mod uuid_conversions {
    use super::*;

    proptest! {
        #[test]
        fn uuid_conversions_round_trip(v in any::<u128>()) {
            let id = UuidId::from(v);
            let u: uuid::Uuid = id.into();
            prop_assert_eq!(u.as_u128(), v);
            prop_assert_eq!(u.to_string(), id.to_string());
            prop_assert_eq!(UuidId::from(u), id);
        }

        #[test]
        fn every_uuid_text_form_is_the_uuid_crates(v in any::<u128>()) {
            // The reference implementation's four forms, lowercase and uppercase.
            let id = UuidId::from(v);
            let u = uuid::Uuid::from_u128(v);
            prop_assert_eq!(id.hyphenated().to_string(), u.hyphenated().to_string());
            prop_assert_eq!(format!("{:X}", id.hyphenated()), format!("{:X}", u.hyphenated()));
            prop_assert_eq!(id.simple().to_string(), u.simple().to_string());
            prop_assert_eq!(format!("{:X}", id.simple()), format!("{:X}", u.simple()));
            prop_assert_eq!(id.urn().to_string(), u.urn().to_string());
            prop_assert_eq!(format!("{:X}", id.urn()), format!("{:X}", u.urn()));
            prop_assert_eq!(id.braced().to_string(), u.braced().to_string());
            prop_assert_eq!(format!("{:X}", id.braced()), format!("{:X}", u.braced()));
        }
    }

    #[test]
    fn a_generated_uuid7_is_a_uuid_crate_v7() {
        let id = on_manual_clock(&Scheme::Uuid7, None).next_uuid().unwrap();
        let u: uuid::Uuid = id.into();
        assert_eq!(u.get_version_num(), 7);
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
    }

    #[cfg(feature = "locality")]
    #[test]
    fn locality_uuids_convert_too() {
        use idforge::schemes::locality::LocalityUuid;
        let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse().unwrap();
        let u: uuid::Uuid = id.into();
        assert_eq!(u.to_string(), id.to_string());
        assert_eq!(LocalityUuid::from(u), id);
    }
}

#[cfg(all(feature = "serde", feature = "locality"))]
#[test]
fn locality_uuids_serialize_as_uuids() {
    use idforge::schemes::locality::LocalityUuid;
    let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse().unwrap();
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(json, "\"20be0ffc-314a-bd53-7a50-013a65ca76d2\"");
    assert_eq!(serde_json::from_str::<LocalityUuid>(&json).unwrap(), id);
    serde_test::assert_tokens(
        &serde_test::Configure::compact(id),
        &[serde_test::Token::Bytes(&[
            0x20, 0xbe, 0x0f, 0xfc, 0x31, 0x4a, 0xbd, 0x53, 0x7a, 0x50, 0x01, 0x3a, 0x65, 0xca,
            0x76, 0xd2,
        ])],
    );
}
