//! Every oracle, on every file of its seed corpus (`components/fuzz/corpus/<name>/`,
//! the test fixtures and every crash the fuzzer found): what libFuzzer
//! starts from holds on stable, in `cargo test --workspace`.

use std::path::{Path, PathBuf};

use crabtalk_fuzz_oracles::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_holds_its_oracle() {
    let mut broken = Vec::new();
    for (name, oracle) in TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(
            !seeds.is_empty(),
            "components/fuzz/corpus/{name}/ has no seed"
        );
        for seed in seeds {
            let bytes = std::fs::read(&seed).expect("read the seed");
            // The panic's message is printed by the hook, above.
            if std::panic::catch_unwind(|| oracle(&bytes)).is_err() {
                broken.push(format!("{name}: {}", seed.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "seeds that break their oracle:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_target_has_its_libfuzzer_entry_and_no_other() {
    let mut entries: Vec<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    entries.sort();
    let mut names: Vec<String> = TARGETS.iter().map(|(name, _)| (*name).to_owned()).collect();
    names.sort();
    assert_eq!(entries, names);
    let manifest =
        std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("components/fuzz/Cargo.toml");
    for name in &names {
        let entry = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{name}.rs")))
            .expect("the target's file");
        assert!(
            entry.contains(&format!("crabtalk_fuzz_oracles::{name}(data)")),
            "fuzz_targets/{name}.rs does not call its oracle"
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "components/fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
