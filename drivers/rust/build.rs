//! Gives the driver the version of the crate `pulsar` it is built with (from Cargo.lock), for its hello.

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").expect("Cargo.lock is committed beside Cargo.toml");
    let mut lines = lock.lines();
    let version = loop {
        match lines.next() {
            Some("name = \"pulsar\"") => {
                let line = lines.next().unwrap_or_default();
                break line.trim_start_matches("version = ").trim_matches('"').to_string();
            }
            Some(_) => continue,
            None => panic!("Cargo.lock names no package pulsar"),
        }
    };
    println!("cargo:rustc-env=PULSAR_CRATE_VERSION={version}");
}
