//! The PTX recipe: how the kernels crate becomes one PTX module per
//! architecture of [`ARCHES`].
//!
//! libNVVM (rust-cuda's `cuda_builder`) needs LLVM 7 bitcode, which no
//! registry we reach has, so this is rust-cuda's recipe with rustc's own
//! NVPTX backend and upstream LLVM (rustup's `llvm-tools`), per architecture:
//!
//! 1. `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=llvm-bc`
//!    with the pinned nightly (`kernels/rust-toolchain.toml`), whatever toolchain
//!    runs the build script;
//! 2. `llvm-link` with NVIDIA's libdevice (`--only-needed`: only the math
//!    functions the kernels call, e.g. `__nv_sinf`);
//! 3. `opt -passes=internalize,default<O3>` keeping only the kernel entries;
//! 4. `llc -mcpu=<arch>` to PTX (with a newer PTX ISA where [`PTX_ISA`] says);
//! 5. each entry that declares a launch bound (`ThreadCtx::launch_bound`
//!    or `launch_bounds`, a [`LAUNCH_BOUND`] comment in its body) gets
//!    `.maxntid`, and `.minnctapersm` where it asks for blocks a SM, in its
//!    header.
//!
//! [`find_toolchain`] finds what these steps run (the nightly with rust-src
//! and llvm-tools, libdevice) or says what is missing and how to install it.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::fail;

/// The kernels' toolchain when `kernels/rust-toolchain.toml` names none.
const DEFAULT_TOOLCHAIN: &str = "nightly-2026-05-20";
/// The architectures a module is built for, lowest first. PTX for `sm_XY`
/// runs, JIT-compiled by the driver, on GPUs of compute capability X.Y and
/// later: sm_80 opens the kernels to the A100, sm_90 is the H100's. PTX for
/// `sm_XYa` (architecture-specific features: `wgmma`, `setmaxnreg`) runs on
/// compute capability X.Y only; the kernels that need it are compiled into
/// that module alone (`cfg(target_feature = "sm_90a")`).
pub const ARCHES: &[&str] = &["sm_80", "sm_90", "sm_90a"];
/// Version of the build steps: bump it when they change what they emit, so
/// that the stamp changes and CI asks for a rebuilt `ptx/`.
pub const RECIPE: u32 = 4;
/// PTX ISA versions above LLVM's default for an architecture (`llc
/// -mattr`): `sm_90a`'s TMA steps fence the tensor-map proxy
/// (`fence.proxy.tensormap`), which PTX ISA 8.3 introduced; LLVM writes 8.0.
const PTX_ISA: &[(&str, &str)] = &[("sm_90a", "+ptx83")];
/// The LLVM tools of rustup's `llvm-tools` component that the build runs.
const LLVM_TOOLS: &[&str] = &["llvm-dis", "llvm-link", "opt", "llc"];

fn run(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| fail(&format!("could not start {what}: {e}")));
    if !status.success() {
        fail(&format!("{what} failed ({status}): {cmd:?}"));
    }
}

/// The toolchain that builds the kernels: the `channel` of
/// `kernels/rust-toolchain.toml`, else [`DEFAULT_TOOLCHAIN`].
pub fn pinned_toolchain(root: &Path) -> String {
    let Ok(text) = fs::read_to_string(root.join("kernels/rust-toolchain.toml")) else {
        return DEFAULT_TOOLCHAIN.to_owned();
    };
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("channel")?.trim_start().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TOOLCHAIN.to_owned())
}

/// Fails unless the module defines every function it calls.
pub fn check_self_contained(arch: &str, text: &str) {
    let externs: Vec<&str> = text.lines().filter(|l| l.contains(".extern .func")).collect();
    if !externs.is_empty() {
        fail(&format!(
            "the {arch} PTX calls functions it does not define (a panic path or an un-inlined core function):\n{}",
            externs.join("\n")
        ));
    }
}

/// A toolchain that can build the kernels, and the files the build needs.
pub struct Toolchain {
    pub name: String,
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
pub fn find_toolchain(root: &Path, name: &str) -> Result<Toolchain, Vec<String>> {
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
pub fn build_ptx(root: &Path, out: &Path, toolchain: &Toolchain, arch: &str) -> String {
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
    let text = fs::read_to_string(&ptx).unwrap_or_else(|e| fail(&format!("reading {}: {e}", ptx.display())));
    with_launch_bounds(&text)
}

/// The comment `ThreadCtx::launch_bound::<N>` (`N`) or
/// `ThreadCtx::launch_bounds::<N, B>` (`N B`) leaves in a kernel's body.
const LAUNCH_BOUND: &str = "// coalesce.launch_bound ";

/// Step 5: `.maxntid N, 1, 1` (and `.minnctapersm B`) before the body of
/// each entry whose body holds the comment [`LAUNCH_BOUND`]` N` (`N B`).
/// LLVM writes no launch bounds for Rust kernels; with one, ptxas fits the
/// registers to `N` threads (`B` blocks of them a SM). A kernel's body
/// opens with a line `{` and closes with a line `}`.
fn with_launch_bounds(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + 256);
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "{" {
            let end = lines[i..].iter().position(|l| *l == "}").map_or(lines.len(), |e| i + e);
            let bound = lines[i..end].iter().find_map(|l| l.trim().strip_prefix(LAUNCH_BOUND));
            if let Some(bound) = bound {
                let bad = || -> u32 { fail(&format!("bad launch bound `{bound}` in the PTX")) };
                let mut numbers = bound.split_whitespace().map(|n| n.parse::<u32>().unwrap_or_else(|_| bad()));
                let threads = numbers.next().unwrap_or_else(bad);
                out.push_str(&format!(".maxntid {threads}, 1, 1\n"));
                if let Some(blocks) = numbers.next() {
                    out.push_str(&format!(".minnctapersm {blocks}\n"));
                }
                if numbers.next().is_some() {
                    bad();
                }
            }
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
    }
    out
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
