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
