//! Link options of the optimised `souz` on x86_64 Linux (the `release` profile and `quick`,
//! which inherits it: Cargo tells both as `PROFILE=release`), for a smaller idle daemon:
//! - the functions the daemon runs at start (`startup-order.txt`, made by
//!   `scripts/startup-order.sh`) are laid out together at the head of the code. The kernel maps
//!   code 64 KiB at a time around each first touch, so startup code spread over the whole text
//!   kept ~16 MiB of it resident in an idle daemon; side by side it is about 3 MiB. A name the
//!   list has and the build does not (renamed, gone, or inlined by the other profile) is
//!   skipped: a stale list costs memory, never correctness;
//! - relative relocations are packed (`DT_RELR`): the dynamic loader reads ~2 MB less at start.
//!   Only against glibc 2.36 or later, which the binary then needs (Debian 12, Ubuntu 24.04).
//!
//! Both need rust-lld, the target's default linker since Rust 1.90 where the toolchain ships it;
//! with another linker set (in Cargo's config or the flags), or a toolchain without it, the build
//! goes on without them and says so.

#![allow(
    clippy::disallowed_methods,
    reason = "Cargo tells a build script through the environment; souz-core's registry \
              (`config::env`) is for what users set, and a build script cannot use it"
)]

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=startup-order.txt");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let target = env::var("TARGET").unwrap_or_default();
    let profile = env::var("PROFILE").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" || profile != "release" {
        return;
    }
    let linker_set = env::var_os("RUSTC_LINKER").is_some()
        || env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags_set_linker(&flags));
    if linker_set || !toolchain_has_rust_lld(&target) {
        println!(
            "cargo::warning=startup code is not laid out together: the link may not be \
             rust-lld's (a linker is set in Cargo's config or the flags, or the toolchain has none)"
        );
        return;
    }
    let Some(dir) = env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = Path::new(&dir).join("startup-order.txt");
    let mut linker = vec![
        format!("--symbol-ordering-file={}", order.display()),
        "--no-warn-symbol-ordering".to_owned(),
    ];
    if glibc_version().is_some_and(|version| version >= (2, 36)) {
        linker.push("-zpack-relative-relocs".to_owned());
    }
    for arg in linker {
        println!("cargo::rustc-link-arg-bin=souz=-Xlinker");
        println!("cargo::rustc-link-arg-bin=souz={arg}");
    }
}

/// Whether the rustc flags (Cargo's encoding: separated by `\x1f`) choose the linker:
/// `-C linker=…` or `-C linker-flavor=…` in any spelling, or `-fuse-ld=…` passed to it.
/// `-C link-self-contained=+linker`, which asks for rust-lld, does not count.
fn flags_set_linker(flags: &str) -> bool {
    flags.split('\x1f').any(|flag| {
        let option = flag
            .strip_prefix("--codegen")
            .or_else(|| flag.strip_prefix("-C"))
            .unwrap_or(flag)
            .trim_start_matches('=');
        option.starts_with("linker=")
            || option.starts_with("linker-flavor=")
            || flag.contains("-fuse-ld=")
    })
}

/// Whether the toolchain ships rust-lld for `target` (rustup's do; a distribution's rustc may
/// link with the system's GNU ld, which knows neither option).
fn toolchain_has_rust_lld(target: &str) -> bool {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Path::new(&sysroot)
        .join("lib/rustlib")
        .join(target)
        .join("bin/gcc-ld/ld.lld")
        .exists()
}

/// The glibc this build links against (`getconf GNU_LIBC_VERSION`: "glibc 2.36"), if it says.
fn glibc_version() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    Some((major.parse().ok()?, minor.split('.').next()?.parse().ok()?))
}
