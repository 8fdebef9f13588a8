//! The roofline report: rows of measured kernels, the two roofs, the table,
//! the JSON and the picture.

pub mod counters;
pub mod emulate;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod pictures;
pub mod plot;
pub mod reference;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which roof limits a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Limited by memory bandwidth: compared with the copy roof in GB/s.
    Memory,
    /// Limited by FP32 arithmetic: compared with the FMA roof in TFLOP/s.
    Compute,
}

/// One measured kernel at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub op: String,
    pub kernel: String,
    pub shape: String,
    /// Fewest bytes the kernel must move (each input read once, each output written once).
    pub bytes: u64,
    /// Floating-point operations (0 for copies and transposes).
    pub flops: u64,
    pub bound: Bound,
    pub median_ms: f64,
    pub reps: usize,
    pub gb_per_s: f64,
    pub tflop_per_s: f64,
    /// FLOP per byte; for data movement (no FLOPs), elements moved per byte.
    pub intensity: f64,
    /// Percent of the roof that binds it.
    pub percent_of_roof: f64,
    /// The PyTorch figure for the same work from the peers file, in the
    /// same unit as the row's binding metric (GB/s or TFLOP/s), if any.
    pub peer: Option<f64>,
    /// Key of the peer figure in torch_peers.json.
    #[serde(default)]
    pub peer_key: Option<String>,
}

/// The two measured roofs.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Roofs {
    /// Device-to-device copy (`cuMemcpyDtoD`, 1 GiB), bytes read + written.
    pub copy_gb_per_s: f64,
    /// FP32 FMA throughput of the `fma_peak` probe.
    pub fma_tflop_per_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub gpu: String,
    pub sm_count: u32,
    pub ptx_arch: String,
    pub emulated: bool,
    pub roofs: Roofs,
    pub rows: Vec<Row>,
    pub peers_file: Option<String>,
}

impl Row {
    /// Derived figures from the measured median.
    pub fn finish(&mut self, roofs: &Roofs) {
        let s = self.median_ms * 1e-3;
        self.gb_per_s = self.bytes as f64 / s / 1e9;
        self.tflop_per_s = self.flops as f64 / s / 1e12;
        self.intensity = self.ops() as f64 / self.bytes as f64;
        self.percent_of_roof = match self.bound {
            Bound::Memory => 100.0 * self.gb_per_s / roofs.copy_gb_per_s,
            Bound::Compute => 100.0 * self.tflop_per_s / roofs.fma_tflop_per_s,
        };
    }
    /// Operations for the roofline's x axis: FLOPs, or for a kernel without
    /// any, one per f32 element moved (bytes / 8 counts a read and a write).
    pub fn ops(&self) -> u64 {
        if self.flops > 0 { self.flops } else { self.bytes / 8 }
    }
    /// Operations per second, in G/s (the roofline's y axis).
    pub fn gops(&self) -> f64 {
        self.ops() as f64 / (self.median_ms * 1e-3) / 1e9
    }
    fn binding(&self) -> (f64, &'static str) {
        match self.bound {
            Bound::Memory => (self.gb_per_s, "GB/s"),
            Bound::Compute => (self.tflop_per_s, "TFLOP/s"),
        }
    }
}

/// Fills in PyTorch figures from a torch_peers.json, converting time-based
/// entries (`*_ms`) to the row's unit.
pub fn merge_peers(rows: &mut [Row], peers: &BTreeMap<String, serde_json::Value>) {
    for r in rows {
        let Some(key) = &r.peer_key else { continue };
        let Some(v) = peers.get(key).and_then(|v| v.as_f64()) else { continue };
        r.peer = Some(if key.ends_with("_ms") {
            match r.bound {
                Bound::Memory => r.bytes as f64 / (v * 1e-3) / 1e9,
                Bound::Compute => r.flops as f64 / (v * 1e-3) / 1e12,
            }
        } else {
            v
        });
    }
}

/// The table, one row per kernel, grouped by op.
pub fn print_table(report: &Report) {
    let r = &report.roofs;
    if report.emulated {
        println!("\nCPU emulator: every kernel body run on the CPU and checked; times are not meaningful");
    } else {
        println!("\n{} ({} SMs), PTX {}", report.gpu, report.sm_count, report.ptx_arch);
    }
    if report.emulated {
        println!("\n{:<11} {:<22} {:<16} {:>12}  result", "op", "kernel", "size", "emulator ms");
        for row in &report.rows {
            println!(
                "{:<11} {:<22} {:<16} {:>12.1}  matches the reference",
                row.op, row.kernel, row.shape, row.median_ms
            );
        }
        return;
    }
    println!("roofs: copy {:.0} GB/s, FP32 FMA {:.1} TFLOP/s", r.copy_gb_per_s, r.fma_tflop_per_s);
    let peers = report.rows.iter().any(|r| r.peer.is_some());
    print!(
        "\n{:<11} {:<22} {:<16} {:>10} {:>12} {:>9} {:>8}",
        "op", "kernel", "size", "median ms", "achieved", "FLOP/B", "% roof"
    );
    if peers {
        print!(" {:>12} {:>8}", "PyTorch", "ratio");
    }
    println!();
    for row in &report.rows {
        let (v, unit) = row.binding();
        let ai = if row.flops > 0 { format!("{:.2}", row.flops as f64 / row.bytes as f64) } else { "0".into() };
        print!(
            "{:<11} {:<22} {:<16} {:>10.4} {:>12} {:>9} {:>7.1}%",
            row.op,
            row.kernel,
            row.shape,
            row.median_ms,
            format!("{v:.1} {unit}"),
            ai,
            row.percent_of_roof
        );
        if peers {
            match row.peer {
                Some(p) => print!(" {:>12} {:>7.2}x", format!("{p:.1} {unit}"), v / p),
                None => print!(" {:>12} {:>8}", "-", "-"),
            }
        }
        println!();
    }
}
