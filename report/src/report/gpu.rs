//! Measuring on the GPU: the roofs, then every op's kernels at their
//! standard sizes, each validated before it is timed.

use super::{Bound, Roof, Roofs, Row, reference};
use anyhow::{Result, bail};
use coalesce::timing::sustained_warmups;
use coalesce::transpose::Variant;
use coalesce::{Gpu, MatrixShape, Stream, probe, time_on_stream, transpose};
use cust::memory::{CopyDestination, DeviceBuffer};
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// What every measurement needs.
pub struct Ctx<'g> {
    pub gpu: &'g Gpu,
    pub stream: Stream<'g>,
    pub warmup: usize,
    /// Untimed time per kernel before the timed repetitions, in ms.
    pub warmup_ms: f64,
    pub reps: usize,
    pub progress: ProgressBar,
    pub rng: StdRng,
}

impl<'g> Ctx<'g> {
    pub fn new(gpu: &'g Gpu, (warmup, warmup_ms): (usize, f64), reps: usize) -> Result<Self> {
        Ok(Ctx {
            gpu,
            stream: gpu.stream()?,
            warmup,
            warmup_ms,
            reps,
            progress: ProgressBar::hidden(),
            rng: StdRng::from_os_rng(),
        })
    }

    /// Times `work` and returns a row (figures filled in by `Row::finish`).
    #[allow(clippy::too_many_arguments)]
    pub fn measure(
        &self, op: &str, kernel: &str, shape: &str, bytes: u64, flops: u64, bound: Bound, peer_key: Option<String>,
        work: impl FnMut() -> coalesce::Result<()>,
    ) -> Result<Row> {
        self.progress.set_message(format!("{op} {kernel} {shape}"));
        let mut work = work;
        // Slow kernels (a naive GEMM at 8192^3 takes a third of a second) get
        // fewer repetitions: about a second each, and never fewer than 5.
        let probe = time_on_stream(&self.stream, self.warmup.min(1), 1, &mut work)?.median_ms();
        let reps = ((1000.0 / probe.max(1e-3)) as usize).clamp(5, self.reps.max(5));
        // Then at least `warmup_ms` more (`coalesce::time_sustained`), from the same probe.
        let warm = sustained_warmups(probe, self.warmup.saturating_sub(1), self.warmup_ms);
        let t = time_on_stream(&self.stream, warm, reps, work)?;
        self.progress.inc(1);
        Ok(Row {
            median_ms: t.median_ms(),
            reps: t.samples_ms().len(),
            peer_key,
            ..Row::new(op, kernel, shape, bytes, flops, bound)
        })
    }

    pub fn random(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.rng.random_range(-1.0f32..1.0)).collect()
    }
}

/// The roofs: a 1 GiB device-to-device copy, the FMA probe, and where the
/// module has `wgmma` (`sm_90a`), the TF32 tensor-core probe.
pub fn roofs(ctx: &mut Ctx<'_>) -> Result<(Roofs, Vec<Row>)> {
    let len = 1 << 28;
    let src = ctx.gpu.upload(&vec![1.0f32; len])?;
    let mut dst = ctx.gpu.alloc::<f32>(len)?;
    let s = &ctx.stream;
    let bytes = 2 * 4 * len as u64;
    let copy =
        ctx.measure("roof", "cuMemcpyDtoD", "1 GiB", bytes, 0, Bound::Memory, Some("copy_GBs".into()), || {
            s.copy(&src, &mut dst)
        })?;
    drop((src, dst));
    let blocks = ctx.gpu.sm_count() * 8;
    let iters = 4096;
    let mut out = ctx.gpu.alloc::<f32>(probe::fma_peak_out_len(blocks))?;
    let flops = coalesce::kernels::probe::fma_peak_flops(blocks, iters);
    let s = &ctx.stream;
    let fma = probe_row(ctx, "fma_peak", blocks, out.len(), flops, || {
        probe::fma_peak(s, &mut out, blocks, iters).map(|_| ())
    })?;
    let (mut copy, mut fma) = (copy, fma);
    copy.roof = Some(Roof::Copy);
    fma.roof = Some(Roof::Fma);
    let mut rows = vec![copy, fma];
    // One block per SM (its registers allow no more), each round 8 wgmma
    // of 128 tensor-core cycles: 2048 rounds take about a millisecond on an
    // H100. The INT8 probe has the TF32 one's launch, each round four times
    // its products.
    use coalesce::kernels::probe::{int8_peak_ops, tf32_peak_flops};
    let (blocks, iters) = (ctx.gpu.sm_count(), 2048);
    let s = &ctx.stream;
    let tf32 = (Roof::Tf32, "tf32_peak", blocks, tf32_peak_flops(blocks, iters));
    let tf32_tflop_per_s = tensor_roof(ctx, &mut rows, tf32, |out| probe::tf32_peak(s, out, blocks, iters))?;
    let int8 = (Roof::Int8, "int8_peak", blocks, int8_peak_ops(blocks, iters));
    let int8_tops = tensor_roof(ctx, &mut rows, int8, |out| probe::int8_peak(s, out, blocks, iters))?;
    let roofs = Roofs {
        copy_gb_per_s: rows[0].bytes as f64 / (rows[0].median_ms * 1e-3) / 1e9,
        fma_tflop_per_s: flops as f64 / (rows[1].median_ms * 1e-3) / 1e12,
        tf32_tflop_per_s,
        int8_tops,
        dram_spec_gb_per_s: ctx.gpu.dram_spec_gb_per_s(),
    };
    Ok((roofs, rows))
}

/// Times the tensor-core probe `kernel` (`blocks` blocks, `ops` operations
/// a launch, measured against `roof`) into a row of `rows`, where the
/// loaded module has it: `run` launches it on its output. Returns the roof
/// in tera-operations per second.
fn tensor_roof<T: cust::memory::DeviceCopy + Default>(
    ctx: &Ctx<'_>, rows: &mut Vec<Row>, (roof, kernel, blocks, ops): (Roof, &str, u32, u64),
    mut run: impl FnMut(&mut cust::memory::DeviceBuffer<T>) -> coalesce::Result<u64>,
) -> Result<Option<f64>> {
    if !ctx.gpu.has_kernel(&format!("probe_{kernel}")) {
        return Ok(None);
    }
    let mut out = ctx.gpu.alloc::<T>(probe::tf32_peak_out_len(blocks))?;
    let mut row = probe_row(ctx, kernel, blocks, out.len(), ops, || run(&mut out).map(|_| ()))?;
    row.roof = Some(roof);
    let tops = ops as f64 / (row.median_ms * 1e-3) / 1e12;
    rows.push(row);
    Ok(Some(tops))
}

/// Times the compute probe `kernel` (`blocks` blocks of 256 threads, `flops`
/// in all, writing `out_len` floats): a roof row.
fn probe_row(
    ctx: &Ctx<'_>, kernel: &str, blocks: u32, out_len: usize, flops: u64, run: impl FnMut() -> coalesce::Result<()>,
) -> Result<Row> {
    ctx.measure("roof", kernel, &format!("{blocks}x256 thr"), 4 * out_len as u64, flops, Bound::Compute, None, run)
}

/// How many measurements [`transpose`] makes for `shapes` on `gpu`.
pub fn transpose_count(gpu: &coalesce::Gpu, shapes: &[(usize, usize)]) -> u64 {
    let copies = 1 + gpu.has_kernel("copy_bulk_f32") as u64;
    shapes.len() as u64 * (Variant::ALL.len() as u64 + copies)
}

/// Our copy kernels (the bulk copy where the module has it) and every
/// transpose version at each shape.
pub fn transpose(ctx: &mut Ctx<'_>, shapes: &[(usize, usize)]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &(r, c) in shapes {
        let shape = MatrixShape::new(r, c)?;
        let host = ctx.random(shape.len());
        let input = ctx.gpu.upload(&host)?;
        let mut output = ctx.gpu.alloc::<f32>(shape.len())?;
        let bytes = 2 * 4 * shape.len() as u64;
        let name = format!("{r}x{c}");
        let s = &ctx.stream;
        rows.push(ctx.measure("copy", "copy kernel", &name, bytes, 0, Bound::Memory, None, || {
            coalesce::copy::copy(s, &input, &mut output)
        })?);
        if ctx.gpu.has_kernel("copy_bulk_f32") {
            let got = poisoned_run(s, &mut output, shape.len(), |out| coalesce::copy::copy_bulk(s, &input, out))?;
            if let Some(i) = got.iter().zip(&host).position(|(g, h)| g.to_bits() != h.to_bits()) {
                bail!("copy_bulk on {shape} is wrong at {i}");
            }
            rows.push(ctx.measure("copy", "copy bulk", &name, bytes, 0, Bound::Memory, None, || {
                coalesce::copy::copy_bulk(s, &input, &mut output)
            })?);
        }
        for v in Variant::ALL {
            let got = poisoned_run(s, &mut output, shape.len(), |out| transpose::launch(s, v, &input, out, shape))?;
            if let Some((i, j)) = reference::transpose_mismatch(&host, &got, r, c) {
                bail!("transpose {} on {shape} is wrong at output[{i}][{j}]", v.name());
            }
            let peer = (r == c).then(|| format!("torch_transpose_{r}_GBs"));
            rows.push(ctx.measure("transpose", v.name(), &name, bytes, 0, Bound::Memory, peer, || {
                transpose::launch(s, v, &input, &mut output, shape)
            })?);
        }
    }
    Ok(rows)
}

/// Correct before fast, the run half of it: fills `output` with NaN, runs
/// `launch` into it once, waits for `stream`, and returns the first `keep`
/// elements of `output` (a NaN among them was never written).
fn poisoned_run(
    stream: &Stream<'_>, output: &mut DeviceBuffer<f32>, keep: usize,
    launch: impl FnOnce(&mut DeviceBuffer<f32>) -> coalesce::Result<()>,
) -> Result<Vec<f32>> {
    let len = output.len();
    output.copy_from(&vec![f32::NAN; len][..])?;
    launch(output)?;
    stream.synchronize()?;
    let mut got = vec![0.0f32; keep];
    output.index(..keep).copy_to(&mut got[..])?;
    Ok(got)
}

/// Elements of the nested-sin measurements: 2^28 f32, 1 GiB each way, far
/// past the L2.
pub const NESTED_SIN_LEN: usize = 1 << 28;

/// How many measurements [`nested_sin`] makes.
pub fn nested_sin_count() -> u64 {
    coalesce::nested_sin::Variant::ALL.len() as u64
}

/// Every nested-sin version at 2^28 elements, each checked on the first
/// 2^16 outputs against sin^4 in f64 before it is timed.
pub fn nested_sin(ctx: &mut Ctx<'_>) -> Result<Vec<Row>> {
    use coalesce::nested_sin::{self, Variant as Sin};
    let n = NESTED_SIN_LEN;
    // |x| <= 300 keeps `fast` (sin.approx) inside its documented range.
    let host: Vec<f32> = (0..n).map(|i| ((i as u64 * 2_654_435_761) % 600_001) as f32 * 1e-3 - 300.0).collect();
    let input = ctx.gpu.upload(&host)?;
    let mut output = ctx.gpu.alloc::<f32>(n)?;
    let mut rows = Vec::new();
    for v in Sin::ALL {
        let s = &ctx.stream;
        let got = poisoned_run(s, &mut output, 1 << 16, |out| nested_sin::launch(s, v, &input, out))?;
        if let Some(i) = (0..got.len()).find(|&i| !reference::nested_sin_ok(v, host[i], got[i])) {
            bail!("nested sin {} is wrong at {i}: sin^4({}) gave {}", v.name(), host[i], got[i]);
        }
        let peer =
            Some(if v == Sin::Unfused { "torch_nested_sin_unfused_ms" } else { "torch_nested_sin_compiled_ms" }.into());
        rows.push(ctx.measure("nested_sin", v.name(), "2^28", 8 * n as u64, 0, Bound::Memory, peer, || {
            nested_sin::launch(s, v, &input, &mut output)
        })?);
    }
    Ok(rows)
}

/// The softmax shapes, the same as PyTorch's peers script measures.
pub const SOFTMAX_SHAPES: [(usize, usize); 3] = [(65536, 1024), (16384, 4096), (4096, 32768)];

/// How many measurements [`softmax`] makes.
pub fn softmax_count() -> u64 {
    SOFTMAX_SHAPES.len() as u64 + 2
}

/// Row softmax at each shape with the kernel the dispatch picks, plus the
/// online strategy forced on the longest rows, with and without its stash
/// (the lesson of docs/softmax.md).
/// The first 8 rows of each result are checked against f64 first.
pub fn softmax(ctx: &mut Ctx<'_>) -> Result<Vec<Row>> {
    use coalesce::softmax::{self, Kernel, Strategy};
    let mut rows = Vec::new();
    for (i, &(r, c)) in SOFTMAX_SHAPES.iter().enumerate() {
        let shape = MatrixShape::new(r, c)?;
        let host: Vec<f32> = ctx.random(shape.len()).into_iter().map(|x| x * 8.0).collect();
        let input = ctx.gpu.upload(&host)?;
        let mut output = ctx.gpu.alloc::<f32>(shape.len())?;
        let mut kernels = vec![Kernel::for_cols(c as u32)];
        if i + 1 == SOFTMAX_SHAPES.len() {
            // The online strategy forced, with its shared-memory stash and without.
            kernels.push(softmax::kernel_for(Strategy::Online, shape)?);
            kernels.push(Kernel::Online);
        }
        for k in kernels {
            let s = &ctx.stream;
            let got = poisoned_run(s, &mut output, 8 * c, |out| softmax::launch(s, k, &input, out, shape))?;
            for row in 0..8 {
                let x = &host[row * c..(row + 1) * c];
                let max = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
                let sum: f64 = x.iter().map(|&v| (v as f64 - max).exp()).sum();
                for (j, &g) in got[row * c..(row + 1) * c].iter().enumerate() {
                    let want = (x[j] as f64 - max).exp() / sum;
                    let err = (g as f64 - want).abs();
                    if err.is_nan() || err > 1e-6 * want + 1e-12 {
                        bail!("softmax {} on {shape} is wrong at [{row}][{j}]: {g} vs {want}", k.name());
                    }
                }
            }
            let name = format!("{r}x{c}");
            let peer = Some(format!("torch_softmax_{r}x{c}_GBs"));
            let label =
                if k == Kernel::for_cols(c as u32) { format!("auto: {}", k.name()) } else { k.name().to_string() };
            rows.push(ctx.measure(
                "softmax",
                &label,
                &name,
                2 * 4 * shape.len() as u64,
                0,
                Bound::Memory,
                peer,
                || softmax::launch(s, k, &input, &mut output, shape),
            )?);
        }
    }
    Ok(rows)
}

/// GEMM sizes: 4096^3 and 8192^3.
pub const GEMM_SIZES: [usize; 2] = [4096, 8192];

/// How many measurements [`gemm`] makes.
pub fn gemm_count() -> u64 {
    (GEMM_SIZES.len() * coalesce::gemm::Variant::ALL.len()) as u64
}

/// Every GEMM step at each size (C = A B, alpha 1, beta 0), each checked on
/// 64 sampled elements against f64 before it is timed.
pub fn gemm(ctx: &mut Ctx<'_>) -> Result<Vec<Row>> {
    use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant as G};
    let mut rows = Vec::new();
    for n in GEMM_SIZES {
        let shape = GemmShape::new(n, n, n)?;
        let (ha, hb) = (ctx.random(n * n), ctx.random(n * n));
        let (a, b) = (ctx.gpu.upload(&ha)?, ctx.gpu.upload(&hb)?);
        let mut c = ctx.gpu.alloc::<f32>(n * n)?;
        for v in G::ALL {
            let s = &ctx.stream;
            let got = poisoned_run(s, &mut c, n * n, |out| gemm::launch(s, v, &a, &b, out, shape, AlphaBeta::PRODUCT))?;
            for t in 0..64usize {
                let (i, j) = ((t * 977 + 13) % n, (t * 3571 + 7) % n);
                if !reference::gemm_element_ok(v, &ha, &hb, (n, n), (i, j), got[i * n + j]) {
                    bail!("gemm {} at {n}^3 is wrong at [{i}][{j}]: {}", v.name(), got[i * n + j]);
                }
            }
            let peer = Some(format!("torch_{}gemm_{n}_TFLOPs", if v.is_tf32() { "tf32" } else { "s" }));
            let flops = 2 * (n as u64).pow(3);
            let bytes = 3 * 4 * (n * n) as u64;
            let mut row =
                ctx.measure("gemm", v.name(), &format!("{n}^3"), bytes, flops, Bound::Compute, peer, || {
                    gemm::launch(s, v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)
                })?;
            // The roof of the units the step uses (`sgemm` is the step that
            // `gemm::sgemm_variant` names, the same launch: its row).
            row.roof = Some(Roof::for_precision(v.geometry().precision));
            rows.push(row);
        }
    }
    Ok(rows)
}
