//! Blocks that walk tiles (the steps whose geometry says so,
//! `Geometry::walks_tiles`, where `C` has more tiles than the GPU has SMs):
//! one block an SM, each computing tiles `i, i + G, ..` with its passes
//! over `K` as one sequence, its stages' phases running on from tile to
//! tile. Against the f64 reference and FP32's non-finite pattern,
//! on the emulator with few SMs and on the GPU past 132 tiles.

use crate::common::*;
use crate::gpu::{GpuBufs, run_gpu};
use crate::reference::{Case, check, reference};
use crate::specials::{check_fp32_semantics, special_cases, special_reference};
use crate::split_k::tiles;
use crate::{SCALARS, walking_steps};
use coalesce::gemm::{self, Variant};

/// 2 x 2 tiles, 3 passes each: on 1 SM one block takes all four (12
/// passes, three rounds of the four stages); on 3 SMs block 0 takes tiles
/// 0 and 3, the others one each.
const EMU_SHAPE: (usize, usize, usize) = (200, 130, 96);

/// 9 x 1 tiles of one pass on 8 SMs: block 0 takes tiles 0 and 8, and the
/// tile after its last (16) lies past a whole group of rows.
const EMU_TALL: (usize, usize, usize) = (1152, 128, 32);

#[test]
fn walking_blocks_match_the_reference_on_the_emulator() {
    let mut rng = rng("emulator gemm walk");
    for step in walking_steps() {
        for (dims, sms) in [(EMU_SHAPE, 1), (EMU_SHAPE, 3), (EMU_TALL, 8)] {
            for s in [SCALARS[0], SCALARS[2]] {
                let case = Case::new(&mut rng, dims, s);
                let (want, bound) = reference(&case, None);
                let mut c = case.c0.clone();
                gemm::emu::launch_on(sms, step, &case.a, &case.b, &mut c, case.shape, s).unwrap();
                let worst = check(step, &case, None, &c, &want, &bound);
                eprintln!("emulator walk {step:?} on {sms} SMs {} {s:?}: max error / bound {worst:.2e}", case.shape);
            }
        }
        // Non-finite inputs in every tile: the marks name the rows of the
        // tile each pass belongs to.
        for (kind, case) in special_cases(&mut rng, EMU_SHAPE) {
            let r = special_reference(&case);
            let mut c = case.c0.clone();
            gemm::emu::launch_on(1, step, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
            let (nan, inf, fin) = check_fp32_semantics(step, "walk on 1 SM", &case, &r, &c);
            eprintln!("emulator walk {step:?} {kind:>10} {}: {nan} NaN, {inf} inf, {fin} finite", case.shape);
        }
    }
}

/// Past the H100's and H200's 132 SMs: 136 tiles (4 blocks take two),
/// 192, and 8 passes a tile over 576 (the shallow-`K` case it is for).
const GPU_SHAPES: [(usize, usize, usize); 3] = [(1000, 2100, 300), (2000, 1500, 475), (3000, 3000, 256)];

#[test]
fn blocks_walk_where_c_has_many_tiles_of_few_passes() {
    let walking = walking_steps();
    assert!(!walking.is_empty());
    let walks = |step: Variant, (m, n, k): (usize, usize, usize)| {
        let (tiles, k_tiles) = tiles(m as u32, n as u32, k as u32);
        step.geometry().walks(tiles, k_tiles, 132)
    };
    for &step in &walking {
        for shape in GPU_SHAPES.into_iter().chain([(8192, 8192, 256), (1536, 1536, 512)]) {
            assert!(walks(step, shape), "{step:?} {shape:?}");
        }
        // Too few tiles (split K, or one block a tile), or too many passes.
        for shape in [(1024, 1024, 1024), (1408, 1536, 256), (4096, 4096, 4096), (2048, 2048, 8192), (8192, 8192, 513)]
        {
            assert!(!walks(step, shape), "{step:?} {shape:?}");
        }
    }
    // The other steps keep one block a tile.
    for step in Variant::ALL.into_iter().filter(|v| !walking.contains(v)) {
        assert!(!walks(step, (8192, 8192, 256)), "{step:?}");
    }
}

#[test]
fn walking_blocks_match_the_reference_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm walk") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm walk");
    let shapes = if under_sanitizer() { &GPU_SHAPES[..1] } else { &GPU_SHAPES[..] };
    for step in walking_steps() {
        if !step.registry().in_module(gpu.module_name().unwrap_or("")) {
            continue;
        }
        for &dims in shapes {
            for s in [SCALARS[0], SCALARS[2]] {
                let case = Case::new(&mut rng, dims, s);
                let (want, bound) = reference(&case, None);
                let bufs = GpuBufs::new(&gpu, &case, 0);
                let got = run_gpu(&stream, step, &case, &bufs, 0);
                let worst = check(step, &case, None, &got, &want, &bound);
                eprintln!("gpu walk {step:?} {} {s:?}: max error / bound {worst:.2e}", case.shape);
            }
        }
        for (kind, case) in special_cases(&mut rng, GPU_SHAPES[0]) {
            let r = special_reference(&case);
            let bufs = GpuBufs::new(&gpu, &case, 0);
            let got = run_gpu(&stream, step, &case, &bufs, 0);
            let (nan, inf, fin) = check_fp32_semantics(step, "walk", &case, &r, &got);
            eprintln!("gpu walk {step:?} {kind:>10} {}: {nan} NaN, {inf} inf, {fin} finite", case.shape);
        }
    }
}
