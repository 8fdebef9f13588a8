//! `--emulate --counters`: the memory counters of every kernel, counted by
//! the CPU emulator (no GPU): what `ncu` shows as sectors per global request
//! and shared-memory wavefronts per request, per kernel and per source line.
//! The model is in `coalesce_kernels::emu::cost`; each output is checked
//! against the reference, and any checker finding fails the run.
//!
//! Shapes are small, and chosen so that every block is an interior one
//! where the GPU measurements it is compared with are (`docs/*.md` put the
//! two side by side): per-request figures of interior blocks do not depend
//! on the matrix's size.

use super::reference;
use anyhow::{Result, bail};
use coalesce::emu::{Op, Report, SiteCounters, Tally};
use coalesce::gemm::{AlphaBeta, GemmShape};
use coalesce::softmax::{Kernel, Strategy};
use coalesce::{MatrixShape, kernels};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// One kernel's launch under the counters.
pub struct Counted {
    pub op: &'static str,
    pub kernel: String,
    pub shape: String,
    pub report: Report,
}

/// The `M x N x K` every GEMM step is counted at: whole tiles of every step.
pub const GEMM_SHAPE: (usize, usize, usize) = (256, 512, 64);
/// Elements of the nested sine's input.
pub const SIN_LEN: usize = 1 << 16;
/// Rows of each softmax launch.
pub const SOFTMAX_ROWS: usize = 4;

/// The row lengths of the softmax launches, and at each every strategy's
/// kernel and the online one: the launches of the ncu probe
/// (`tests/softmax/gpu.rs`, `gpu_ncu_probe`), on [`SOFTMAX_ROWS`] rows.
pub const SOFTMAX_COLS: [usize; 4] = [1024, 4096, 32_768, 50_000];

fn softmax_kernels(cols: usize) -> Vec<Kernel> {
    let mut kernels: Vec<Kernel> = Strategy::ALL.iter().filter_map(|s| s.kernel(cols as u32)).collect();
    if !kernels.contains(&Kernel::Online) {
        kernels.push(Kernel::Online);
    }
    kernels
}

/// Counts every kernel: the copy and the transposes at `rows x cols`, the
/// other ops at their fixed shapes above.
pub fn collect(rows: usize, cols: usize) -> Result<Vec<Counted>> {
    collect_where(rows, cols, |_, _, _| true)
}

/// [`collect`], launching only the kernels for which `keep(op, kernel,
/// shape)` holds.
pub fn collect_where(rows: usize, cols: usize, keep: impl Fn(&str, &str, &str) -> bool) -> Result<Vec<Counted>> {
    let mut all = Vec::new();
    let mut push = |op, kernel: &str, shape: String, report: Report| -> Result<()> {
        if !report.findings.is_empty() {
            let list: Vec<String> = report.findings.iter().map(|f| f.to_string()).collect();
            bail!("the emulator's checker found problems in {op} {kernel}:\n{}", list.join("\n"));
        }
        all.push(Counted { op, kernel: kernel.into(), shape, report });
        Ok(())
    };

    let shape = MatrixShape::new(rows, cols)?;
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32 * 0.5 - 7.0).collect();
    let mut out = vec![f32::NAN; shape.len()];
    if keep("copy", "copy", &shape.to_string()) {
        push("copy", "copy", shape.to_string(), coalesce::copy::emu::launch_checked(&input, &mut out)?)?;
        if out != input {
            bail!("emulated copy is wrong");
        }
    }
    for v in coalesce::transpose::Variant::ALL {
        if !keep("transpose", v.name(), &shape.to_string()) {
            continue;
        }
        let mut out = vec![f32::NAN; shape.len()];
        let report = coalesce::transpose::emu::launch_checked(v, &input, &mut out, shape)?;
        if reference::transpose_mismatch(&input, &out, rows, cols).is_some() {
            bail!("emulated transpose {} is wrong", v.name());
        }
        push("transpose", v.name(), shape.to_string(), report)?;
    }

    let sin_in: Vec<f32> = (0..SIN_LEN).map(|i| (i % 1000) as f32 * 0.37 - 185.0).collect();
    for v in coalesce::nested_sin::Variant::ALL {
        if !keep("nested_sin", v.name(), &format!("2^{}", SIN_LEN.trailing_zeros())) {
            continue;
        }
        let mut out = vec![f32::NAN; SIN_LEN];
        // One report per launch; the unfused step launches one kernel four
        // times, each counted alike: the first stands for them.
        let report = coalesce::nested_sin::emu::launches_checked(v, &sin_in, &mut out)?.swap_remove(0);
        if let Some((x, _)) = sin_in.iter().zip(&out).find(|&(x, g)| !reference::nested_sin_ok(v, *x, *g)) {
            bail!("emulated nested sin {} is wrong at {x}", v.name());
        }
        push("nested_sin", v.name(), format!("2^{}", SIN_LEN.trailing_zeros()), report)?;
    }

    for cols in SOFTMAX_COLS {
        let shape = MatrixShape::new(SOFTMAX_ROWS, cols)?;
        let input: Vec<f32> = (0..shape.len()).map(|i| ((i * 37) % 101) as f32 * 0.1 - 5.0).collect();
        for kernel in softmax_kernels(cols) {
            if !keep("softmax", kernel.name(), &shape.to_string()) {
                continue;
            }
            let mut out = vec![f32::NAN; shape.len()];
            let report = coalesce::softmax::emu::launch_checked(kernel, &input, &mut out, shape)?;
            for row in out.chunks(cols) {
                let sum: f64 = row.iter().map(|&v| v as f64).sum();
                if (sum - 1.0).abs() > 1e-5 {
                    bail!("emulated softmax {} row sums to {sum}", kernel.name());
                }
            }
            push("softmax", kernel.name(), shape.to_string(), report)?;
        }
    }

    let (m, n, k) = GEMM_SHAPE;
    let ga: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.5).collect();
    let gb: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 * 0.2 - 1.0).collect();
    let gshape = GemmShape::new(m, n, k)?;
    for v in coalesce::gemm::Variant::ALL {
        if !keep("gemm", v.name(), &format!("{m}x{n}x{k}")) {
            continue;
        }
        let mut c = vec![f32::NAN; m * n];
        let report = coalesce::gemm::emu::launch_checked(v, &ga, &gb, &mut c, gshape, AlphaBeta::PRODUCT)?;
        for (i, j) in [(0, 0), (m / 2, n / 3), (m - 1, n - 1)] {
            if !reference::gemm_element_ok(v, &ga, &gb, (k, n), (i, j), c[i * n + j]) {
                bail!("emulated gemm {} is wrong at [{i}][{j}]", v.name());
            }
        }
        push("gemm", v.name(), format!("{m}x{n}x{k}"), report)?;
    }
    Ok(all)
}

/// The two tables (per kernel, per line) as text.
pub fn table(all: &[Counted]) -> Result<String> {
    let mut s = String::new();
    writeln!(
        s,
        "Memory counters of one launch per kernel, counted by the CPU emulator\n\
         (32-byte sectors per global request; shared-memory wavefronts per request,\n\
         Hopper's 32 banks of 4 bytes; a request is one warp executing one load or store;\n\
         `asked/moved` is the global bytes the threads asked for over the bytes of the sectors\n\
         moved: under 100% the sectors carry bytes no thread asked for, over 100% threads of\n\
         a warp ask for the same bytes and one sector serves them all)\n"
    )?;
    writeln!(
        s,
        "{:<11}{:<17}{:<14}{:>20}{:>20}{:>18}{:>18}{:>12}{:>26}",
        "op",
        "kernel",
        "shape",
        "global ld sect/req",
        "global st sect/req",
        "shared st wf/req",
        "shared ld wf/req",
        "asked/moved",
        "cp.async sect/req, wf/req"
    )?;
    for k in all {
        let c = &k.report.counters;
        let cell = |op: Op| {
            let t = c.total(op);
            if t.requests == 0 { "-".to_string() } else { format!("{:.2} ({})", t.per_request(), width(c, op)) }
        };
        let (ld, st, cp) = (c.total(Op::GlobalLoad), c.total(Op::GlobalStore), c.total(Op::CopyAsyncLoad));
        let asked_over_moved = (ld.bytes + st.bytes + cp.bytes) as f64
            / (32 * (ld.transactions + st.transactions + cp.transactions)).max(1) as f64;
        let copies = match (cp.requests, c.total(Op::CopyAsyncStore)) {
            (0, _) => "-".to_string(),
            (_, shared) => format!("{:.2}, {:.2}", cp.per_request(), shared.per_request()),
        };
        writeln!(
            s,
            "{:<11}{:<17}{:<14}{:>20}{:>20}{:>18}{:>18}{:>11.0}%{:>26}",
            k.op,
            k.kernel,
            k.shape,
            cell(Op::GlobalLoad),
            cell(Op::GlobalStore),
            cell(Op::SharedStore),
            cell(Op::SharedLoad),
            100.0 * asked_over_moved,
            copies
        )?;
    }
    writeln!(s, "\n(in brackets: bytes each thread moves per access)\n\nPer source line:\n")?;
    writeln!(
        s,
        "{:<28}{:<28}{:<11}{:>6}{:>10}{:>20}{:>9}{:>12}",
        "kernel", "line", "access", "bytes", "requests", "per request", "ideal", "asked/moved"
    )?;
    for k in all {
        let name = format!("{} {}", k.op, k.kernel);
        for (i, site) in k.report.counters.sites.iter().enumerate() {
            line(&mut s, if i == 0 { &name } else { "" }, site)?;
        }
    }
    Ok(s)
}

/// Every kernel's totals per op and its lines, for the pages
/// (`scripts/docs/pages.py`, `Counters`).
pub fn json(all: &[Counted]) -> Value {
    let tally = |t: &Tally| {
        json!({
            "requests": t.requests, "accesses": t.accesses, "bytes": t.bytes,
            "transactions": t.transactions, "ideal": t.ideal,
            "per_request": t.per_request(), "ideal_per_request": t.ideal_per_request(),
        })
    };
    let kernels: Vec<Value> = all
        .iter()
        .map(|k| {
            let c = &k.report.counters;
            let totals: serde_json::Map<String, Value> = Op::ALL
                .iter()
                .filter(|&&op| c.total(op).requests > 0)
                .map(|&op| (op.name().to_string(), tally(&c.total(op))))
                .collect();
            let lines: Vec<Value> = c
                .sites
                .iter()
                .map(|s| {
                    json!({
                        "file": s.site.file_name(), "line": s.site.line, "column": s.site.column,
                        "access": s.op.name(), "bytes": s.width, "tally": tally(&s.tally),
                    })
                })
                .collect();
            json!({ "op": k.op, "kernel": k.kernel, "shape": k.shape, "totals": totals, "lines": lines })
        })
        .collect();
    json!({ "unit": { "global": "32-byte sectors per request", "shared": "wavefronts per request" }, "kernels": kernels })
}

/// `4 B`, or `4-16 B` when an op's lines differ.
fn width(c: &kernels::emu::Counters, op: Op) -> String {
    let (lo, hi) = c.of(op).fold((u32::MAX, 0), |(lo, hi), s| (lo.min(s.width), hi.max(s.width)));
    if lo == hi { format!("{lo} B") } else { format!("{lo}-{hi} B") }
}

fn line(s: &mut String, kernel: &str, site: &SiteCounters) -> Result<()> {
    let t: &Tally = &site.tally;
    let asked_over_moved = match site.op.space() {
        kernels::Space::Global => format!("{:.0}%", 100.0 * t.bytes as f64 / (32 * t.transactions).max(1) as f64),
        kernels::Space::Shared => String::new(),
    };
    writeln!(
        s,
        "{kernel:<28}{:<28}{:<11}{:>6}{:>10}{:>20}{:>9.2}{asked_over_moved:>12}",
        format!("{}:{}:{}", site.site.file_name(), site.site.line, site.site.column),
        site.op.name(),
        site.width,
        t.requests,
        format!("{:.2} {}", t.per_request(), site.op.unit()),
        t.ideal_per_request(),
    )?;
    Ok(())
}
