//! Provides the kernels' PTX: one module per GPU architecture of [`ARCHES`],
//! embedded as `coalesce::MODULES` (and the `sm_90` one as `coalesce::PTX`),
//! when the `cuda` feature is on (the default); without it there is nothing
//! to do.
//!
//! The PTX ships in `ptx/`, so that a dependent builds on stable Rust with
//! neither the nightly toolchain nor LLVM tools nor libdevice. Beside it,
//! `ptx/SOURCES.sha256` (the stamp) records what it was built from: the
//! SHA-256 of every file under `kernels/src` and of `kernels/Cargo.toml`, the
//! toolchain, the architectures and [`RECIPE`]. In a checkout, where
//! `kernels/` lies next to this file (a packaged crate has none), the stamp
//! is recomputed and compared with the shipped one.
//!
//! `COALESCE_PTX` says where the PTX comes from:
//! - `auto` (or unset): rebuilt when the stamp differs and the toolchain is
//!   installed, else the shipped PTX (with a warning when it is stale);
//! - `build`: always rebuilt; without the toolchain the build fails, naming
//!   what is missing;
//! - `shipped`: never rebuilt.
//!
//! A rebuild in a checkout also refreshes `ptx/` in place (files whose
//! content changed only), so an edited kernel shows up in `git diff` as
//! changed PTX, to be committed with it; CI rebuilds and fails on a
//! difference.
//!
//! `ptx/ENTRIES.sha256` holds one line per kernel and architecture: the
//! SHA-256 of its PTX with comments and LLVM's block-label numbers taken
//! out. Code layout can move ptxas: LLVM numbers virtual registers in the
//! order it meets them, so renaming or moving a helper can renumber a
//! kernel's registers, and ptxas then schedules it differently (seen on
//! GEMM step 7: 5% at 4096^3). A change that should leave the GPU code
//! alone proves it by leaving this file alone; a line that changes names the
//! kernel whose timings need measuring again.
//!
//! The build: libNVVM (rust-cuda's `cuda_builder`) needs LLVM 7 bitcode, which
//! no registry we reach has, so this is rust-cuda's recipe with rustc's own
//! NVPTX backend and upstream LLVM (rustup's `llvm-tools`), per architecture:
//!
//! 1. `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=llvm-bc`
//!    with the pinned nightly (`kernels/rust-toolchain.toml`), whatever toolchain
//!    runs this script;
//! 2. `llvm-link` with NVIDIA's libdevice (`--only-needed`: only the math
//!    functions the kernels call, e.g. `__nv_sinf`);
//! 3. `opt -passes=internalize,default<O3>` keeping only the kernel entries;
//! 4. `llc -mcpu=<arch>` to PTX (with a newer PTX ISA where [`PTX_ISA`] says).
//!
//! Every module, built or shipped, must call nothing outside itself (no
//! `.extern .func`): the driver refuses that.
//!
//! Environment: `COALESCE_PTX`, `COALESCE_LIBDEVICE` (path of
//! `libdevice.10.bc`), `CUDA_PATH`, `CUDA_LIBRARY_PATH`.

use sha2::{Digest, Sha256};
use std::env;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio, exit};

/// The kernels' toolchain when `kernels/rust-toolchain.toml` names none.
const DEFAULT_TOOLCHAIN: &str = "nightly-2026-05-20";
/// The architectures a module is built for, lowest first. PTX for `sm_XY`
/// runs, JIT-compiled by the driver, on GPUs of compute capability X.Y and
/// later: sm_80 opens the kernels to the A100, sm_90 is the H100's. PTX for
/// `sm_XYa` (architecture-specific features: `wgmma`, `setmaxnreg`) runs on
/// compute capability X.Y only; the kernels that need it are compiled into
/// that module alone (`cfg(target_feature = "sm_90a")`).
const ARCHES: &[&str] = &["sm_80", "sm_90", "sm_90a"];
/// Version of the build steps: bump it when they change what they emit, so
/// that the stamp changes and CI asks for a rebuilt `ptx/`.
const RECIPE: u32 = 2;
/// PTX ISA versions above LLVM's default for an architecture (`llc
/// -mattr`): `sm_90a`'s TMA steps fence the tensor-map proxy
/// (`fence.proxy.tensormap`), which PTX ISA 8.3 introduced; LLVM writes 8.0.
const PTX_ISA: &[(&str, &str)] = &[("sm_90a", "+ptx83")];
/// The stamp's file name in `ptx/`.
const STAMP: &str = "SOURCES.sha256";
/// The per-kernel fingerprints' file name in `ptx/`.
const FINGERPRINTS: &str = "ENTRIES.sha256";
/// The LLVM tools of rustup's `llvm-tools` component that the build runs.
const LLVM_TOOLS: &[&str] = &["llvm-dis", "llvm-link", "opt", "llc"];

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

fn run(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| fail(&format!("could not start {what}: {e}")));
    if !status.success() {
        fail(&format!("{what} failed ({status}): {cmd:?}"));
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
        println!("cargo:rerun-if-changed=build.rs");
        return;
    }
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    // Only paths that exist: cargo reruns the script on every build for a missing one.
    for p in ["kernels/src", "kernels/Cargo.toml", "kernels/rust-toolchain.toml", "ptx", "build.rs"] {
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
    let toolchain = pinned_toolchain(&root);
    let stamp = root.join("kernels/src").is_dir().then(|| stamp(&root, &toolchain));
    let stale = stamp.as_deref().is_some_and(|s| !is_current(&shipped, s));
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
            Some(find_toolchain(&root, &toolchain).unwrap_or_else(|missing| {
                fail(&format!(
                    "COALESCE_PTX=build, but the kernels' toolchain is incomplete:\n- {}",
                    missing.join("\n- ")
                ))
            }))
        }
        Mode::Auto if stale => match find_toolchain(&root, &toolchain) {
            Ok(t) => Some(t),
            Err(missing) => {
                warn(&format!("{stale_note}\nMissing here:\n- {}", missing.join("\n- ")));
                None
            }
        },
        Mode::Auto => None,
    };

    let modules: Vec<(&str, String)> = match &builder {
        Some(t) => ARCHES.iter().map(|&arch| (arch, build_ptx(&root, &out, t, arch))).collect(),
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
        check_self_contained(arch, text);
    }
    if builder.is_some()
        && let Some(stamp) = &stamp
    {
        refresh_shipped(&root, &shipped, &modules, stamp);
    }

    let mut list = String::from("// Generated by build.rs: the PTX modules, lowest architecture first.\n&[\n");
    for (arch, text) in &modules {
        let file = format!("{arch}.ptx");
        write_if_changed(&out.join(&file), text).unwrap_or_else(|e| fail(&format!("writing {file} in OUT_DIR: {e}")));
        let number = arch.strip_prefix("sm_").expect("ARCHES are sm_<number>[a]");
        let (number, specific) = match number.strip_suffix('a') {
            Some(n) => (n, true),
            None => (number, false),
        };
        let cc: u32 = number.parse().expect("ARCHES are sm_<number>[a]");
        writeln!(
            list,
            "    coalesce_host::Ptx {{ arch: {cc}, arch_specific: {specific}, text: include_str!(concat!(env!(\"OUT_DIR\"), \"/{file}\")) }},"
        )
        .unwrap();
    }
    list.push_str("]\n");
    // Where the PTX came from, for people and for CI's check that a stable
    // build of a dependent did not run the nightly.
    let source = match (&builder, &stamp) {
        (Some(t), _) => format!("built by {} for {}\n", t.name, ARCHES.join(" ")),
        (None, None) => "shipped ptx/ (no kernels/ to compare it with)\n".to_owned(),
        (None, Some(_)) if stale => format!("shipped ptx/, stale: its {STAMP} differs from kernels/src\n"),
        (None, Some(_)) => format!("shipped ptx/, current: its {STAMP} matches kernels/src\n"),
    };
    for (file, text) in [("modules.rs", &list), ("ptx.source", &source)] {
        write_if_changed(&out.join(file), text).unwrap_or_else(|e| fail(&format!("writing {file} in OUT_DIR: {e}")));
    }
}

/// The toolchain that builds the kernels: the `channel` of
/// `kernels/rust-toolchain.toml`, else [`DEFAULT_TOOLCHAIN`].
fn pinned_toolchain(root: &Path) -> String {
    let Ok(text) = fs::read_to_string(root.join("kernels/rust-toolchain.toml")) else {
        return DEFAULT_TOOLCHAIN.to_owned();
    };
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("channel")?.trim_start().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TOOLCHAIN.to_owned())
}

/// The stamp of the sources: what the PTX depends on, one line each, files
/// in sorted order, under a SHA-256 of all of it.
fn stamp(root: &Path, toolchain: &str) -> String {
    let mut files = vec!["kernels/Cargo.toml".to_owned()];
    collect_files(root, Path::new("kernels/src"), &mut files);
    files.sort();
    let mut body = format!("recipe {RECIPE}\ntoolchain {toolchain}\narches {}\n", ARCHES.join(" "));
    for f in &files {
        let bytes = fs::read(root.join(f)).unwrap_or_else(|e| fail(&format!("reading {f}: {e}")));
        writeln!(body, "{}  {f}", hex(&Sha256::digest(&bytes))).unwrap();
    }
    format!(
        "# What ptx/*.ptx was built from (build.rs writes this; it rebuilds the PTX when it differs).\n\
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
fn is_current(shipped: &Path, stamp: &str) -> bool {
    // Line endings as a Windows checkout may have made them.
    let old = fs::read_to_string(shipped.join(STAMP)).map(|s| s.replace("\r\n", "\n"));
    old.is_ok_and(|old| old == stamp)
        && ARCHES.iter().all(|a| shipped.join(format!("{a}.ptx")).is_file())
        && shipped.join(FINGERPRINTS).is_file()
}

/// Writes rebuilt modules over `ptx/`, then the stamp (last, so that an
/// interrupted refresh leaves a stale stamp). Not in cargo's own copies of
/// sources (git checkouts, registry): those are not anyone's working tree.
fn refresh_shipped(root: &Path, shipped: &Path, modules: &[(&str, String)], stamp: &str) {
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
        "# Each kernel's PTX without comments and block-label numbers (build.rs writes this): a line that changes\n\
         # names a kernel whose GPU code changed.\n",
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

fn check_self_contained(arch: &str, text: &str) {
    let externs: Vec<&str> = text.lines().filter(|l| l.contains(".extern .func")).collect();
    if !externs.is_empty() {
        fail(&format!(
            "the {arch} PTX calls functions it does not define (a panic path or an un-inlined core function):\n{}",
            externs.join("\n")
        ));
    }
}

/// A toolchain that can build the kernels, and the files the build needs.
struct Toolchain {
    name: String,
    /// Runs that toolchain's cargo: `rustup run NAME cargo`, or the cargo
    /// running this script when its rustc is that toolchain.
    cargo: Vec<OsString>,
    /// The rustc for that cargo, when not chosen by rustup.
    rustc: Option<PathBuf>,
    /// rustup's `llvm-tools`: `llvm-link`, `opt`, `llc` of rustc's LLVM.
    tools: PathBuf,
    libdevice: PathBuf,
}

/// The pinned toolchain with rust-src, llvm-tools and libdevice, or what is
/// missing, one item each with the command that installs it.
fn find_toolchain(root: &Path, name: &str) -> Result<Toolchain, Vec<String>> {
    let (cargo, rustc, sysroot) = if let Some(sysroot) = rustup_sysroot(name) {
        (["rustup", "run", name, "cargo"].map(OsString::from).to_vec(), None, sysroot)
    } else if let Some((rustc, sysroot)) = current_rustc_is(name) {
        (vec![env::var_os("CARGO").unwrap_or_else(|| "cargo".into())], Some(rustc), sysroot)
    } else {
        return Err(vec![format!(
            "the {name} toolchain (`rustup run {name} rustc` fails, and the rustc of this build is another): \
             rustup toolchain install {name} --profile minimal --component rust-src,llvm-tools   (or .ci/setup)"
        )]);
    };
    let mut missing = Vec::new();
    if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").is_file() {
        missing.push(format!(
            "the rust-src component of {name} (for -Zbuild-std=core): rustup component add rust-src --toolchain {name}"
        ));
    }
    let tools = sysroot.join("lib/rustlib").join(env::var("HOST").unwrap()).join("bin");
    let absent: Vec<&str> = LLVM_TOOLS.iter().copied().filter(|t| !tools.join(t).is_file()).collect();
    if !absent.is_empty() {
        missing.push(format!(
            "the llvm-tools component of {name} ({} not in {}): rustup component add llvm-tools --toolchain {name}",
            absent.join(", "),
            tools.display()
        ));
    }
    let libdevice = find_libdevice(root).map_err(|e| missing.push(e)).ok();
    match libdevice {
        Some(libdevice) if missing.is_empty() => {
            Ok(Toolchain { name: name.to_owned(), cargo, rustc, tools, libdevice })
        }
        _ => Err(missing),
    }
}

/// The sysroot of toolchain `name` through rustup, if rustup has it
/// installed (never installing it: that is .ci/setup's job).
fn rustup_sysroot(name: &str) -> Option<PathBuf> {
    let out = Command::new("rustup")
        .args(["run", name, "rustc", "--print", "sysroot"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("RUSTUP_AUTO_INSTALL", "0")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The rustc running this build and its sysroot, if it is toolchain `name`
/// (for machines without rustup): its sysroot is named after it, or it is a
/// nightly whose commit date is `name`'s date or the day before (a nightly
/// is built from the previous day's last commit).
fn current_rustc_is(name: &str) -> Option<(PathBuf, PathBuf)> {
    let rustc = PathBuf::from(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    let query = |args: &[&str]| {
        let out = Command::new(&rustc).args(args).output().ok().filter(|o| o.status.success())?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let sysroot = PathBuf::from(query(&["--print", "sysroot"])?.trim());
    let dir = sysroot.file_name()?.to_string_lossy().into_owned();
    let named = dir == name || dir.starts_with(&format!("{name}-"));
    let dated = || {
        let wanted = days_of(name.strip_prefix("nightly-")?)?;
        let version = query(&["-vV"])?;
        let field = |key: &str| version.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
        let commit = days_of(field("commit-date:")?)?;
        Some(field("release:")?.ends_with("-nightly") && (commit == wanted || commit + 1 == wanted))
    };
    (named || dated() == Some(true)).then(|| (sysroot.join("bin/rustc"), sysroot))
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (civil calendar).
fn days_of(date: &str) -> Option<i64> {
    let mut parts = date.get(..10)?.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// NVIDIA's libdevice: the CUDA math library as LLVM bitcode.
fn find_libdevice(root: &Path) -> Result<PathBuf, String> {
    if let Some(p) = env::var_os("COALESCE_LIBDEVICE") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("libdevice: COALESCE_LIBDEVICE={} is not a file", p.display()))
        };
    }
    let mut tried = Vec::new();
    let roots = ["CUDA_PATH", "CUDA_LIBRARY_PATH"]
        .iter()
        .filter_map(env::var_os)
        .map(PathBuf::from)
        .chain([root.join(".cuda"), PathBuf::from("/usr/local/cuda")]);
    for r in roots {
        let p = r.join("nvvm/libdevice/libdevice.10.bc");
        if p.is_file() {
            return Ok(p);
        }
        tried.push(p.display().to_string());
    }
    Err(format!(
        "libdevice.10.bc, looked for in {}: .ci/setup fetches it (PyPI wheel nvidia-cuda-nvcc-cu12 into .cuda/), \
         or point COALESCE_LIBDEVICE at the libdevice.10.bc of a CUDA toolkit",
        tried.join(", ")
    ))
}

/// Steps 1-4 for one architecture: the PTX text.
fn build_ptx(root: &Path, out: &Path, toolchain: &Toolchain, arch: &str) -> String {
    let work = out.join(format!("nvptx-{arch}"));
    let bitcode = compile_kernels(root, &work, toolchain, arch);
    let tool = |t: &str| Command::new(toolchain.tools.join(t));
    let entries = kernel_entries(toolchain, &bitcode, &work);

    let linked = work.join("kernels.linked.bc");
    run(
        tool("llvm-link").arg(&bitcode).arg("--only-needed").arg(&toolchain.libdevice).arg("-o").arg(&linked),
        "llvm-link (kernels + libdevice)",
    );
    let optimized = work.join("kernels.opt.bc");
    run(
        tool("opt")
            .arg("-passes=internalize,default<O3>")
            .arg(format!("-internalize-public-api-list={}", entries.join(",")))
            .arg(format!("-mcpu={arch}"))
            .arg(&linked)
            .arg("-o")
            .arg(&optimized),
        "opt",
    );
    let ptx = work.join("kernels.ptx");
    run(
        tool("llc")
            .args(["-O3", &format!("-mcpu={arch}")])
            .args(PTX_ISA.iter().filter(|(a, _)| *a == arch).map(|(_, isa)| format!("-mattr={isa}")))
            .arg(&optimized)
            .arg("-o")
            .arg(&ptx),
        "llc (PTX code generation)",
    );
    fs::read_to_string(&ptx).unwrap_or_else(|e| fail(&format!("reading {}: {e}", ptx.display())))
}

/// Step 1: the kernels crate as LLVM bitcode for nvptx64.
fn compile_kernels(root: &Path, work: &Path, toolchain: &Toolchain, arch: &str) -> PathBuf {
    let target_dir = work.join("target");
    let mut cmd = Command::new(&toolchain.cargo[0]);
    cmd.args(&toolchain.cargo[1..]);
    // The outer build's toolchain, flags, target, directories and jobserver
    // are for the host build, possibly on another toolchain.
    for v in [
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_LINKER",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "CARGO_BUILD_RUSTC",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTDOC",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_BUILD_DIR",
        "CARGO_TARGET_DIR",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(v);
    }
    if let Some(rustc) = &toolchain.rustc {
        cmd.env("RUSTC", rustc);
    }
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3")
        .current_dir(root)
        .args(["rustc", "--manifest-path"])
        .arg(root.join("kernels/Cargo.toml"))
        .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core", "--crate-type=lib", "--release"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "--emit=llvm-bc", "-C", &format!("target-cpu={arch}")]);
    run(&mut cmd, &format!("cargo rustc (kernels for nvptx64-nvidia-cuda, {arch}, with {})", toolchain.name));
    let deps = target_dir.join("nvptx64-nvidia-cuda/release/deps");
    fs::read_dir(&deps)
        .unwrap_or_else(|e| fail(&format!("reading {}: {e}", deps.display())))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("coalesce_kernels-") && name.ends_with(".bc")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| fail(&format!("no coalesce_kernels-*.bc in {}", deps.display())))
}

/// The `extern "gpu-kernel"` functions of the bitcode: what internalize keeps.
fn kernel_entries(toolchain: &Toolchain, bitcode: &Path, work: &Path) -> Vec<String> {
    let ll = work.join("kernels.ll");
    run(Command::new(toolchain.tools.join("llvm-dis")).arg(bitcode).arg("-o").arg(&ll), "llvm-dis");
    let text = fs::read_to_string(&ll).unwrap_or_else(|e| fail(&format!("reading {}: {e}", ll.display())));
    let entries: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("define") && l.contains(" ptx_kernel "))
        .filter_map(|l| l.split('@').nth(1)?.split('(').next().map(str::to_owned))
        .collect();
    if entries.is_empty() {
        fail("the kernels crate defines no `extern \"gpu-kernel\"` function");
    }
    entries
}
