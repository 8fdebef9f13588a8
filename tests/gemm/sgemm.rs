//! Which version runs with which PTX module and shape: `sgemm` picks step
//! 16 in the `sm_90a` module and step 7 elsewhere, and runs what it picks
//! on the GPU; the `wgmma` steps without the `sm_90a` module are an
//! error.

use crate::common::*;
use crate::gpu::{GpuBufs, run_gpu};
use crate::reference::{Case, check, reference};
use crate::wgmma_steps;
use coalesce::Error;
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};

/// `gemm::sgemm` launches step 16 with the `sm_90a` module loaded (the
/// H100's, the one module that has it), at every shape; and step 7
/// otherwise.
#[test]
fn sgemm_picks_step_16_in_the_sm_90a_module_and_step_7_elsewhere() {
    let (big, deep, shallow, small) = ((4096, 4096, 4096), (2048, 2048, 8192), (8192, 8192, 256), (1024, 1024, 1024));
    for m in coalesce::MODULES {
        let want = if m.name() == "sm_90a" { Variant::WgmmaSplitA3xTf32 } else { Variant::DoubleBuffered };
        for shape in [big, deep, shallow, small, (4097, 2049, 257), (1, 1, 1)] {
            assert_eq!(Variant::sgemm_for(&m.name(), shape), want, "{} {shape:?}", m.name());
        }
    }
    assert_eq!(Variant::sgemm_for("sm_100", small), Variant::DoubleBuffered);
}

/// On the GPU, `gemm::sgemm` runs what its module picks: its output is bit
/// for bit that version's, within that version's bound. First with the
/// module this GPU gets (step 16 on an H100), then with the sm_90 module
/// forced (step 7).
#[test]
fn sgemm_runs_the_version_its_module_picks_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu sgemm") else { return };
    drop(gpu);
    let mut rng = rng("gpu sgemm");
    let case = Case::new(&mut rng, (300, 260, 1000), AlphaBeta::new(1.5, -0.5));
    let (want, bound) = reference(&case, None);
    let sm_90: Vec<coalesce::Ptx> = coalesce::MODULES.iter().copied().filter(|m| !m.arch_specific).collect();
    for modules in [coalesce::MODULES, &sm_90[..]] {
        let gpu = coalesce::Gpu::open(0, modules).unwrap();
        let module = gpu.module_name().unwrap().to_owned();
        let stream = gpu.stream().unwrap();
        let bufs = GpuBufs::new(&gpu, &case, 0);
        let v = gemm::sgemm_variant(&gpu, case.shape);
        let s = case.shape;
        assert_eq!(v, Variant::sgemm_for(&module, (s.m(), s.n(), s.k())), "{module}");
        let mut c = gpu.upload(&case.c0).unwrap();
        gemm::sgemm(&stream, &bufs.a, &bufs.b, &mut c, case.shape, case.s).unwrap();
        stream.synchronize().unwrap();
        let got = download(&c);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&got), bits(&run_gpu(&stream, v, &case, &bufs, 0)), "{module}: sgemm is not {}", v.name());
        let worst = check(v, &case, None, &got, &want, &bound);
        eprintln!("gpu sgemm with {module}: {} {}: max error / bound {worst:.2e}", v.name(), case.shape);
    }
}

/// A kernel that only the sm_90a module has, launched with another module
/// loaded (here the sm_90 one, forced on whatever GPU this is): a clear
/// error, no launch.
#[test]
fn wgmma_without_the_sm_90a_module_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm wgmma without sm_90a") else { return };
    if under_sanitizer() {
        // Opening the sm_90 module looks up (and misses) the sm_90a kernels:
        // driver errors by design, which memcheck would count.
        return;
    }
    drop(gpu);
    let sm_90: Vec<coalesce::Ptx> = coalesce::MODULES.iter().copied().filter(|m| !m.arch_specific).collect();
    let gpu = coalesce::Gpu::open(0, &sm_90).unwrap();
    assert!(!gpu.has_kernel(Variant::Wgmma.entry_point()));
    let stream = gpu.stream().unwrap();
    let shape = GemmShape::new(64, 64, 64).unwrap();
    let a = gpu.upload(&vec![1.0f32; shape.a().len()]).unwrap();
    let b = gpu.upload(&vec![1.0f32; shape.b().len()]).unwrap();
    let mut c = gpu.alloc::<f32>(shape.c().len()).unwrap();
    for v in wgmma_steps() {
        // The TMA steps refuse before they allocate or encode anything.
        let e = gemm::launch(&stream, v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::ArchitectureRequired { needs: "sm_90a", .. }), "{}: {e}", v.name());
        eprintln!("{} on {:?}: {e}", v.name(), gpu.module_name());
    }
    // The rest of the ladder runs on that module.
    gemm::tf32(&stream, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap();
    stream.synchronize().unwrap();
}
