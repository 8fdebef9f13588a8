//! `--emulate`: every kernel on the CPU emulator at small sizes, checked
//! against the reference. Shows that the kernels work on a machine without
//! a GPU; the times are the emulator's and mean nothing about a GPU.

use super::{Bound, Report, Roofs, Row, reference};
use anyhow::{Result, bail};
use coalesce::MatrixShape;
use coalesce::transpose::Variant;
use std::time::Instant;

pub fn run() -> Result<Report> {
    let mut rows = Vec::new();
    let (r, c) = (127, 65);
    let shape = MatrixShape::new(r, c)?;
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32 * 0.5 - 7.0).collect();
    let bytes = 2 * 4 * shape.len() as u64;
    let mut time = |op: &str, kernel: &str, size: &str, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let t = Instant::now();
        f()?;
        let median_ms = t.elapsed().as_secs_f64() * 1e3;
        rows.push(Row { median_ms, reps: 1, ..Row::new(op, kernel, size, bytes, 0, Bound::Memory) });
        Ok(())
    };
    time("copy", "copy kernel", "127x65", &mut || {
        let mut out = vec![f32::NAN; shape.len()];
        coalesce::copy::emu::launch(&input, &mut out)?;
        if out != input {
            bail!("emulated copy is wrong");
        }
        Ok(())
    })?;
    for v in Variant::ALL {
        time("transpose", v.name(), "127x65", &mut || {
            let mut out = vec![f32::NAN; shape.len()];
            coalesce::transpose::emu::launch(v, &input, &mut out, shape)?;
            if reference::transpose_mismatch(&input, &out, r, c).is_some() {
                bail!("emulated transpose {} is wrong", v.name());
            }
            Ok(())
        })?;
    }
    let sin_in: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 185.0).collect();
    for v in coalesce::nested_sin::Variant::ALL {
        time("nested_sin", v.name(), "1000", &mut || {
            let mut out = vec![f32::NAN; sin_in.len()];
            coalesce::nested_sin::emu::launch(v, &sin_in, &mut out)?;
            if let Some((x, _)) = sin_in.iter().zip(&out).find(|&(x, g)| !reference::nested_sin_ok(v, *x, *g)) {
                bail!("emulated nested sin {} is wrong at {x}", v.name());
            }
            Ok(())
        })?;
    }
    let sm_shape = MatrixShape::new(33, 100)?;
    let sm_in: Vec<f32> = (0..sm_shape.len()).map(|i| ((i * 37) % 101) as f32 * 0.1 - 5.0).collect();
    for strategy in coalesce::softmax::Strategy::ALL {
        time("softmax", strategy.name(), "33x100", &mut || {
            let mut out = vec![f32::NAN; sm_shape.len()];
            coalesce::softmax::emu::with_strategy(strategy, &sm_in, &mut out, sm_shape)?;
            for row in out.chunks(100) {
                let sum: f64 = row.iter().map(|&v| v as f64).sum();
                if (sum - 1.0).abs() > 1e-6 {
                    bail!("emulated softmax {} row sums to {sum}", strategy.name());
                }
            }
            Ok(())
        })?;
    }
    let (m, n, k) = (17, 33, 65);
    let ga: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.5).collect();
    let gb: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 * 0.2 - 1.0).collect();
    for v in coalesce::gemm::Variant::ALL {
        time("gemm", v.name(), "17x33x65", &mut || {
            let mut c = vec![f32::NAN; m * n];
            let shape = coalesce::gemm::GemmShape::new(m, n, k)?;
            coalesce::gemm::emu::launch(v, &ga, &gb, &mut c, shape, coalesce::gemm::AlphaBeta::PRODUCT)?;
            for i in 0..m {
                for j in 0..n {
                    if !reference::gemm_element_ok(v, &ga, &gb, (k, n), (i, j), c[i * n + j]) {
                        bail!("emulated gemm {} is wrong at [{i}][{j}]", v.name());
                    }
                }
            }
            Ok(())
        })?;
    }
    let roofs = Roofs::emulated();
    rows.iter_mut().for_each(|row| row.finish(&roofs));
    Ok(Report {
        gpu: "CPU emulator".into(),
        sm_count: 0,
        ptx_arch: "none".into(),
        emulated: true,
        // Each kernel runs once, untimed by CUDA events: no warm-up.
        warmup_ms: None,
        warmup_reps: None,
        roofs,
        rows,
        peers_file: None,
    })
}
