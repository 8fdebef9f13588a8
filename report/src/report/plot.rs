//! roofline.svg: the roofs (copy bandwidth; two compute ceilings, FP32 FMA
//! and, where measured, TF32 tensor cores with 3xTF32's third of it) and
//! every kernel as a labelled point.
//!
//! x: operations per byte of compulsory DRAM traffic; y: operations per
//! second. Operations are FLOPs; for kernels that only move data (copies,
//! transposes) one operation is one f32 element moved, so they sit at
//! 1/8 op/byte and climb straight up towards the bandwidth roof.

use super::{Report, Row};
use anyhow::{Result, anyhow};
use plotters::prelude::*;
use std::path::Path;

const OP_COLORS: [(&str, RGBColor); 6] = [
    ("transpose", RGBColor(31, 119, 180)),
    ("copy", RGBColor(127, 127, 127)),
    ("nested_sin", RGBColor(44, 160, 44)),
    ("softmax", RGBColor(214, 39, 40)),
    ("gemm", RGBColor(148, 103, 189)),
    ("roof", RGBColor(0, 0, 0)),
];

fn color(op: &str) -> RGBColor {
    OP_COLORS.iter().find(|(o, _)| *o == op).map_or(RGBColor(255, 127, 14), |(_, c)| *c)
}

pub fn write(report: &Report, path: &Path) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let bw = report.roofs.copy_gb_per_s; // G bytes/s
    let peak = report.roofs.fma_tflop_per_s * 1e3; // G ops/s
    let tc = report.roofs.tf32_tflop_per_s.map(|t| t * 1e3); // G ops/s
    let top = report.rows.iter().map(Row::gops).fold(tc.unwrap_or(peak).max(peak), f64::max);
    let (x0, x1, y0, y1) = (0.03f64, 3000.0f64, 20.0f64, top * 2.0);
    // A log axis to infinity never ends its ticks (plotters loops).
    anyhow::ensure!(
        y1.is_finite() && bw.is_finite() && bw > 0.0 && peak > 0.0,
        "drawing {}: the axis would reach {y1:e} G operations/s, copy roof {bw:e} GB/s, FMA roof {peak:e}: \
         a figure past what can be drawn",
        path.display()
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "coalesce roofline: {} (copy {:.0} GB/s, FP32 FMA {:.1}{} TFLOP/s)",
                report.gpu,
                bw,
                peak / 1e3,
                tc.map_or(String::new(), |t| format!(", TF32 tensor {:.1}", t / 1e3))
            ),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("operations per byte (FLOP; one per element moved for copies and transposes)")
        .y_desc("G operations / s")
        .draw()
        .map_err(|e| err(&e))?;
    let ridge = peak / bw;
    let roof = vec![(x0, bw * x0), (ridge, peak), (x1, peak)];
    chart.draw_series(LineSeries::new(roof, BLACK.stroke_width(2))).map_err(|e| err(&e))?;
    // The tensor-core ceilings: TF32 (the `tf32_peak` probe), where TF32
    // GEMM steps are measured, and a third of it, 3xTF32's, where the split
    // steps are; each joins the bandwidth slope above the FP32 ridge.
    if let Some(tc) = tc {
        // Teal, apart from every op's colour; the label sits above its line
        // (a text's position is its top left corner).
        let teal = RGBColor(0, 128, 128);
        for (ceiling, name, width) in [(tc, "TF32 tensor roof", 2), (tc / 3.0, "3xTF32 roof (a third)", 1)] {
            let line = vec![(ceiling / bw, ceiling), (x1, ceiling)];
            chart.draw_series(LineSeries::new(line, teal.stroke_width(width))).map_err(|e| err(&e))?;
            chart
                .draw_series([Text::new(
                    format!("{name} {:.1} TFLOP/s", ceiling / 1e3),
                    (ceiling / bw * 1.5, ceiling * 1.4),
                    ("sans-serif", 13).into_font().color(&teal),
                )])
                .map_err(|e| err(&e))?;
        }
        let slope = vec![(ridge, peak), (tc / bw, tc)];
        chart.draw_series(LineSeries::new(slope, BLACK.stroke_width(1))).map_err(|e| err(&e))?;
    }
    // The hardware's roof, from the memory clock and bus width: above the
    // copy roof (the driver's copy is a measured ceiling, not a law), grey,
    // up to where it meets the FP32 roof.
    if let Some(spec) = report.roofs.dram_spec_gb_per_s {
        let grey = RGBColor(150, 150, 150);
        let line = vec![(x0, spec * x0), (peak / spec, peak)];
        chart.draw_series(LineSeries::new(line, grey.stroke_width(1))).map_err(|e| err(&e))?;
        chart
            .draw_series([Text::new(
                format!("DRAM as specified {spec:.0} GB/s"),
                (x0 * 1.3, spec * x0 * 2.6),
                ("sans-serif", 12).into_font().color(&grey),
            )])
            .map_err(|e| err(&e))?;
    }
    chart
        .draw_series([
            Text::new(format!("copy roof {bw:.0} GB/s"), (x0 * 1.3, bw * x0 * 1.6), ("sans-serif", 13)),
            Text::new(format!("FP32 roof {:.1} TFLOP/s", peak / 1e3), (ridge * 1.5, peak * 1.15), ("sans-serif", 13)),
        ])
        .map_err(|e| err(&e))?;

    // One shape per op (the first measured) keeps the picture readable; the
    // table and report.json have every shape.
    let mut shown: Vec<&Row> = Vec::new();
    for r in report.rows.iter().filter(|r| r.op != "roof") {
        let first_shape = report.rows.iter().find(|o| o.op == r.op).map(|o| &o.shape);
        if Some(&r.shape) == first_shape {
            shown.push(r);
        }
    }
    let mut ops: Vec<&str> = Vec::new();
    for r in &shown {
        if !ops.contains(&r.op.as_str()) {
            ops.push(&r.op);
        }
    }
    // Kernels sit at their op's intensity: a ladder climbs straight up.
    // Labels form one column per side of the ridge (right of the points for
    // memory-bound kernels, left of them for compute-bound ones), pushed apart
    // vertically (at least x1.13 between neighbours), each joined to its
    // point by a thin line.
    for left_of_ridge in [true, false] {
        let mut side: Vec<&&Row> = shown.iter().filter(|r| (r.intensity < ridge) == left_of_ridge).collect();
        side.sort_by(|a, b| b.gops().total_cmp(&a.gops()));
        let mut label_y = f64::INFINITY;
        for r in side {
            let (x, y) = (r.intensity, r.gops());
            let c = color(&r.op);
            chart.draw_series([Circle::new((x, y), 5, c.filled())]).map_err(|e| err(&e))?;
            label_y = (y * 1.1).min(label_y / 1.13);
            let (lx, end) = if left_of_ridge { (x * 3.0, x * 2.9) } else { (x / 30.0, x / 1.5) };
            chart
                .draw_series([
                    PathElement::new(
                        vec![(if left_of_ridge { x * 1.1 } else { x / 1.1 }, y), (end, label_y)],
                        c.mix(0.5),
                    )
                    .into_dyn(),
                    Text::new(
                        format!("{} {}", r.kernel, r.shape),
                        (lx, label_y * 1.03),
                        ("sans-serif", 11).into_font().color(&c),
                    )
                    .into_dyn(),
                ])
                .map_err(|e| err(&e))?;
        }
    }
    // PyTorch: one hollow point per peer figure, labelled on the far side.
    let mut peers_drawn: Vec<String> = Vec::new();
    for r in &shown {
        let (Some(p), Some(key)) = (r.peer, r.peer_key.clone()) else { continue };
        if peers_drawn.contains(&key) {
            continue;
        }
        peers_drawn.push(key.clone());
        let c = color(&r.op);
        let py = match r.bound {
            super::Bound::Memory => p * r.intensity,
            super::Bound::Compute => p * 1e3,
        };
        let what = if key.contains("tf32") {
            format!("PyTorch TF32 {}", r.shape)
        } else {
            format!("PyTorch {} {}", r.op, r.shape)
        };
        let lx = if r.intensity < ridge { r.intensity / 12.0 } else { r.intensity * 1.3 };
        chart.draw_series([Circle::new((r.intensity, py), 6, c.stroke_width(2))]).map_err(|e| err(&e))?;
        chart
            .draw_series([Text::new(what, (lx, py * 0.97), ("sans-serif", 11).into_font().color(&c))])
            .map_err(|e| err(&e))?;
    }
    // Legend: one entry per op shown.
    for (i, op) in ops.iter().enumerate() {
        // Bottom right: below the compute-bound ladder, right of the memory one.
        let y = y0 * 1.6f64.powi((ops.len() - i) as i32 + 2);
        chart
            .draw_series([
                Circle::new((x1 / 12.0, y), 5, color(op).filled()).into_dyn(),
                Text::new(op.to_string(), (x1 / 10.0, y * 1.04), ("sans-serif", 13)).into_dyn(),
            ])
            .map_err(|e| err(&e))?;
    }
    chart
        .draw_series([Text::new(
            "filled: coalesce; hollow: PyTorch, same GPU and run".to_string(),
            (x0 * 1.2, y0 * 1.3),
            ("sans-serif", 12),
        )])
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
