//! Link flags for the binaries.
//!
//! A position-independent binary has one relocation for every pointer in its static data, which
//! the loader (or a static binary's own start-up code) applies before `main`. In the classic form
//! each takes 24 bytes: 57,000 of them made 1.35 MiB of the release binary, all read at every
//! start and so resident in the idle server (issue 36). Packed (`DT_RELR`, `-z
//! pack-relative-relocs`), runs of them take a few bits each. glibc reads that form from 2.36;
//! an older loader would ignore it and start a binary with its pointers unrelocated, so the flag
//! is passed only when the C library the binary is linked against reads it.

use std::env;
use std::fs;

/// Where the C library lives on the distributions a build runs on.
const LIBCS: &[&str] = &[
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib/libc.so.6",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = env::var("TARGET").unwrap_or_default();
    let host = env::var("HOST").unwrap_or_default();
    if target == host && target.ends_with("-linux-gnu") && libc_reads_packed_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this system's glibc defines the symbol version that marks `DT_RELR` support.
fn libc_reads_packed_relocations() -> bool {
    let marker = b"GLIBC_ABI_DT_RELR";
    LIBCS
        .iter()
        .filter_map(|path| fs::read(path).ok())
        .any(|bytes| bytes.windows(marker.len()).any(|w| w == marker))
}
