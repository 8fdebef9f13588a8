//! Every GEMM version on the GPU against the f64 reference: at odd and
//! large shapes, at every kind of edge, at the benchmark shape (spot
//! checked), on misaligned buffers, and the TMA steps captured in a CUDA
//! graph beside another thread's launches. The helpers that run a case on
//! the GPU are the other GPU tests' too.

use crate::common::*;
use crate::reference::{Case, check, reference};
use crate::{EDGE_SHAPES, SCALARS, WGMMA_SHAPES, tma_steps, wgmma_steps};
use coalesce::gemm::{self, AlphaBeta, Variant};
use cust::memory::CopyDestination;
use rand::Rng;

/// GPU shapes: the emulator's and large odd ones.
const GPU_SHAPES: [(usize, usize, usize); 7] =
    [(1, 1, 1), (17, 33, 65), (70, 45, 130), (132, 260, 68), (1000, 3000, 777), (4097, 4095, 513), (1024, 1024, 1024)];

/// Runs `v` on the GPU for `case`, with C uploaded fresh, and returns C.
pub fn run_gpu(stream: &coalesce::Stream<'_>, v: Variant, case: &Case, bufs: &GpuBufs, offset: usize) -> Vec<f32> {
    let gpu = stream.gpu();
    let len = case.c0.len();
    let c = gpu.alloc::<f32>(len + offset).unwrap();
    c.index(offset..).copy_from(&case.c0[..]).unwrap();
    gemm::launch(
        stream,
        v,
        &bufs.a.index(offset..),
        &bufs.b.index(offset..),
        &mut c.index(offset..),
        case.shape,
        case.s,
    )
    .unwrap();
    stream.synchronize().unwrap();
    download(&c.index(offset..))
}

pub struct GpuBufs {
    pub a: cust::memory::DeviceBuffer<f32>,
    pub b: cust::memory::DeviceBuffer<f32>,
}

impl GpuBufs {
    pub fn new(gpu: &coalesce::Gpu, case: &Case, offset: usize) -> GpuBufs {
        let pad = |v: &[f32]| -> Vec<f32> { std::iter::repeat_n(0.0, offset).chain(v.iter().copied()).collect() };
        GpuBufs { a: gpu.upload(&pad(&case.a)).unwrap(), b: gpu.upload(&pad(&case.b)).unwrap() }
    }
}

/// Runs each of `variants` on `case` on the GPU (A and B uploaded once, C
/// poisoned before each) and checks it against the f64 reference; prints
/// each one's worst error over its bound.
fn check_on_gpu(gpu: &coalesce::Gpu, stream: &coalesce::Stream<'_>, case: &Case, variants: &[Variant]) {
    let (want, bound) = reference(case, None);
    let bufs = GpuBufs::new(gpu, case, 0);
    for &v in variants {
        let got = run_gpu(stream, v, case, &bufs, 0);
        let worst = check(v, case, None, &got, &want, &bound);
        eprintln!("gpu {:>16} {:>16} {:?}: max error / bound {worst:.2e}", v.name(), case.shape.to_string(), case.s);
    }
}

#[test]
fn every_variant_on_the_gpu_at_odd_shapes() {
    let Some(gpu) = gpu_or_skip("gpu gemm") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm");
    let shapes: Vec<_> =
        GPU_SHAPES.iter().copied().filter(|&(m, n, k)| !under_sanitizer() || m * n * k < 1 << 22).collect();
    for (si, &dims) in shapes.iter().enumerate() {
        // Every epilogue on two shapes, the plain product on the rest.
        let cases: &[AlphaBeta] = if si == 1 || si == 4 { &SCALARS } else { &SCALARS[..1] };
        for &s in cases {
            check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &Variant::ALL);
        }
    }
}

/// Step 7 at the emulator's edge shapes and at large ones with each kind of
/// edge: `N < 4`, `K` and `N` not multiples of 4, only `M` and `N` past the tile.
#[test]
fn double_buffered_at_every_kind_of_edge_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm edges") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm edges");
    let large = [(300, 3, 1000), (1000, 1001, 1003), (1030, 1028, 1032), (513, 4095, 1025)];
    let shapes = EDGE_SHAPES.iter().chain(if under_sanitizer() { &large[..1] } else { &large[..] });
    for &dims in shapes {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &[Variant::DoubleBuffered]);
    }
}

/// The benchmark shape, 4096^3, every version, 20000 random elements checked
/// (a full f64 reference would take minutes on the host).
#[test]
fn every_variant_on_the_gpu_at_4096_spot_checked() {
    let Some(gpu) = gpu_or_skip("gpu gemm 4096") else { return };
    if under_sanitizer() {
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm 4096");
    let case = Case::new(&mut rng, (4096, 4096, 4096), AlphaBeta::new(1.0, 1.0));
    let at: Vec<(usize, usize)> = (0..20_000).map(|_| (rng.random_range(0..4096), rng.random_range(0..4096))).collect();
    let (want, bound) = reference(&case, Some(&at));
    let bufs = GpuBufs::new(&gpu, &case, 0);
    for v in Variant::ALL {
        let full = run_gpu(&stream, v, &case, &bufs, 0);
        let got: Vec<f32> = at.iter().map(|&(i, j)| full[i * 4096 + j]).collect();
        assert!(full.iter().all(|x| x.is_finite()), "{}: non-finite output", v.name());
        let worst = check(v, &case, Some(&at), &got, &want, &bound);
        eprintln!("gpu {:>16} 4096x4096x4096 spot: max error / bound {worst:.2e}", v.name());
    }
}

/// Sub-slices one float into their buffers: 4-byte aligned, not 16.
#[test]
fn misaligned_buffers_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm misaligned") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm misaligned");
    let case = Case::new(&mut rng, (132, 260, 68), AlphaBeta::new(1.0, 0.5));
    let (want, bound) = reference(&case, None);
    let bufs = GpuBufs::new(&gpu, &case, 1);
    for v in Variant::ALL {
        let got = run_gpu(&stream, v, &case, &bufs, 1);
        check(v, &case, None, &got, &want, &bound);
    }
}

/// The GPU, or `None` (after saying so) without one or where its loaded
/// module lacks `step` (an `sm_90a` step on another GPU).
fn sm_90a_or_skip(test: &str, step: Variant) -> Option<coalesce::Gpu> {
    let gpu = gpu_or_skip(test)?;
    if !gpu.has_kernel(step.entry_point()) {
        eprintln!("skipping {test}: {} loaded {:?}, not sm_90a", gpu.name(), gpu.module_name());
        return None;
    }
    Some(gpu)
}

/// Steps 9-16 at their edge shapes and at large ones on the GPU (an H100:
/// the `sm_90a` module), C poisoned.
#[test]
fn wgmma_at_every_kind_of_edge_on_the_gpu() {
    let Some(gpu) = sm_90a_or_skip("gpu gemm wgmma", Variant::Wgmma) else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm wgmma");
    let large = [(300, 3, 1000), (1000, 1001, 1003), (1030, 1028, 1032), (513, 4095, 1025), (2048, 2048, 8192)];
    let shapes = WGMMA_SHAPES.iter().chain(if under_sanitizer() { &large[..1] } else { &large[..] });
    for &dims in shapes {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &wgmma_steps());
    }
}

/// Step 14's TMA copies round to TF32 to nearest, ties to even, bit for
/// bit, with the matrices in place and with `A` copied first (one float
/// off a 16-byte boundary).
#[test]
fn wgmma_direct_rounds_to_nearest_even_on_the_gpu() {
    use crate::tensor_cores::{check_rounding, rounding_case};
    let Some(gpu) = sm_90a_or_skip("gpu gemm direct rounding", Variant::WgmmaDirect) else { return };
    let stream = gpu.stream().unwrap();
    let case = rounding_case();
    let (shape, a, b) = &case;
    for (what, offset) in [("in place", 0), ("A copied", 1)] {
        let pad: Vec<f32> = std::iter::repeat_n(0.0, offset).chain(a.iter().copied()).collect();
        let (da, db) = (gpu.upload(&pad).unwrap(), gpu.upload(b).unwrap());
        let mut c = gpu.upload(&vec![f32::NAN; shape.c().len()]).unwrap();
        gemm::launch(&stream, Variant::WgmmaDirect, &da.index(offset..), &db, &mut c, *shape, AlphaBeta::PRODUCT)
            .unwrap();
        stream.synchronize().unwrap();
        check_rounding(what, &case, &download(&c));
    }
}

/// The TMA steps allocate their workspace on the stream: captured into a
/// CUDA graph, the allocation becomes the graph's own, and two replays give
/// the direct launch's bits; meanwhile another thread's direct launches on
/// its own stream use their own workspaces.
#[test]
fn tma_steps_in_a_graph_and_beside_another_thread_on_the_gpu() {
    let Some(gpu) = sm_90a_or_skip("gpu gemm tma graph", Variant::WgmmaTma3xTf32) else { return };
    let mut rng = rng("gpu gemm tma graph");
    let case = Case::new(&mut rng, (300, 260, 1001), AlphaBeta::PRODUCT);
    let (want, bound) = reference(&case, None);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for v in tma_steps() {
        let stream = gpu.nonblocking_stream().unwrap();
        let bufs = GpuBufs::new(&gpu, &case, 0);
        let direct = run_gpu(&stream, v, &case, &bufs, 0);
        check(v, &case, None, &direct, &want, &bound);
        let mut c = gpu.upload(&case.c0).unwrap();
        std::thread::scope(|s| {
            // Another thread, another stream, the same step, all the while.
            let other = s.spawn(|| {
                let stream = gpu.nonblocking_stream().unwrap();
                (0..20).map(|_| run_gpu(&stream, v, &case, &bufs, 0)).all(|got| bits(&got) == bits(&direct))
            });
            let graph = coalesce::graph::capture(&stream, || {
                gemm::launch(&stream, v, &bufs.a, &bufs.b, &mut c, case.shape, case.s)
            })
            .unwrap();
            for _ in 0..2 {
                graph.launch(&stream).unwrap();
            }
            stream.synchronize().unwrap();
            drop(graph);
            assert!(other.join().unwrap(), "{}: another thread's launches differ", v.name());
        });
        assert_eq!(
            bits(&download(&c)),
            bits(&direct),
            "{}: the graph's replays differ from the direct launch",
            v.name()
        );
    }
}
