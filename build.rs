//! Link flags for the binaries, and the files the server serves, gzipped.
//!
//! The dashboard's files and the OpenAPI document are embedded gzipped, as most clients fetch
//! them (1.3 MB of them took 0.2 MB; the binary is to stay under 30 MiB, issue 36): each goes to
//! `$OUT_DIR/served/`, and `$OUT_DIR/dashboard_files.rs` names that folder for rust-embed.
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
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the C library lives on the distributions a build runs on.
const LIBCS: &[&str] = &[
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib/libc.so.6",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let served = out.join("served");
    // Written anew each time, so that a file taken out of assets/ is not served on.
    let _ = fs::remove_dir_all(&served);
    gzip_tree(Path::new("assets/dashboard"), &served.join("dashboard"));
    gzip_file(Path::new("docs/openapi.json"), &served.join("openapi.json.gz"));
    // A derive names its folder by a literal: the one this build wrote.
    let embed = format!(
        "/// The dashboard's files, gzipped by build.rs, each under its own name.\n\
         #[derive(rust_embed::Embed)]\n#[folder = {:?}]\npub struct Files;\n",
        served.join("dashboard").display().to_string(),
    );
    fs::write(out.join("dashboard_files.rs"), embed).expect("OUT_DIR is writable");
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

/// Every file under `from`, gzipped to the same path under `to`.
fn gzip_tree(from: &Path, to: &Path) {
    println!("cargo:rerun-if-changed={}", from.display());
    let mut entries: Vec<_> =
        fs::read_dir(from).expect("the folder is readable").map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            gzip_tree(&path, &target);
        } else {
            gzip_file(&path, &target);
        }
    }
}

/// `from` gzipped at the best level into `to`, with no timestamp or name in its header, so the
/// same file always gives the same bytes (and the same ETag).
fn gzip_file(from: &Path, to: &Path) {
    println!("cargo:rerun-if-changed={}", from.display());
    let data = fs::read(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    let mut encoder = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::best());
    encoder.write_all(&data).unwrap();
    let gzipped = encoder.finish().unwrap();
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    fs::write(to, gzipped).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
}
