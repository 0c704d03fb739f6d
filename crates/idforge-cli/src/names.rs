//! Scheme names on the command line: offered by shell completion, checked by the library.

use clap::builder::{PossibleValue, TypedValueParser};

/// The value parser of an argument that names a scheme: it offers every name of the catalog
/// to completion scripts (`idforge completions`) but accepts any text, so that an unknown name
/// gets the library's message (the closest name, the list) rather than clap's.
#[derive(Clone, Copy, Debug)]
pub struct SchemeName;

impl TypedValueParser for SchemeName {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        value
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            idforge::schemes::catalog::NAMES
                .iter()
                .map(|n| PossibleValue::new(*n)),
        ))
    }
}
