//! The size every released binary must stay under (RFC 0018): what a user
//! downloads, checked on the binaries the `dist` profile builds.
//!
//! `crabtalk-dist sizes --bin-dir target/dist` prints one table row per
//! program (its size, its limit, and by how much it is under or over) and
//! fails when one is over its limit or missing, so the release workflow
//! stops before it packs a binary that grew past its budget.

use std::fmt::Write as _;
use std::path::Path;

/// One megabyte, as the limits count it: 10⁶ bytes (what `ls -l --si` and
/// download pages show).
pub const MB: u64 = 1_000_000;

/// The largest each program's binary may be: the daemon 12 MB, each
/// component 8 MB, crabup 6 MB.
pub const LIMITS: [(&str, u64); 6] = [
    ("crabtalkd", 12 * MB),
    ("crabtalk-cron", 8 * MB),
    ("crabtalk-search", 8 * MB),
    ("crabtalk-telegram", 8 * MB),
    ("crabtalk-tui", 8 * MB),
    ("crabup", 6 * MB),
];

/// One program's binary against its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeRow {
    pub program: String,
    /// `None` when the binary is not in the folder.
    pub size: Option<u64>,
    pub limit: u64,
}

impl SizeRow {
    /// Whether the binary is there and within its limit.
    pub fn fits(&self) -> bool {
        self.size.is_some_and(|size| size <= self.limit)
    }
}

/// The size of every program's binary for `target` in `bin_dir`, in the
/// order of [`LIMITS`].
pub fn measure(bin_dir: &Path, target: &str) -> Vec<SizeRow> {
    LIMITS
        .iter()
        .map(|&(program, limit)| {
            let binary = bin_dir.join(crate::layout::binary_name(program, target));
            SizeRow {
                program: program.to_owned(),
                size: std::fs::metadata(&binary).ok().map(|meta| meta.len()),
                limit,
            }
        })
        .collect()
}

/// The rows as a Markdown table, as `docs/src/benchmarks.md` keeps them.
pub fn table(rows: &[SizeRow]) -> String {
    let mut out = String::from("| program | size | limit | |\n|---|---|---|---|\n");
    for row in rows {
        let limit = megabytes(row.limit);
        let _ = match row.size {
            Some(size) if size <= row.limit => writeln!(
                out,
                "| `{}` | {} | {limit} | ok, {} under |",
                row.program,
                megabytes(size),
                megabytes(row.limit - size)
            ),
            Some(size) => writeln!(
                out,
                "| `{}` | {} | {limit} | **over by {}** |",
                row.program,
                megabytes(size),
                megabytes_up(size - row.limit)
            ),
            None => writeln!(out, "| `{}` | — | {limit} | **not built** |", row.program),
        };
    }
    out
}

/// `bytes` in MB with two decimals: `12.35 MB`.
pub fn megabytes(bytes: u64) -> String {
    let hundredths = (bytes + MB / 200) / (MB / 100);
    format!("{}.{:02} MB", hundredths / 100, hundredths % 100)
}

/// `bytes` in MB, rounded up to the next hundredth: a byte over a limit
/// reads as over.
fn megabytes_up(bytes: u64) -> String {
    megabytes(bytes.div_ceil(MB / 100) * (MB / 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megabytes_round_to_two_decimals() {
        assert_eq!(megabytes(0), "0.00 MB");
        assert_eq!(megabytes(12 * MB), "12.00 MB");
        assert_eq!(megabytes(16_504_999), "16.50 MB");
        assert_eq!(megabytes(16_505_000), "16.51 MB");
    }

    #[test]
    fn a_binary_over_its_limit_or_missing_does_not_fit_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let target = "x86_64-unknown-linux-gnu";
        for (program, size) in [
            ("crabtalkd", 12 * MB),
            ("crabtalk-cron", 8 * MB + 1),
            ("crabtalk-search", 3_250_000),
            ("crabtalk-telegram", 7_999_999),
            ("crabup", 9 * MB),
        ] {
            let file = std::fs::File::create(dir.path().join(program)).unwrap();
            file.set_len(size).unwrap();
        }
        let rows = measure(dir.path(), target);
        let fits: Vec<(&str, bool)> = rows
            .iter()
            .map(|row| (row.program.as_str(), row.fits()))
            .collect();
        assert_eq!(
            fits,
            [
                ("crabtalkd", true),
                ("crabtalk-cron", false),
                ("crabtalk-search", true),
                ("crabtalk-telegram", true),
                ("crabtalk-tui", false),
                ("crabup", false),
            ]
        );
        let table = table(&rows);
        for line in [
            "| `crabtalkd` | 12.00 MB | 12.00 MB | ok, 0.00 MB under |",
            "| `crabtalk-cron` | 8.00 MB | 8.00 MB | **over by 0.01 MB** |",
            "| `crabtalk-search` | 3.25 MB | 8.00 MB | ok, 4.75 MB under |",
            "| `crabtalk-tui` | — | 8.00 MB | **not built** |",
            "| `crabup` | 9.00 MB | 6.00 MB | **over by 3.00 MB** |",
        ] {
            assert!(table.contains(line), "{line} is not in\n{table}");
        }
    }

    #[test]
    fn every_released_program_has_a_limit() {
        let mut limited: Vec<&str> = LIMITS.iter().map(|(program, _)| *program).collect();
        let mut released = crate::PROGRAMS.to_vec();
        limited.sort_unstable();
        released.sort_unstable();
        assert_eq!(limited, released);
    }
}
