//! Checks of the PTX modules that need no GPU: each is what the driver will
//! accept, and every kernel compiles without stack frames or spills, for
//! every architecture shipped (`coalesce::MODULES`).

use coalesce::kernels::{entry_points, entry_points_in};
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
    for m in coalesce::MODULES {
        let mut listed: Vec<&str> = entry_points_in(&m.name()).collect();
        listed.sort();
        let mut found = entries(m.text);
        found.sort();
        assert_eq!(found, listed, "{}: PTX entries and the registry disagree", m.name());
    }
    // The newest module has every kernel; the others lack exactly those
    // that need it.
    let newest = coalesce::MODULES.last().unwrap();
    assert_eq!(entries(newest.text).len(), entry_points().count(), "{} has every kernel", newest.name());
}

/// Kernels that need `sm_90a` (wgmma) are in that module and no other.
#[test]
fn sm_90a_kernels_are_in_the_sm_90a_module_only() {
    let wgmma = coalesce::gemm::Variant::Wgmma;
    assert_eq!(wgmma.registry().needs, Some("sm_90a"));
    for m in coalesce::MODULES {
        let has = entries(m.text).contains(&wgmma.entry_point());
        assert_eq!(has, m.name() == "sm_90a", "{}: {} present: {has}", m.name(), wgmma.entry_point());
        assert_eq!(m.text.contains("wgmma."), m.name() == "sm_90a", "{}: wgmma instructions", m.name());
    }
}

/// The TF32 roof probe issues `wgmma`: the registry says it needs `sm_90a`,
/// and only that module has its `.entry`.
#[test]
fn the_tf32_roof_probe_is_in_the_sm_90a_module_only() {
    let step = coalesce::kernels::ops::steps().find(|s| s.name == "tf32_peak").unwrap();
    assert_eq!((step.op, step.entry, step.needs), ("probe", "probe_tf32_peak", Some("sm_90a")));
    for m in coalesce::MODULES {
        let has = entries(m.text).contains(&step.entry);
        assert_eq!(has, m.name() == "sm_90a", "{}: {} present: {has}", m.name(), step.entry);
    }
}

#[test]
fn modules_are_self_contained_and_for_their_architecture() {
    let order = |m: &coalesce::Ptx| (m.arch, m.arch_specific);
    assert!(coalesce::MODULES.windows(2).all(|w| order(&w[0]) < order(&w[1])), "MODULES lowest first");
    for m in coalesce::MODULES {
        let externs: Vec<&str> = m.text.lines().filter(|l| l.contains(".extern .func")).collect();
        assert!(
            externs.is_empty(),
            "sm_{}: the driver refuses PTX that calls undefined functions: {externs:?}",
            m.arch
        );
        assert!(m.text.contains(&format!(".target {}\n", m.name())), "{}: wrong .target", m.name());
    }
    assert!(coalesce::PTX.contains(&format!(".target {}", coalesce::CUDA_ARCH)));
}

/// The module a GPU gets: the newest it can run, none for one older than all.
#[test]
fn each_device_gets_the_newest_module_it_can_run() {
    let pick = |major, minor| coalesce::Ptx::pick(coalesce::MODULES, major, minor).map(|m| m.name());
    let some = |name: &str| Some(name.to_owned());
    assert_eq!(pick(9, 0), some("sm_90a"), "H100: the architecture-specific module");
    assert_eq!(pick(10, 0), some("sm_90"), "Blackwell JIT-compiles sm_90 PTX, and runs no sm_90a");
    assert_eq!(pick(12, 0), some("sm_90"), "consumer Blackwell likewise");
    assert_eq!(pick(8, 0), some("sm_80"), "A100");
    assert_eq!(pick(8, 9), some("sm_80"), "L40");
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
        let log = ptxas_log(&m.name(), m.text);
        println!("{log}");
    }
}

/// Runs `ptxas -v` on one module and checks every kernel's line.
fn ptxas_log(arch: &str, ptx: &str) -> String {
    let dir = std::env::temp_dir().join(format!("coalesce-ptx-{}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kernels.ptx");
    std::fs::write(&file, ptx).unwrap();
    let out = Command::new(ptxas())
        .args(["-v", &format!("-arch={arch}"), "-o"])
        .arg(dir.join("kernels.cubin"))
        .arg(&file)
        .output()
        .expect("running ptxas");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ptxas rejected the {arch} module:\n{log}");
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
                "{arch} {name}: {}\n{log}",
                line.trim()
            );
            seen.push(name);
        }
    }
    seen.sort();
    // ptxas warns when it must serialise wgmma (accumulators touched while
    // in flight, or too few registers): a silent loss of the overlap.
    assert!(!log.contains("wgmma.mma_async instructions are serialized"), "{arch}: wgmma serialised:\n{log}");
    let mut listed: Vec<String> = entry_points_in(arch).map(str::to_owned).collect();
    listed.sort();
    assert_eq!(seen, listed, "ptxas did not report every {arch} kernel:\n{log}");
    log
}
