//! What `ptx/` was built from, and what it holds, in two files beside it.
//!
//! `ptx/SOURCES.sha256` (the stamp) records the SHA-256 of every file under
//! `kernels/src` and of `kernels/Cargo.toml`, the toolchain, the
//! architectures and the recipe's version ([`RECIPE`]). A checkout
//! recomputes it; when it differs from the shipped one, `ptx/` is stale.
//!
//! `ptx/ENTRIES.sha256` holds one line per kernel and architecture: the
//! SHA-256 of its PTX with comments and LLVM's block-label numbers taken
//! out. Code layout can move ptxas: LLVM numbers virtual registers in the
//! order it meets them, so renaming or moving a helper can renumber a
//! kernel's registers, and ptxas then schedules it differently (seen on
//! GEMM step 7: 5% at 4096^3). A change that should leave the GPU code
//! alone proves it by leaving this file alone; a line that changes names the
//! kernel whose timings need measuring again.

use sha2::{Digest, Sha256};
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::ptx::{ARCHES, RECIPE};
use crate::{fail, warn, write_if_changed};

/// The stamp's file name in `ptx/`.
pub const STAMP: &str = "SOURCES.sha256";
/// The per-kernel fingerprints' file name in `ptx/`.
const FINGERPRINTS: &str = "ENTRIES.sha256";

/// The stamp of the sources: what the PTX depends on, one line each, files
/// in sorted order, under a SHA-256 of all of it.
pub fn stamp(root: &Path, toolchain: &str) -> String {
    let mut files = vec!["kernels/Cargo.toml".to_owned()];
    collect_files(root, Path::new("kernels/src"), &mut files);
    files.sort();
    let mut body = format!("recipe {RECIPE}\ntoolchain {toolchain}\narches {}\n", ARCHES.join(" "));
    for f in &files {
        let bytes = fs::read(root.join(f)).unwrap_or_else(|e| fail(&format!("reading {f}: {e}")));
        writeln!(body, "{}  {f}", hex(&Sha256::digest(&bytes))).unwrap();
    }
    format!(
        "# What ptx/*.ptx was built from (the build script writes this; it rebuilds the PTX when it differs).\n\
         sha256 {}\n{body}",
        hex(&Sha256::digest(body.as_bytes()))
    )
}

/// Every file under `dir` (relative to `root`, `/`-separated), but hidden
/// files and editor backups (`*~`), which are not sources.
fn collect_files(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = fs::read_dir(root.join(dir)).unwrap_or_else(|e| fail(&format!("reading {}: {e}", dir.display())));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| fail(&format!("reading {}: {e}", dir.display())));
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let rel = dir.join(&name);
        if root.join(&rel).is_dir() {
            collect_files(root, &rel, files);
        } else {
            files.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Does `ptx/` hold a module for every architecture, built from `stamp`?
pub fn is_current(shipped: &Path, stamp: &str) -> bool {
    // Line endings as a Windows checkout may have made them.
    let old = fs::read_to_string(shipped.join(STAMP)).map(|s| s.replace("\r\n", "\n"));
    old.is_ok_and(|old| old == stamp)
        && ARCHES.iter().all(|a| shipped.join(format!("{a}.ptx")).is_file())
        && shipped.join(FINGERPRINTS).is_file()
}

/// Writes rebuilt modules over `ptx/`, then the stamp (last, so that an
/// interrupted refresh leaves a stale stamp). Not in cargo's own copies of
/// sources (git checkouts, registry): those are not anyone's working tree.
pub fn refresh_shipped(root: &Path, shipped: &Path, modules: &[(&str, String)], stamp: &str) {
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if root.join(".cargo-ok").exists() || cargo_home.is_some_and(|h| root.starts_with(h)) {
        return;
    }
    let files = modules.iter().map(|(arch, text)| (format!("{arch}.ptx"), text.as_str()));
    let fingerprints = fingerprints(modules);
    let result = fs::create_dir_all(shipped).and_then(|()| {
        for (file, text) in files.chain([(FINGERPRINTS.to_owned(), fingerprints.as_str()), (STAMP.to_owned(), stamp)]) {
            write_if_changed(&shipped.join(file), text)?;
        }
        Ok(())
    });
    if let Err(e) = result {
        warn(&format!(
            "could not refresh {} with the rebuilt PTX ({e}); this build uses the rebuilt PTX",
            shipped.display()
        ));
    }
}

/// `ptx/ENTRIES.sha256` (see the module docs): per architecture, each
/// function's SHA-256 and name, in the module's order.
fn fingerprints(modules: &[(&str, String)]) -> String {
    let mut out = String::from(
        "# Each kernel's PTX without comments and block-label numbers (the build script writes this): a line that\n\
         # changes names a kernel whose GPU code changed.\n",
    );
    for (arch, text) in modules {
        for (name, body) in functions(text) {
            writeln!(out, "{}  {arch}  {name}", hex(&Sha256::digest(normalize(body).as_bytes()))).unwrap();
        }
    }
    out
}

/// The `.entry` and `.func` definitions of a PTX module: (name, text up to
/// the closing brace at the start of a line).
fn functions(ptx: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    let mut rest = ptx;
    while let Some(at) = [".entry ", ".func "].iter().filter_map(|k| rest.find(k).map(|i| (i, k.len()))).min() {
        let (start, skip) = at;
        let tail = &rest[start + skip..];
        let name_end = tail.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(tail.len());
        let name = tail[..name_end].trim();
        // A declaration (`.func f(..);`) ends at its `;`, before any `{`.
        let body = tail.find('{').unwrap_or(tail.len());
        if let Some(semi) = tail[..body].find(';') {
            rest = &tail[semi + 1..];
            continue;
        }
        let end = tail.find("\n}\n").map_or(tail.len(), |e| e + 3);
        found.push((name, &tail[..end]));
        rest = &tail[end..];
    }
    found
}

/// A function's PTX without `//` comments and with `$L__BB<n>_` and
/// `__local_depot<n>` renumbered away: the names LLVM numbers by the
/// function's place in the module.
fn normalize(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    for line in body.lines() {
        let code = line.split("//").next().unwrap_or("").trim_end();
        if code.is_empty() {
            continue;
        }
        let mut rest = code;
        while let Some(i) = ["$L__BB", "__local_depot"].iter().filter_map(|p| rest.find(p).map(|i| (i, p.len()))).min()
        {
            let (at, len) = i;
            out.push_str(&rest[..at + len]);
            rest = rest[at + len..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}
