//! The build script: provides the kernels' PTX, one module per GPU
//! architecture of [`ptx::ARCHES`], embedded as `coalesce::MODULES` (and the
//! `sm_90` one as `coalesce::PTX`), when the `cuda` feature is on (the
//! default); without it there is nothing to do.
//!
//! The PTX ships in `ptx/`, so that a dependent builds on stable Rust with
//! neither the nightly toolchain nor LLVM tools nor libdevice. Beside it,
//! `ptx/SOURCES.sha256` (the stamp, [`stamp`]) records what it was built
//! from. In a checkout, where `kernels/` lies next to this package's
//! manifest (a packaged crate has none), the stamp is recomputed and
//! compared with the shipped one.
//!
//! `COALESCE_PTX` says where the PTX comes from:
//! - `auto` (or unset): rebuilt ([`ptx`]) when the stamp differs and the
//!   toolchain is installed, else the shipped PTX (with a warning when it is
//!   stale);
//! - `build`: always rebuilt; without the toolchain the build fails, naming
//!   what is missing;
//! - `shipped`: never rebuilt.
//!
//! A rebuild in a checkout also refreshes `ptx/` in place (files whose
//! content changed only), so an edited kernel shows up in `git diff` as
//! changed PTX, to be committed with it; CI rebuilds and fails on a
//! difference.
//!
//! Every module, built or shipped, must call nothing outside itself (no
//! `.extern .func`): the driver refuses that. The modules then go to
//! `OUT_DIR` with the table that embeds them ([`modules`]).
//!
//! Environment: `COALESCE_PTX`, `COALESCE_LIBDEVICE` (path of
//! `libdevice.10.bc`), `CUDA_PATH`, `CUDA_LIBRARY_PATH`.

mod modules;
mod ptx;
mod stamp;

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::exit;

use ptx::ARCHES;
use stamp::STAMP;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    Build,
    Shipped,
}

fn fail(msg: &str) -> ! {
    eprintln!("\nerror: providing the GPU kernels' PTX failed\n  {}\n", msg.replace('\n', "\n  "));
    exit(1)
}

fn warn(msg: &str) {
    for line in msg.lines() {
        println!("cargo:warning={line}");
    }
}

/// Writes `contents` to `path` unless it already holds exactly that, so that
/// an unchanged module keeps its mtime (and what depends on it stays fresh).
fn write_if_changed(path: &Path, contents: &str) -> std::io::Result<()> {
    if fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(());
    }
    fs::write(path, contents)
}

fn main() {
    // Without the `cuda` feature the crate is the emulator's side alone:
    // no module to embed, so no PTX to provide.
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        println!("cargo:rerun-if-changed=build");
        return;
    }
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    // Only paths that exist: cargo reruns the script on every build for a missing one.
    for p in ["kernels/src", "kernels/Cargo.toml", "kernels/rust-toolchain.toml", "ptx", "build"] {
        if root.join(p).exists() {
            println!("cargo:rerun-if-changed={}", root.join(p).display());
        }
    }
    for v in ["COALESCE_PTX", "COALESCE_LIBDEVICE", "CUDA_PATH", "CUDA_LIBRARY_PATH"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let mode = match env::var("COALESCE_PTX").as_deref() {
        Err(_) | Ok("" | "auto") => Mode::Auto,
        Ok("build") => Mode::Build,
        Ok("shipped") => Mode::Shipped,
        Ok(other) => fail(&format!("COALESCE_PTX={other:?}: expected `auto` (the default), `build` or `shipped`")),
    };

    let shipped = root.join("ptx");
    let toolchain = ptx::pinned_toolchain(&root);
    let stamp = root.join("kernels/src").is_dir().then(|| stamp::stamp(&root, &toolchain));
    let stale = stamp.as_deref().is_some_and(|s| !stamp::is_current(&shipped, s));
    let stale_note = format!(
        "ptx/ is older than kernels/src (its {STAMP} differs); this build uses it as it is.\n\
         To rebuild it: `COALESCE_PTX=build cargo build -p coalesce` with {toolchain} (rust-src,\n\
         llvm-tools) and libdevice installed (.ci/setup installs them), then commit ptx/."
    );

    let builder = match mode {
        Mode::Shipped => {
            if stale {
                warn(&stale_note);
            }
            None
        }
        Mode::Build => {
            if stamp.is_none() {
                fail(&format!(
                    "COALESCE_PTX=build needs the kernels' sources, {}, which a packaged crate does not have;\n\
                     build from a checkout of the repository, or leave COALESCE_PTX unset to use the shipped PTX",
                    root.join("kernels").display()
                ));
            }
            Some(ptx::find_toolchain(&root, &toolchain).unwrap_or_else(|missing| {
                fail(&format!(
                    "COALESCE_PTX=build, but the kernels' toolchain is incomplete:\n- {}",
                    missing.join("\n- ")
                ))
            }))
        }
        Mode::Auto if stale => match ptx::find_toolchain(&root, &toolchain) {
            Ok(t) => Some(t),
            Err(missing) => {
                warn(&format!("{stale_note}\nMissing here:\n- {}", missing.join("\n- ")));
                None
            }
        },
        Mode::Auto => None,
    };

    let modules: Vec<(&str, String)> = match &builder {
        Some(t) => ARCHES.iter().map(|&arch| (arch, ptx::build_ptx(&root, &out, t, arch))).collect(),
        None => ARCHES
            .iter()
            .map(|&arch| {
                let path = shipped.join(format!("{arch}.ptx"));
                let text = fs::read_to_string(&path).unwrap_or_else(|e| {
                    fail(&format!(
                        "reading the shipped PTX {}: {e}\n\
                         Rebuild it from a checkout with COALESCE_PTX=build (needs {toolchain} with rust-src and llvm-tools, and libdevice)",
                        path.display()
                    ))
                });
                (arch, text)
            })
            .collect(),
    };
    for (arch, text) in &modules {
        ptx::check_self_contained(arch, text);
    }
    if builder.is_some()
        && let Some(stamp) = &stamp
    {
        stamp::refresh_shipped(&root, &shipped, &modules, stamp);
    }

    // Where the PTX came from, for people and for CI's check that a stable
    // build of a dependent did not run the nightly.
    let source = match (&builder, &stamp) {
        (Some(t), _) => format!("built by {} for {}\n", t.name, ARCHES.join(" ")),
        (None, None) => "shipped ptx/ (no kernels/ to compare it with)\n".to_owned(),
        (None, Some(_)) if stale => format!("shipped ptx/, stale: its {STAMP} differs from kernels/src\n"),
        (None, Some(_)) => format!("shipped ptx/, current: its {STAMP} matches kernels/src\n"),
    };
    modules::write_out(&out, &modules, &source);
}
