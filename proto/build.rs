//! Compiles `crabtalk.proto` with `protox` (a pure-Rust protobuf compiler), so
//! building crabtalk never needs a system `protoc`.

fn main() {
    println!("cargo:rerun-if-changed=crabtalk.proto");
    let descriptors = match protox::compile(["crabtalk.proto"], ["."]) {
        Ok(descriptors) => descriptors,
        Err(err) => panic!("crabtalk.proto does not compile: {err:?}"),
    };
    let mut config = prost_build::Config::new();
    if let Err(err) = config.compile_fds(descriptors) {
        panic!("generating Rust from crabtalk.proto failed: {err}");
    }
}
