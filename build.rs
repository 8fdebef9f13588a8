//! Compiles the `kernels/` crate to one self-contained PTX module.
//!
//! rust-cuda's `cuda_builder` would do this through libNVVM, which needs LLVM 7
//! bitcode; no registry we can reach has LLVM 7, so we use rustc's own NVPTX
//! backend and rust-cuda's recipe with upstream LLVM (rustup's `llvm-tools`):
//!
//! 1. `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=llvm-bc`
//! 2. `llvm-link` with NVIDIA's libdevice (`--only-needed`: only the math
//!    functions the kernels call, e.g. `__nv_sinf`)
//! 3. `opt -passes=internalize,default<O3>` keeping only the kernel entries
//! 4. `llc -mcpu=$COALESCE_CUDA_ARCH` (default `sm_90`) to PTX
//!
//! The result is `$OUT_DIR/kernels.ptx`, embedded as `coalesce::PTX`. It must
//! call nothing outside itself (no `.extern .func`): the driver refuses that.
//!
//! Environment: `COALESCE_CUDA_ARCH` (target GPU, default `sm_90`),
//! `COALESCE_LIBDEVICE` (path of `libdevice.10.bc`), `CUDA_PATH`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, exit};

const TOOLCHAIN: &str = "nightly-2026-05-20";
const DEFAULT_ARCH: &str = "sm_90";

fn fail(msg: &str) -> ! {
    eprintln!("\nerror: building the GPU kernels failed\n  {}\n", msg.replace('\n', "\n  "));
    exit(1)
}

fn run(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| fail(&format!("could not start {what}: {e}")));
    if !status.success() {
        fail(&format!("{what} failed ({status}): {cmd:?}"));
    }
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for p in ["kernels/src", "kernels/Cargo.toml", "build.rs"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    for v in ["COALESCE_CUDA_ARCH", "COALESCE_LIBDEVICE", "CUDA_PATH", "CUDA_LIBRARY_PATH"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let arch = env::var("COALESCE_CUDA_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.into());
    if !arch.starts_with("sm_") {
        fail(&format!("COALESCE_CUDA_ARCH={arch:?}: expected a GPU architecture such as sm_90"));
    }
    println!("cargo:rustc-env=COALESCE_CUDA_ARCH={arch}");

    let tools = llvm_tools();
    let libdevice = find_libdevice(&root);
    let bitcode = compile_kernels(&root, &out, &arch);
    let entries = kernel_entries(&tools, &bitcode, &out);

    let linked = out.join("kernels.linked.bc");
    run(
        Command::new(tools.join("llvm-link")).arg(&bitcode).arg("--only-needed").arg(&libdevice).arg("-o").arg(&linked),
        "llvm-link (kernels + libdevice)",
    );
    let optimized = out.join("kernels.opt.bc");
    run(
        Command::new(tools.join("opt"))
            .arg("-passes=internalize,default<O3>")
            .arg(format!("-internalize-public-api-list={}", entries.join(",")))
            .arg(format!("-mcpu={arch}"))
            .arg(&linked)
            .arg("-o")
            .arg(&optimized),
        "opt",
    );
    let ptx = out.join("kernels.ptx");
    run(
        Command::new(tools.join("llc")).args(["-O3", &format!("-mcpu={arch}")]).arg(&optimized).arg("-o").arg(&ptx),
        "llc (PTX code generation)",
    );

    let text = std::fs::read_to_string(&ptx).unwrap_or_else(|e| fail(&format!("reading {}: {e}", ptx.display())));
    let externs: Vec<&str> = text.lines().filter(|l| l.contains(".extern .func")).collect();
    if !externs.is_empty() {
        fail(&format!(
            "the PTX calls functions it does not define (a panic path or an un-inlined core function):\n{}",
            externs.join("\n")
        ));
    }
}

/// rustup's `llvm-tools` component: `llvm-link`, `opt`, `llc` of rustc's LLVM.
fn llvm_tools() -> PathBuf {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_else(|| fail(&format!("`{rustc} --print sysroot` failed")));
    if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").is_file() {
        fail(&format!(
            "the rust-src component is missing (needed for -Zbuild-std=core).\n\
             Install it: rustup component add rust-src --toolchain {TOOLCHAIN}   (or run .ci/setup)"
        ));
    }
    let host = env::var("HOST").unwrap();
    let bin = sysroot.join("lib/rustlib").join(host).join("bin");
    if !["llvm-link", "opt", "llc"].iter().all(|t| bin.join(t).is_file()) {
        fail(&format!(
            "the llvm-tools component is missing (llvm-link, opt, llc in {}).\n\
             Install it: rustup component add llvm-tools --toolchain {TOOLCHAIN}   (or run .ci/setup)",
            bin.display()
        ));
    }
    bin
}

/// NVIDIA's libdevice: the CUDA math library as LLVM bitcode.
fn find_libdevice(root: &Path) -> PathBuf {
    if let Ok(p) = env::var("COALESCE_LIBDEVICE") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return p;
        }
        fail(&format!("COALESCE_LIBDEVICE={} is not a file", p.display()));
    }
    let mut tried = Vec::new();
    let roots = ["CUDA_PATH", "CUDA_LIBRARY_PATH"]
        .iter()
        .filter_map(|v| env::var(v).ok())
        .map(PathBuf::from)
        .chain([root.join(".cuda"), PathBuf::from("/usr/local/cuda")]);
    for r in roots {
        let p = r.join("nvvm/libdevice/libdevice.10.bc");
        if p.is_file() {
            return p;
        }
        tried.push(p.display().to_string());
    }
    fail(&format!(
        "libdevice.10.bc not found; looked in:\n  {}\n\
         Install it: .ci/setup   (fetches the PyPI wheel nvidia-cuda-nvcc-cu12 into .cuda/),\n\
         or point COALESCE_LIBDEVICE at libdevice.10.bc of a CUDA toolkit.",
        tried.join("\n  ")
    ))
}

/// Step 1: the kernels crate as LLVM bitcode for nvptx64.
fn compile_kernels(root: &Path, out: &Path, arch: &str) -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = out.join("nvptx");
    let mut cmd = Command::new(cargo);
    // The outer build's flags, target and jobserver are for the host build.
    for v in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(v);
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
    run(&mut cmd, "cargo rustc (kernels for nvptx64-nvidia-cuda)");
    let deps = target_dir.join("nvptx64-nvidia-cuda/release/deps");
    std::fs::read_dir(&deps)
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
fn kernel_entries(tools: &Path, bitcode: &Path, out: &Path) -> Vec<String> {
    let ll = out.join("kernels.ll");
    run(Command::new(tools.join("llvm-dis")).arg(bitcode).arg("-o").arg(&ll), "llvm-dis");
    let text = std::fs::read_to_string(&ll).unwrap();
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
