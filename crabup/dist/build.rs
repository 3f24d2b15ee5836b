//! Tells the crate which target it is compiled for: crabup picks the
//! release artifact of the platform it was itself built for.

fn main() {
    let target = std::env::var("TARGET").expect("cargo sets TARGET for build scripts");
    println!("cargo:rustc-env=CRABTALK_DIST_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
