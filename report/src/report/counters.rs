//! `--emulate --counters`: the memory counters of every transpose step and
//! the copy kernel, counted by the CPU emulator (no GPU): what `ncu` would
//! show as sectors per global request and shared-memory wavefronts per
//! request, per kernel and per source line. The model is in
//! `coalesce_kernels::emu::memory`; each output is checked against the
//! reference, and any checker finding fails the run.

use super::reference;
use anyhow::{Result, bail};
use coalesce::emu::{self, Op, Report, SiteCounters, Tally};
use coalesce::transpose::Variant;
use coalesce::{MatrixShape, kernels};
use std::fmt::Write as _;

/// Counts every kernel at `rows x cols` and returns the two tables (per
/// kernel, per line) as text.
pub fn run(rows: usize, cols: usize) -> Result<String> {
    let shape = MatrixShape::new(rows, cols)?;
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32 * 0.5 - 7.0).collect();
    let mut kernels = Vec::new();
    let mut out = vec![f32::NAN; shape.len()];
    kernels.push(("copy", checked("copy", emu::copy_checked(&input, &mut out)?)?));
    if out != input {
        bail!("emulated copy is wrong");
    }
    for v in Variant::ALL {
        let mut out = vec![f32::NAN; shape.len()];
        let report = checked(v.name(), emu::transpose_checked(v, &input, &mut out, shape)?)?;
        if reference::transpose_mismatch(&input, &out, rows, cols).is_some() {
            bail!("emulated transpose {} is wrong", v.name());
        }
        kernels.push((v.name(), report));
    }

    let mut s = String::new();
    writeln!(
        s,
        "Memory counters of one launch at {rows}x{cols}, counted by the CPU emulator\n\
         (32-byte sectors per global request; shared-memory wavefronts per request,\n\
         Hopper's 32 banks of 4 bytes; a request is one warp executing one load or store;\n\
         `used` is the share of the moved sectors' bytes that the threads asked for)\n"
    )?;
    writeln!(
        s,
        "{:<12}{:>22}{:>22}{:>20}{:>20}{:>7}",
        "kernel", "global ld sect/req", "global st sect/req", "shared st wf/req", "shared ld wf/req", "used"
    )?;
    for (name, report) in &kernels {
        let c = &report.counters;
        let cell = |op: Op| {
            let t = c.total(op);
            if t.requests == 0 { "-".to_string() } else { format!("{:.2} ({})", t.per_request(), width(c, op)) }
        };
        let (ld, st) = (c.total(Op::GlobalLoad), c.total(Op::GlobalStore));
        let used = (ld.bytes + st.bytes) as f64 / (32 * (ld.transactions + st.transactions)) as f64;
        writeln!(
            s,
            "{name:<12}{:>22}{:>22}{:>20}{:>20}{:>6.0}%",
            cell(Op::GlobalLoad),
            cell(Op::GlobalStore),
            cell(Op::SharedStore),
            cell(Op::SharedLoad),
            100.0 * used
        )?;
    }
    writeln!(s, "\n(in brackets: bytes each thread moves per access)\n\nPer source line:\n")?;
    writeln!(
        s,
        "{:<12}{:<24}{:<11}{:>6}{:>10}{:>20}{:>9}{:>7}",
        "kernel", "line", "access", "bytes", "requests", "per request", "ideal", "used"
    )?;
    for (name, report) in &kernels {
        for (i, site) in report.counters.sites.iter().enumerate() {
            line(&mut s, if i == 0 { name } else { "" }, site)?;
        }
    }
    Ok(s)
}

/// The report, or an error listing the checker's findings.
fn checked(name: &str, report: Report) -> Result<Report> {
    if !report.findings.is_empty() {
        let list: Vec<String> = report.findings.iter().map(|f| f.to_string()).collect();
        bail!("the emulator's checker found problems in {name}:\n{}", list.join("\n"));
    }
    Ok(report)
}

/// `4 B`, or `4-16 B` when an op's lines differ.
fn width(c: &kernels::emu::Counters, op: Op) -> String {
    let (lo, hi) = c.of(op).fold((u32::MAX, 0), |(lo, hi), s| (lo.min(s.width), hi.max(s.width)));
    if lo == hi { format!("{lo} B") } else { format!("{lo}-{hi} B") }
}

fn line(s: &mut String, kernel: &str, site: &SiteCounters) -> Result<()> {
    let t: &Tally = &site.tally;
    let used = match site.op.space() {
        kernels::Space::Global => format!("{:.0}%", 100.0 * t.bytes as f64 / (32 * t.transactions) as f64),
        kernels::Space::Shared => String::new(),
    };
    writeln!(
        s,
        "{kernel:<12}{:<24}{:<11}{:>6}{:>10}{:>20}{:>9.2}{used:>7}",
        format!("{}:{}:{}", site.site.file_name(), site.site.line, site.site.column),
        site.op.name(),
        site.width,
        t.requests,
        format!("{:.2} {}", t.per_request(), site.op.unit()),
        t.ideal_per_request(),
    )?;
    Ok(())
}
