//! `--emulate`: every kernel on the CPU emulator at small sizes, checked
//! against the reference. Shows that the kernels work on a machine without
//! a GPU; the times are the emulator's and mean nothing about a GPU.

use super::{Bound, Report, Roofs, Row};
use anyhow::{Result, bail};
use coalesce::transpose::Variant;
use coalesce::{MatrixShape, emu};
use std::time::Instant;

pub fn run() -> Result<Report> {
    let mut rows = Vec::new();
    let (r, c) = (127, 65);
    let shape = MatrixShape::new(r, c)?;
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32 * 0.5 - 7.0).collect();
    let bytes = 2 * 4 * shape.len() as u64;
    let mut time = |op: &str, kernel: &str, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let t = Instant::now();
        f()?;
        rows.push(Row {
            op: op.into(),
            kernel: kernel.into(),
            shape: format!("{r}x{c}"),
            bytes,
            flops: 0,
            bound: Bound::Memory,
            median_ms: t.elapsed().as_secs_f64() * 1e3,
            reps: 1,
            gb_per_s: 0.0,
            tflop_per_s: 0.0,
            intensity: 0.0,
            percent_of_roof: 0.0,
            peer: None,
            peer_key: None,
        });
        Ok(())
    };
    time("copy", "copy kernel", &mut || {
        let mut out = vec![f32::NAN; shape.len()];
        emu::copy(&input, &mut out)?;
        if out != input {
            bail!("emulated copy is wrong");
        }
        Ok(())
    })?;
    for v in Variant::ALL {
        time("transpose", v.name(), &mut || {
            let mut out = vec![f32::NAN; shape.len()];
            emu::transpose(v, &input, &mut out, shape)?;
            if (0..r * c).any(|i| out[i] != input[(i % r) * c + i / r]) {
                bail!("emulated transpose {} is wrong", v.name());
            }
            Ok(())
        })?;
    }
    // No roofs on the CPU: 1 keeps the percentages finite and meaningless.
    let roofs = Roofs { copy_gb_per_s: 1.0, fma_tflop_per_s: 1.0 };
    rows.iter_mut().for_each(|row| row.finish(&roofs));
    Ok(Report {
        gpu: "CPU emulator".into(),
        sm_count: 0,
        ptx_arch: coalesce::CUDA_ARCH.into(),
        emulated: true,
        roofs,
        rows,
        peers_file: None,
    })
}
