//! Split K (steps 15 and 16 on a `C` of too few tiles for the GPU): how
//! many runs each shape gets, and the split products against the f64
//! reference, on the emulator and on the GPU, with every epilogue and
//! uneven runs.

use crate::common::*;
use crate::reference::{Case, check, reference};
use crate::{SCALARS, split_k_steps};
use coalesce::gemm::{self, Variant};
use coalesce::kernels::gemm::split_k::{run_of, splits_for};

/// Steps 15's and 16's tiles (128 x 128) of an `m x n` `C`, and `K`'s 32-deep tiles.
pub(crate) fn tiles(m: u32, n: u32, k: u32) -> (u32, u32) {
    (m.div_ceil(128) * n.div_ceil(128), k.div_ceil(32))
}

/// Shapes `(m, n, k)` that split on an H100's 132 SMs, with their runs:
/// two even runs, three uneven ones (9, 9, 7 tiles), and eight.
const SPLIT_SHAPES: [((usize, usize, usize), u32); 3] =
    [((130, 100, 600), 2), ((64, 200, 777), 3), ((200, 130, 3001), 8)];

#[test]
fn k_splits_where_c_has_too_few_tiles_for_the_sms() {
    let splits = |(m, n, k): (u32, u32, u32)| {
        let (t, kt) = tiles(m, n, k);
        splits_for(t, kt, 132)
    };
    // 64 tiles: two runs fill 128 of 132 SMs.
    assert_eq!(splits((1024, 1024, 1024)), 2);
    // 9 tiles and 32 of K's: four runs of 8.
    assert_eq!(splits((300, 260, 1000)), 4);
    // Enough tiles for half the SMs, or too shallow a K: no split.
    for shape in [(4096, 4096, 4096), (2048, 2048, 8192), (8192, 8192, 256), (1152, 1024, 1024), (1024, 1024, 255)] {
        assert_eq!(splits(shape), 1, "{shape:?}");
    }
    for ((m, n, k), want) in SPLIT_SHAPES {
        assert_eq!(splits((m as u32, n as u32, k as u32)), want, "{m}x{n}x{k}");
    }
    // Every run takes at least one tile, and together they take all, in order.
    for k_tiles in 1..200 {
        for s in 1..=8 {
            let runs: Vec<(u32, u32)> = (0..s).map(|z| run_of(k_tiles, z, s)).collect();
            assert_eq!(runs.iter().map(|r| r.1).sum::<u32>(), k_tiles);
            assert!(runs.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
            if s <= k_tiles / 8 {
                assert!(runs.iter().all(|r| r.1 > 0), "{k_tiles} tiles in {s} runs");
            }
        }
    }
}

#[test]
fn split_k_products_match_the_reference_on_the_emulator() {
    let mut rng = rng("emulator gemm split k");
    // Every epilogue on two even runs; the general update on three uneven ones.
    let cases = [(SPLIT_SHAPES[0].0, &SCALARS[..]), (SPLIT_SHAPES[1].0, &SCALARS[2..3])];
    for (dims, scalars) in cases {
        for &s in scalars {
            let case = Case::new(&mut rng, dims, s);
            let (want, bound) = reference(&case, None);
            for v in split_k_steps() {
                let mut c = case.c0.clone();
                gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
                let worst = check(v, &case, None, &c, &want, &bound);
                eprintln!("emulator split k {} {} {s:?}: max error / bound {worst:.2e}", v.name(), case.shape);
            }
        }
    }
}

/// `alpha` scales the sum of the runs, not each run: with `B` all ones and
/// row 0 of `A` `+1` over the first run (320 of `K`) and `-1` over the
/// second (280), `alpha * 40` is finite at `alpha = 3e36` where the runs
/// scaled alone, `alpha * 320` and `alpha * -280`, overflow to `+inf` and
/// `-inf` and sum to NaN; at `alpha = 1e37` FP32 gives `+inf`.
#[test]
fn split_k_scales_the_sum_not_the_runs() {
    use crate::specials::{check_fp32_semantics, special_reference};
    use coalesce::gemm::AlphaBeta;
    let mut rng = rng("emulator gemm split k alpha");
    let (dims, splits) = SPLIT_SHAPES[0];
    let (m, n, k) = dims;
    assert_eq!((splits, run_of(k.div_ceil(32) as u32, 0, splits)), (2, (0, 10)), "runs of 320 and 280");
    for s in [AlphaBeta::new(3e36, 0.0), AlphaBeta::new(1e37, 0.0), AlphaBeta::new(3e36, 0.5)] {
        let mut case = Case::new(&mut rng, dims, s);
        case.b.fill(1.0);
        for (p, x) in case.a[..k].iter_mut().enumerate() {
            *x = if p < 320 { 1.0 } else { -1.0 };
        }
        let r = special_reference(&case);
        for v in std::iter::once(Variant::BEST).chain(split_k_steps()) {
            let mut c = case.c0.clone();
            gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
            check_fp32_semantics(v, v.name(), &case, &r, &c);
            let want = s.alpha * 40.0 + if s.beta == 0.0 { 0.0 } else { s.beta * case.c0[0] };
            assert_eq!(c[0], want, "{} {m}x{n}x{k} {s:?}: C[0][0]", v.name());
        }
    }
}

#[test]
fn split_k_products_match_the_reference_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm split k") else { return };
    if !Variant::WgmmaDirect3xTf32.registry().in_module(gpu.module_name().unwrap_or("")) {
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm split k");
    let shapes =
        SPLIT_SHAPES.iter().map(|s| s.0).chain(if under_sanitizer() { None } else { Some((1000, 1000, 1500)) });
    for dims in shapes {
        for s in SCALARS {
            let case = Case::new(&mut rng, dims, s);
            let (want, bound) = reference(&case, None);
            let bufs = crate::gpu::GpuBufs::new(&gpu, &case, 0);
            for v in split_k_steps() {
                let got = crate::gpu::run_gpu(&stream, v, &case, &bufs, 0);
                let worst = check(v, &case, None, &got, &want, &bound);
                eprintln!("gpu split k {} {} {s:?}: max error / bound {worst:.2e}", v.name(), case.shape);
            }
        }
    }
}
