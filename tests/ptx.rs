//! Checks of the PTX modules that need no GPU: each is what the driver will
//! accept, and every kernel compiles without stack frames or spills, for
//! every architecture shipped (`coalesce::MODULES`).

use coalesce::kernels::entry_points;
use std::path::PathBuf;
use std::process::Command;

fn entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap())
        .collect()
}

#[test]
fn every_kernel_is_an_entry_and_every_entry_is_listed() {
    let mut listed: Vec<&str> = entry_points().collect();
    listed.sort();
    for m in coalesce::MODULES {
        let mut found = entries(m.text);
        found.sort();
        assert_eq!(found, listed, "sm_{}: PTX entries and coalesce_kernels::KERNEL_MODULES disagree", m.arch);
    }
}

#[test]
fn modules_are_self_contained_and_for_their_architecture() {
    assert!(coalesce::MODULES.windows(2).all(|w| w[0].arch < w[1].arch), "MODULES lowest first");
    for m in coalesce::MODULES {
        let externs: Vec<&str> = m.text.lines().filter(|l| l.contains(".extern .func")).collect();
        assert!(
            externs.is_empty(),
            "sm_{}: the driver refuses PTX that calls undefined functions: {externs:?}",
            m.arch
        );
        assert!(m.text.contains(&format!(".target sm_{}", m.arch)), "sm_{}: wrong .target", m.arch);
    }
    assert!(coalesce::PTX.contains(&format!(".target {}", coalesce::CUDA_ARCH)));
}

/// The module a GPU gets: the newest it can run, none for one older than all.
#[test]
fn each_device_gets_the_newest_module_it_can_run() {
    let pick = |major, minor| coalesce::Ptx::pick(coalesce::MODULES, major, minor).map(|m| m.arch);
    assert_eq!(pick(9, 0), Some(90), "H100");
    assert_eq!(pick(10, 0), Some(90), "Blackwell JIT-compiles sm_90 PTX");
    assert_eq!(pick(8, 0), Some(80), "A100");
    assert_eq!(pick(8, 9), Some(80), "L40");
    assert_eq!(pick(7, 5), None, "T4: older than every module");
}

/// ptxas from a CUDA toolkit or the PyPI wheel (set up by `.ci/setup`).
fn ptxas() -> PathBuf {
    let candidates = ["COALESCE_PTXAS"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .chain(
            ["CUDA_PATH", "CUDA_LIBRARY_PATH"]
                .iter()
                .filter_map(std::env::var_os)
                .map(|r| PathBuf::from(r).join("bin/ptxas")),
        )
        .chain([
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cuda/bin/ptxas"),
            PathBuf::from("/usr/local/cuda/bin/ptxas"),
        ]);
    for c in candidates {
        if c.is_file() {
            return c;
        }
    }
    if Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return "ptxas".into();
    }
    panic!("ptxas not found: run .ci/setup (PyPI wheel nvidia-cuda-nvcc-cu12) or set COALESCE_PTXAS");
}

#[test]
fn ptxas_reports_no_stack_frame_and_no_spills() {
    for m in coalesce::MODULES {
        let log = ptxas_log(m.arch, m.text);
        println!("{log}");
    }
}

/// Runs `ptxas -v` on one module and checks every kernel's line.
fn ptxas_log(arch: u32, ptx: &str) -> String {
    let dir = std::env::temp_dir().join(format!("coalesce-ptx-{}-sm_{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kernels.ptx");
    std::fs::write(&file, ptx).unwrap();
    let out = Command::new(ptxas())
        .args(["-v", &format!("-arch=sm_{arch}"), "-o"])
        .arg(dir.join("kernels.cubin"))
        .arg(&file)
        .output()
        .expect("running ptxas");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ptxas rejected the sm_{arch} module:\n{log}");
    let _ = std::fs::remove_dir_all(&dir);

    // ptxas prints, per kernel: "Compiling entry function 'NAME'" then
    // "N bytes stack frame, N bytes spill stores, N bytes spill loads".
    let mut current = None;
    let mut seen = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_owned);
        }
        if line.contains("bytes stack frame") {
            let name = current.clone().expect("ptxas output out of order");
            assert!(
                line.trim() == "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
                "sm_{arch} {name}: {}\n{log}",
                line.trim()
            );
            seen.push(name);
        }
    }
    seen.sort();
    let mut listed: Vec<String> = entry_points().map(str::to_owned).collect();
    listed.sort();
    assert_eq!(seen, listed, "ptxas did not report every sm_{arch} kernel:\n{log}");
    log
}
