//! The binary's command line is real (`run`, `-v`, `--help`), and `run`
//! says the service is not built yet with its own exit code.

#[path = "../../not_built_cli.rs"]
mod not_built_cli;

#[test]
fn help_run_and_verbosity_parse_and_run_says_it_is_not_built() {
    not_built_cli::the_binary_parses_and_run_says_it_is_not_built(
        env!("CARGO_BIN_EXE_crabtalk-telegram"),
        "telegram",
    );
}

#[test]
fn the_library_cli_is_the_binarys() {
    not_built_cli::the_library_cli_is_the_binarys(
        crabtalk_telegram::cli::command(),
        crabtalk_telegram::cli::service(),
        "telegram",
    );
}
