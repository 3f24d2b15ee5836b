//! The exit codes every crabtalk binary uses, defined once.
//!
//! Service units read them: systemd is told not to restart a service that
//! exits with [`EX_CONFIG`] or [`EX_UNAVAILABLE`], since restarting cannot
//! help either (RFC 0010). The values are those of BSD's `sysexits.h`.

/// Success.
pub const SUCCESS: u8 = 0;

/// Any failure that is not one of the others.
pub const FAILURE: u8 = 1;

/// A command line that does not parse (what clap exits with).
pub const USAGE: u8 = 2;

/// The service cannot run on this machine, and saying so again after a
/// restart would not change it (`EX_UNAVAILABLE` in `sysexits.h`). No
/// program of the family exits with it today; the units and the process
/// supervisor still honour it for one that does.
pub const EX_UNAVAILABLE: u8 = 69;

/// Missing or invalid configuration: fix a file, then start again
/// (`EX_CONFIG` in `sysexits.h`).
pub const EX_CONFIG: u8 = 78;
