//! The command line's own checks: clap's consistency, and the help listing every scheme.

#[test]
fn the_command_line_is_consistent() {
    use clap::CommandFactory;
    super::Cli::command().debug_assert();
}

#[test]
fn gen_help_lists_every_scheme_of_the_catalog() {
    for name in idforge::schemes::catalog::NAMES {
        assert!(
            super::GEN_HELP.contains(&format!("\n  {name} ")),
            "{name} is missing from src/schemes.txt"
        );
    }
}

#[test]
fn a_clock_error_of_zero_is_not_called_at_most_0_ns() {
    let zero = crate::bench::error_words("off", 0, 0, 1000);
    assert!(!zero.contains("at most 0 ns"), "{zero}");
    assert!(zero.contains("1000 readings"), "{zero}");
    let some = crate::bench::error_words("off", 46, 20, 1000);
    assert!(some.contains("at most 46 ns (99% within 20 ns)"), "{some}");
}
