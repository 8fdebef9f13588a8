//! The roofline report: rows of measured kernels, the roofs (copy, FP32
//! FMA, TF32 tensor cores), the table, the JSON and the picture.

pub mod counters;
pub mod emulate;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod pictures;
pub mod plot;
pub mod reference;

use coalesce::kernels::gemm::ozaki::LADDER_MODULI;
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

/// The ceiling a row is measured against: the roof of the units it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Roof {
    /// The device-to-device copy (memory-bound rows).
    Copy,
    /// The FP32 FMA probe (`fma_peak`): SIMT arithmetic.
    Fma,
    /// The TF32 tensor-core probe (`tf32_peak`): one TF32 product per
    /// multiply-add of the GEMM.
    Tf32,
    /// A third of the TF32 probe: 3xTF32 issues three TF32 products (big x
    /// big, big x small, small x big) per multiply-add of the GEMM, so its
    /// FLOPs, counted as the GEMM's `2 m n k`, top out at a third.
    Tf32Third,
    /// The INT8 tensor-core probe (`int8_peak`), in tera-operations per
    /// second: the products of an integer (Ozaki-II) GEMM.
    Int8,
    /// The INT8 probe over the moduli of step 17 (Ozaki scheme II,
    /// [`LADDER_MODULI`]): one INT8 product a modulus per multiply-add of
    /// the GEMM, so its FLOPs, counted as the GEMM's `2 m n k`, top out there.
    Int8Ozaki,
}

// `Roof::label` names the moduli.
const _: () = assert!(LADDER_MODULI == 9);

impl Roof {
    /// The roof of a GEMM whose products run at precision `p`.
    // Only the GPU measurement (and the tests) pick a GEMM's roof.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub fn for_precision(p: coalesce::gemm::Precision) -> Roof {
        use coalesce::gemm::Precision;
        match p {
            Precision::Fp32 => Roof::Fma,
            Precision::Tf32 => Roof::Tf32,
            Precision::Split3xTf32 { .. } => Roof::Tf32Third,
            Precision::Ozaki { .. } => Roof::Int8Ozaki,
        }
    }

    /// As the table's "roof" column names it.
    pub fn label(self) -> &'static str {
        match self {
            Roof::Copy => "copy",
            Roof::Fma => "FP32 FMA",
            Roof::Tf32 => "TF32 TC",
            Roof::Tf32Third => "TF32 TC/3",
            Roof::Int8 => "INT8 TC",
            Roof::Int8Ozaki => "INT8 TC/9",
        }
    }

    /// The ceiling in its unit (GB/s for the copy, TFLOP/s otherwise), or
    /// `None` for a tensor-core roof that `roofs` lacks (a GPU without
    /// `sm_90a`, a report written before it was measured).
    pub fn value(self, roofs: &Roofs) -> Option<f64> {
        match self {
            Roof::Copy => Some(roofs.copy_gb_per_s),
            Roof::Fma => Some(roofs.fma_tflop_per_s),
            Roof::Tf32 => roofs.tf32_tflop_per_s,
            Roof::Tf32Third => roofs.tf32_tflop_per_s.map(|t| t / 3.0),
            Roof::Int8 => roofs.int8_tops,
            Roof::Int8Ozaki => roofs.int8_tops.map(|t| t / LADDER_MODULI as f64),
        }
    }
}

/// One measured kernel at one size. Fields added after the first reports
/// are `Option`s, which serde reads as `None` where a report lacks them.
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
    /// Percent of the roof that binds it ([`Row::roof`]).
    pub percent_of_roof: f64,
    /// The roof `percent_of_roof` is of; `None` in reports written before
    /// rows named it, whose percentages are of the copy (memory-bound) or
    /// of the FMA roof (compute-bound): see [`Row::roof`].
    pub roof: Option<Roof>,
    /// For a memory-bound row, percent of the GPU's specified DRAM
    /// bandwidth ([`Roofs::dram_spec_gb_per_s`]); `None` for compute-bound
    /// rows and where there is no specified figure (the emulator).
    pub percent_of_dram_spec: Option<f64>,
    /// The PyTorch figure for the same work from the peers file, in the
    /// same unit as the row's binding metric (GB/s or TFLOP/s), if any.
    pub peer: Option<f64>,
    /// Key of the peer figure in torch_peers.json.
    pub peer_key: Option<String>,
}

impl Roofs {
    /// The emulator's: no roofs on the CPU, 1 keeps the percentages finite
    /// and meaningless; no DRAM to specify, so no percentage of it (null in
    /// report.json); no tensor-core probe, whose `wgmma` loop has no
    /// emulated rate to give (its unit test checks its body there).
    pub fn emulated() -> Roofs {
        Roofs {
            copy_gb_per_s: 1.0,
            fma_tflop_per_s: 1.0,
            tf32_tflop_per_s: None,
            int8_tops: None,
            dram_spec_gb_per_s: None,
        }
    }
}

impl Report {
    /// Fails unless every roof is a positive finite figure and every row
    /// has a positive finite time and finite figures: a report read back
    /// (`--from`) is drawn on log axes, where a zero time or an infinite
    /// figure has no place.
    pub fn check(&self) -> anyhow::Result<()> {
        let r = &self.roofs;
        let roofs = [
            ("copy_gb_per_s", Some(r.copy_gb_per_s)),
            ("fma_tflop_per_s", Some(r.fma_tflop_per_s)),
            ("tf32_tflop_per_s", r.tf32_tflop_per_s),
            ("int8_tops", r.int8_tops),
            ("dram_spec_gb_per_s", r.dram_spec_gb_per_s),
        ];
        for (name, value) in roofs {
            if let Some(v) = value {
                anyhow::ensure!(v.is_finite() && v > 0.0, "roofs.{name} is {v}: a roof is a positive finite figure");
            }
        }
        for row in &self.rows {
            let what = format!("row {} {} {}", row.op, row.kernel, row.shape);
            anyhow::ensure!(
                row.median_ms.is_finite() && row.median_ms > 0.0,
                "{what}: median_ms is {}: a time is positive and finite",
                row.median_ms
            );
            for (name, v) in
                [("gb_per_s", row.gb_per_s), ("tflop_per_s", row.tflop_per_s), ("intensity", row.intensity)]
            {
                anyhow::ensure!(v.is_finite(), "{what}: {name} is {v}");
            }
        }
        Ok(())
    }
}

/// The two measured roofs.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Roofs {
    /// Device-to-device copy (`cuMemcpyDtoD`, 1 GiB), bytes read + written.
    pub copy_gb_per_s: f64,
    /// FP32 FMA throughput of the `fma_peak` probe.
    pub fma_tflop_per_s: f64,
    /// TF32 tensor-core throughput of the `tf32_peak` probe (`wgmma`,
    /// `sm_90a` only). `None` on other GPUs, on the emulator, and in reports
    /// written before it was measured.
    pub tf32_tflop_per_s: Option<f64>,
    /// INT8 tensor-core throughput of the `int8_peak` probe (`wgmma`
    /// `m64n256k32` of signed bytes, `sm_90a` only), in tera-operations per
    /// second. `None` where `tf32_tflop_per_s` is, and in reports written
    /// before it was measured.
    pub int8_tops: Option<f64>,
    /// The DRAM bandwidth the device specifies (2 x memory clock x bus
    /// width / 8), bytes read + written: the hardware's roof, which the
    /// driver's copy does not reach. `None` on the emulator, and in reports
    /// written before it was recorded.
    pub dram_spec_gb_per_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub gpu: String,
    pub sm_count: u32,
    pub ptx_arch: String,
    pub emulated: bool,
    /// The untimed warm-up each kernel had before its timed repetitions, in
    /// ms (`--warmup-ms`, by default [`coalesce::SUSTAIN_MS`]): what the
    /// docs quote. `None` on the emulator (no warm-up) and in reports
    /// written before it was recorded.
    pub warmup_ms: Option<f64>,
    /// The fewest untimed warm-up repetitions each kernel had (`--warmup`):
    /// it had at least this many and at least `warmup_ms` of them. `None`
    /// where `warmup_ms` is.
    pub warmup_reps: Option<usize>,
    pub roofs: Roofs,
    pub rows: Vec<Row>,
    pub peers_file: Option<String>,
}

impl Row {
    /// A row of `kernel` not timed yet: every caller sets `median_ms` and
    /// `reps`, [`Row::finish`] derives the rest and [`merge_peers`] adds the
    /// peer figure.
    pub fn new(op: &str, kernel: &str, shape: &str, bytes: u64, flops: u64, bound: Bound) -> Row {
        Row {
            op: op.into(),
            kernel: kernel.into(),
            shape: shape.into(),
            bytes,
            flops,
            bound,
            median_ms: 0.0,
            reps: 0,
            gb_per_s: 0.0,
            tflop_per_s: 0.0,
            intensity: 0.0,
            percent_of_roof: 0.0,
            roof: None,
            percent_of_dram_spec: None,
            peer: None,
            peer_key: None,
        }
    }
    /// Derived figures from the measured median.
    pub fn finish(&mut self, roofs: &Roofs) {
        let s = self.median_ms * 1e-3;
        self.gb_per_s = self.bytes as f64 / s / 1e9;
        self.tflop_per_s = self.flops as f64 / s / 1e12;
        self.intensity = self.ops() as f64 / self.bytes as f64;
        // A tensor-core row on a GPU without the tensor roof is measured
        // against the FMA roof, and says so.
        let roof = match self.roof() {
            r if r.value(roofs).is_none() => Roof::Fma,
            r => r,
        };
        self.roof = Some(roof);
        let ceiling = roof.value(roofs).unwrap_or(roofs.fma_tflop_per_s);
        self.percent_of_roof = match roof {
            Roof::Copy => 100.0 * self.gb_per_s / ceiling,
            _ => 100.0 * self.tflop_per_s / ceiling,
        };
        self.percent_of_dram_spec = match self.bound {
            Bound::Memory => roofs.dram_spec_gb_per_s.map(|spec| 100.0 * self.gb_per_s / spec),
            Bound::Compute => None,
        };
    }
    /// The roof this row is measured against: as set, or for a row of an
    /// older report, the copy (memory-bound) or the FMA roof (compute-bound).
    pub fn roof(&self) -> Roof {
        self.roof.unwrap_or(match self.bound {
            Bound::Memory => Roof::Copy,
            Bound::Compute => Roof::Fma,
        })
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
    println!(
        "roofs: copy {:.0} GB/s, FP32 FMA {:.1} TFLOP/s, TF32 tensor cores {}, INT8 tensor cores {}; DRAM as specified {}",
        r.copy_gb_per_s,
        r.fma_tflop_per_s,
        r.tf32_tflop_per_s.map_or("n/a (no sm_90a)".into(), |t| format!("{t:.1} TFLOP/s (3xTF32: {:.1})", t / 3.0)),
        r.int8_tops.map_or("n/a".into(), |t| format!("{t:.0} TOPS")),
        r.dram_spec_gb_per_s
            .map_or("n/a".into(), |d| format!("{d:.0} GB/s ({:.1}% reached by the copy)", 100.0 * r.copy_gb_per_s / d))
    );
    let peers = report.rows.iter().any(|r| r.peer.is_some());
    print!(
        "\n{:<11} {:<22} {:<16} {:>10} {:>13} {:>9} {:>8} {:<10} {:>7}",
        "op", "kernel", "size", "median ms", "achieved", "FLOP/B", "% roof", "roof", "% DRAM"
    );
    if peers {
        print!(" {:>12} {:>8}", "PyTorch", "ratio");
    }
    println!();
    for row in &report.rows {
        let (v, unit) = row.binding();
        let ai = if row.flops > 0 { format!("{:.2}", row.flops as f64 / row.bytes as f64) } else { "0".into() };
        print!(
            "{:<11} {:<22} {:<16} {:>10.4} {:>13} {:>9} {:>7.1}% {:<10}",
            row.op,
            row.kernel,
            row.shape,
            row.median_ms,
            format!("{v:.1} {unit}"),
            ai,
            row.percent_of_roof,
            row.roof().label()
        );
        match row.percent_of_dram_spec {
            Some(p) => print!(" {p:>6.1}%"),
            None => print!(" {:>7}", if row.bound == Bound::Memory { "n/a" } else { "-" }),
        }
        if peers {
            match row.peer {
                Some(p) => print!(" {:>12} {:>7.2}x", format!("{p:.1} {unit}"), v / p),
                None => print!(" {:>12} {:>8}", "-", "-"),
            }
        }
        println!();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bound: Bound, bytes: u64, flops: u64, median_ms: f64) -> Row {
        Row { median_ms, reps: 1, ..Row::new("t", "k", "s", bytes, flops, bound) }
    }

    #[test]
    fn memory_rows_state_their_share_of_the_specified_dram_bandwidth() {
        // An H100 SXM: 2619 MHz HBM3 on a 5120-bit bus.
        let spec = coalesce::limits::dram_spec_gb_per_s(2_619_000, 5120);
        assert!((spec - 3352.32).abs() < 0.01, "{spec}");
        let roofs = Roofs {
            copy_gb_per_s: 3000.0,
            fma_tflop_per_s: 60.0,
            tf32_tflop_per_s: None,
            int8_tops: None,
            dram_spec_gb_per_s: Some(spec),
        };
        // 3 GB in 1 ms: 3000 GB/s, the copy roof, 89.5% of the specification.
        let mut memory = row(Bound::Memory, 3_000_000_000, 0, 1.0);
        memory.finish(&roofs);
        assert!((memory.percent_of_roof - 100.0).abs() < 1e-9);
        assert!((memory.percent_of_dram_spec.unwrap() - 100.0 * 3000.0 / spec).abs() < 1e-9);
        let mut compute = row(Bound::Compute, 1000, 30_000_000_000, 1.0);
        compute.finish(&roofs);
        assert_eq!(compute.percent_of_dram_spec, None);
        // No specification (the emulator): no percentage either.
        memory.finish(&Roofs { dram_spec_gb_per_s: None, ..roofs });
        assert_eq!(memory.percent_of_dram_spec, None);
    }

    #[test]
    fn reports_written_before_the_dram_column_still_load() {
        let old = r#"{"copy_gb_per_s": 3010.9, "fma_tflop_per_s": 62.5}"#;
        let roofs: Roofs = serde_json::from_str(old).unwrap();
        assert_eq!(roofs.dram_spec_gb_per_s, None);
        assert_eq!(roofs.tf32_tflop_per_s, None);
        // A row without a roof: its percentage was of the FMA roof.
        let old_row = r#"{"op": "gemm", "kernel": "wgmma", "shape": "4096^3", "bytes": 1, "flops": 1,
            "bound": "compute", "median_ms": 1.0, "reps": 1, "gb_per_s": 0, "tflop_per_s": 117.1,
            "intensity": 682.67, "percent_of_roof": 187.4, "peer": null}"#;
        let row: Row = serde_json::from_str(old_row).unwrap();
        assert_eq!((row.roof, row.roof()), (None, Roof::Fma));
    }

    /// report.json states the warm-up its figures were timed after, at its
    /// top beside the GPU; a report written before it still loads, without.
    #[test]
    fn report_json_records_the_warm_up_it_ran_with() {
        let roofs = Roofs::emulated();
        let report = Report {
            gpu: "G".into(),
            sm_count: 1,
            ptx_arch: "sm_90a".into(),
            emulated: false,
            warmup_ms: Some(coalesce::SUSTAIN_MS),
            warmup_reps: Some(5),
            roofs,
            rows: vec![],
            peers_file: None,
        };
        let json = serde_json::to_value(&report).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        for key in
            ["gpu", "sm_count", "ptx_arch", "emulated", "warmup_ms", "warmup_reps", "roofs", "rows", "peers_file"]
        {
            assert!(keys.contains(&key), "report.json lacks {key:?}: {keys:?}");
        }
        assert_eq!(json["warmup_ms"], serde_json::json!(coalesce::SUSTAIN_MS));
        assert_eq!(json["warmup_reps"], serde_json::json!(5));
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!((back.warmup_ms, back.warmup_reps), (Some(coalesce::SUSTAIN_MS), Some(5)));

        let old = r#"{"gpu": "NVIDIA H200", "sm_count": 132, "ptx_arch": "sm_90a", "emulated": false,
            "roofs": {"copy_gb_per_s": 4233.2, "fma_tflop_per_s": 62.5}, "rows": [], "peers_file": null}"#;
        let old: Report = serde_json::from_str(old).unwrap();
        assert_eq!((old.warmup_ms, old.warmup_reps), (None, None));
    }

    /// A report read back is checked before it is drawn: a zero time or a
    /// figure past f64 would put a log axis at infinity.
    #[test]
    fn a_report_with_a_zero_time_or_an_infinite_roof_is_refused() {
        let roofs = Roofs {
            copy_gb_per_s: 3000.0,
            fma_tflop_per_s: 60.0,
            tf32_tflop_per_s: None,
            int8_tops: None,
            dram_spec_gb_per_s: None,
        };
        let mut ok = row(Bound::Memory, 3_000_000_000, 0, 1.0);
        ok.finish(&roofs);
        let report = |roofs: Roofs, rows: Vec<Row>| Report {
            gpu: "G".into(),
            sm_count: 1,
            ptx_arch: "sm_90a".into(),
            emulated: false,
            warmup_ms: None,
            warmup_reps: None,
            roofs,
            rows,
            peers_file: None,
        };
        report(roofs, vec![ok.clone()]).check().unwrap();
        let zero = Row { median_ms: 0.0, ..ok.clone() };
        let e = report(roofs, vec![ok.clone(), zero]).check().unwrap_err();
        assert!(e.to_string().contains("row t k s: median_ms is 0"), "{e}");
        let e = report(Roofs { fma_tflop_per_s: f64::INFINITY, ..roofs }, vec![ok.clone()]).check().unwrap_err();
        assert!(e.to_string().contains("roofs.fma_tflop_per_s is inf"), "{e}");
        let e = report(Roofs { tf32_tflop_per_s: Some(-1.0), ..roofs }, vec![ok]).check().unwrap_err();
        assert!(e.to_string().contains("roofs.tf32_tflop_per_s is -1"), "{e}");
    }

    /// TF32 GEMM steps against the tensor roof, 3xTF32 ones against a third
    /// of it, FMA ones against the FMA roof; without a tensor roof, the FMA
    /// roof, named as such.
    #[test]
    fn each_gemm_row_is_measured_against_the_roof_of_its_units() {
        use coalesce::gemm::{Precision, Split, Variant};
        assert_eq!(Roof::for_precision(Precision::Fp32), Roof::Fma);
        assert_eq!(Roof::for_precision(Precision::Tf32), Roof::Tf32);
        for split in [Split::Rounded, Split::TopBits] {
            for promoted in [false, true] {
                assert_eq!(Roof::for_precision(Precision::Split3xTf32 { split, promoted }), Roof::Tf32Third);
            }
        }
        let step = |s: &str| Variant::ALL.into_iter().find(|v| v.step() == s).unwrap();
        let roof_of = |s: &str| Roof::for_precision(step(s).geometry().precision);
        for s in ["1", "2", "3", "4", "5", "6", "7"] {
            assert_eq!(roof_of(s), Roof::Fma, "step {s}");
        }
        for s in ["8", "9", "12"] {
            assert_eq!(roof_of(s), Roof::Tf32, "step {s}");
        }
        for s in ["10", "11", "13"] {
            assert_eq!(roof_of(s), Roof::Tf32Third, "step {s}");
        }
        assert_eq!(roof_of("17"), Roof::Int8Ozaki);

        let roofs = Roofs {
            copy_gb_per_s: 3000.0,
            fma_tflop_per_s: 60.0,
            tf32_tflop_per_s: Some(480.0),
            int8_tops: Some(1600.0),
            dram_spec_gb_per_s: None,
        };
        // 120 TFLOP/s: 25% of TF32, 75% of its third, 200% of FMA.
        let at = |roof: Roof, roofs: &Roofs| {
            let mut r = row(Bound::Compute, 1000, 120_000_000_000, 1.0);
            r.roof = Some(roof);
            r.finish(roofs);
            (r.roof(), (r.percent_of_roof * 1e6).round() / 1e6)
        };
        assert_eq!(at(Roof::Tf32, &roofs), (Roof::Tf32, 25.0));
        assert_eq!(at(Roof::Tf32Third, &roofs), (Roof::Tf32Third, 75.0));
        assert_eq!(at(Roof::Fma, &roofs), (Roof::Fma, 200.0));
        // 120 T ops/s of 1600: 7.5% of the INT8 roof.
        assert_eq!(at(Roof::Int8, &roofs), (Roof::Int8, 7.5));
        // Of 1600 / 9 T ops/s: 67.5%.
        assert_eq!(at(Roof::Int8Ozaki, &roofs), (Roof::Int8Ozaki, 67.5));
        let no_tc = Roofs { tf32_tflop_per_s: None, int8_tops: None, ..roofs };
        assert_eq!(at(Roof::Int8, &no_tc), (Roof::Fma, 200.0));
        assert_eq!(at(Roof::Int8Ozaki, &no_tc), (Roof::Fma, 200.0));
        assert_eq!(at(Roof::Tf32, &no_tc), (Roof::Fma, 200.0));
        assert_eq!(at(Roof::Tf32Third, &no_tc), (Roof::Fma, 200.0));
    }
}
