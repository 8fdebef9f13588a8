//! The library under threads, and inside a program's own context and
//! streams.
//!
//! The stress test runs every op from 8 threads at once, 200 iterations
//! each, and requires every output to be bit-identical to a run on one
//! thread. Half the threads share one `Gpu`, half make their own. Each
//! iteration mixes calls that can break another thread's graph capture
//! (cust's synchronous copies, on the legacy default stream) with a capture
//! and replays on a non-blocking stream.

mod common;

use coalesce::gemm::{self, AlphaBeta, GemmShape};
use coalesce::{Error, Gpu, MatrixShape, Stream, copy, graph, nested_sin, softmax, transpose};
use common::*;
use cust::memory::{CopyDestination, DeviceBuffer};
use std::sync::atomic::{AtomicUsize, Ordering};

const THREADS: usize = 8;
const ITERATIONS: usize = 200;

/// Small odd shapes: every launch is cheap, so threads overlap many times
/// per second and the sanitizers can run the whole test.
const T_SHAPE: (usize, usize) = (97, 131);
const SIN_LEN: usize = 10_007;
/// The last takes a cluster of blocks per row on Hopper (softmax step 4,
/// launched with `cuLaunchKernelEx`), inside the captured graph too.
const SOFTMAX_SHAPES: [(usize, usize); 3] = [(33, 1000), (7, 5000), (3, 40_001)];
const GEMM: (usize, usize, usize) = (65, 129, 33);

#[test]
fn gpu_and_stream_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Gpu>();
    both::<Stream<'static>>();
}

/// The two kinds of stream are what they say, read back through cust
/// (whose own `Stream::new` drops `NON_BLOCKING`).
#[test]
fn gpu_streams_have_the_flags_asked_for() {
    use cust::stream::StreamFlags;
    let Some(gpu) = gpu_or_skip("gpu stream flags") else { return };
    let (blocking, nonblocking) = (gpu.stream().unwrap(), gpu.nonblocking_stream().unwrap());
    assert!(!blocking.as_cust().get_flags().unwrap().contains(StreamFlags::NON_BLOCKING));
    assert!(nonblocking.as_cust().get_flags().unwrap().contains(StreamFlags::NON_BLOCKING));
    assert!(blocking.is_blocking().unwrap() && !nonblocking.is_blocking().unwrap());
}

/// Inputs shared by every thread.
struct Inputs {
    matrix: Vec<f32>,
    sines: Vec<f32>,
    logits: Vec<Vec<f32>>,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Inputs {
    fn new() -> Inputs {
        let mut rng = rng("threads");
        let (m, n, k) = GEMM;
        Inputs {
            matrix: random_matrix(&mut rng, T_SHAPE.0 * T_SHAPE.1),
            sines: random_matrix(&mut rng, SIN_LEN),
            logits: SOFTMAX_SHAPES.iter().map(|&(r, c)| random_matrix(&mut rng, r * c)).collect(),
            a: random_matrix(&mut rng, m * k),
            b: random_matrix(&mut rng, k * n),
        }
    }
}

/// The bits of every output, in a fixed order.
type Outputs = Vec<(String, Vec<u32>)>;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// One iteration: upload, every op on this thread's streams, a captured
/// graph replayed twice, download. `blocking` takes the ops whose outputs
/// are filled and read with cust's synchronous (legacy-stream) copies;
/// `other` takes stream-ordered copies and the capture.
fn every_op(gpu: &Gpu, blocking: &Stream<'_>, other: &Stream<'_>, x: &Inputs) -> coalesce::Result<Outputs> {
    let mut out = Outputs::new();
    let shape = MatrixShape::new(T_SHAPE.0, T_SHAPE.1)?;
    let matrix = gpu.upload(&x.matrix)?;
    let mut t = gpu.alloc::<f32>(shape.len())?;
    for variant in transpose::Variant::ALL {
        t.copy_from(&poison(shape.len())[..]).map_err(|e| Error::Cuda { op: "cuMemcpyHtoD", source: e })?;
        transpose::launch(blocking, variant, &matrix, &mut t, shape)?;
        blocking.synchronize()?;
        let mut host = poison(shape.len());
        t.copy_to(&mut host[..]).map_err(|e| Error::Cuda { op: "cuMemcpyDtoH", source: e })?;
        out.push((format!("transpose {}", variant.name()), bits(&host)));
    }

    let sines = other.upload(&x.sines)?;
    let mut y = other.upload(&poison(SIN_LEN))?;
    for variant in nested_sin::Variant::ALL {
        nested_sin::launch(other, variant, &sines, &mut y)?;
        let mut host = poison(SIN_LEN);
        other.download(&y, &mut host)?;
        out.push((format!("nested_sin {}", variant.name()), bits(&host)));
    }
    let mut copied = other.upload(&poison(SIN_LEN))?;
    copy::copy(other, &sines, &mut copied)?;
    let mut host = poison(SIN_LEN);
    other.download(&copied, &mut host)?;
    out.push(("copy".into(), bits(&host)));

    for (&(r, c), logits) in SOFTMAX_SHAPES.iter().zip(&x.logits) {
        let s = MatrixShape::new(r, c)?;
        let input = gpu.upload(logits)?;
        let mut probs = blocking.upload(&poison(s.len()))?;
        softmax::softmax(blocking, &input, &mut probs, s)?;
        let mut host = poison(s.len());
        blocking.download(&probs, &mut host)?;
        out.push((format!("softmax {r}x{c}"), bits(&host)));
    }

    let g = GemmShape::new(GEMM.0, GEMM.1, GEMM.2)?;
    let (a, b) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?);
    let mut c = gpu.alloc::<f32>(g.c().len())?;
    for variant in gemm::Variant::ALL {
        gemm::launch(other, variant, &a, &b, &mut c, g, AlphaBeta::PRODUCT)?;
        let mut host = poison(g.c().len());
        other.download(&c, &mut host)?;
        out.push((format!("gemm {}", variant.name()), bits(&host)));
    }

    // A graph of six launches, captured while the other threads copy on the
    // legacy default stream, replayed twice (the second replay recomputes
    // the same values from the same input).
    let mut graph_sin = other.upload(&poison(SIN_LEN))?;
    let mut graph_t = other.upload(&poison(shape.len()))?;
    let ((r, c), long) = (SOFTMAX_SHAPES[SOFTMAX_SHAPES.len() - 1], &x.logits[SOFTMAX_SHAPES.len() - 1]);
    let (long_shape, long) = (MatrixShape::new(r, c)?, other.upload(long)?);
    let mut graph_p = other.upload(&poison(long_shape.len()))?;
    let replayed = {
        let g = graph::capture(other, || {
            nested_sin::unfused(other, &sines, &mut graph_sin)?;
            transpose::vec4(other, &matrix, &mut graph_t, shape)?;
            softmax::softmax(other, &long, &mut graph_p, long_shape)
        })?;
        assert_eq!(g.node_count(), 6);
        g.launch(other)?;
        g.launch(other)?;
        other.synchronize()?;
        g.node_count()
    };
    let (mut hs, mut ht, mut hp) = (poison(SIN_LEN), poison(shape.len()), poison(long_shape.len()));
    other.download(&graph_sin, &mut hs)?;
    other.download(&graph_t, &mut ht)?;
    other.download(&graph_p, &mut hp)?;
    out.push((format!("graph of {replayed}: nested_sin unfused"), bits(&hs)));
    out.push((format!("graph of {replayed}: transpose vec4"), bits(&ht)));
    let direct = out.iter().find(|(name, _)| *name == format!("softmax {r}x{c}")).map(|(_, b)| b);
    assert_eq!(direct, Some(&bits(&hp)), "softmax {r}x{c}: the graph's replay differs from the direct launch");
    out.push((format!("graph of {replayed}: softmax {r}x{c}"), bits(&hp)));
    Ok(out)
}

/// First difference between two runs, if any.
fn first_difference(got: &Outputs, want: &Outputs) -> Option<String> {
    for ((name, g), (_, w)) in got.iter().zip(want) {
        if let Some(i) = g.iter().zip(w).position(|(a, b)| a != b) {
            return Some(format!("{name}: element {i} has bits {:#x}, the one-thread run {:#x}", g[i], w[i]));
        }
    }
    (got.len() != want.len()).then(|| format!("{} outputs, the one-thread run {}", got.len(), want.len()))
}

#[test]
fn gpu_every_op_from_eight_threads_matches_one_thread() {
    let Some(gpu) = gpu_or_skip("gpu threads") else { return };
    let x = Inputs::new();
    let want = {
        let (s1, s2) = (gpu.stream().unwrap(), gpu.nonblocking_stream().unwrap());
        every_op(&gpu, &s1, &s2, &x).unwrap()
    };
    // Outputs hold no poison: every op wrote every element.
    for (name, v) in &want {
        assert!(!v.contains(&POISON_BITS), "{name}: an element was never written");
    }
    let iterations =
        std::env::var("COALESCE_STRESS_ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(ITERATIONS);
    let done = AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (shared, x, want, done) = (&gpu, &x, &want, &done);
                scope.spawn(move || -> Result<(), String> {
                    // Even threads share the test's Gpu; odd ones make their own.
                    let own = if t % 2 == 1 { Some(coalesce::init().map_err(|e| e.to_string())?) } else { None };
                    let gpu = own.as_ref().unwrap_or(shared);
                    let s1 = gpu.stream().map_err(|e| e.to_string())?;
                    let s2 = gpu.nonblocking_stream().map_err(|e| e.to_string())?;
                    for i in 0..iterations {
                        let got = every_op(gpu, &s1, &s2, x).map_err(|e| format!("thread {t} iteration {i}: {e}"))?;
                        if let Some(d) = first_difference(&got, want) {
                            return Err(format!("thread {t} iteration {i}: {d}"));
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())).err()).collect()
    });
    println!(
        "{THREADS} threads x {iterations} iterations: {} iterations completed, {} outputs each, {} failures",
        done.load(Ordering::Relaxed),
        want.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `Gpu` made in one thread works in a thread that never touched CUDA:
/// each call makes the context current there first.
#[test]
fn gpu_made_in_one_thread_works_in_another() {
    let Some(gpu) = gpu_or_skip("gpu moved between threads") else { return };
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let back = std::thread::spawn(move || {
        let stream = gpu.nonblocking_stream()?;
        let d = stream.upload(&x)?;
        let mut y = stream.upload(&poison(x.len()))?;
        copy::copy(&stream, &d, &mut y)?;
        let mut host = poison(x.len());
        stream.download(&y, &mut host)?;
        Ok::<_, Error>((host, x))
    })
    .join()
    .unwrap()
    .unwrap();
    assert_eq!(back.0, back.1);
}

/// A program with its own context and streams: the kernels load into its
/// context and run on its streams; a stream of another context is refused.
#[test]
fn gpu_in_a_programs_own_context_on_its_own_streams() {
    if gpu_or_skip("gpu own context").is_none() {
        return;
    }
    use cust::context::Context;
    use cust::stream::{Stream as CustStream, StreamFlags};
    let device = cust::device::Device::get_device(0).unwrap();
    let ctx = Context::new(device).unwrap();
    let mine = CustStream::new(StreamFlags::DEFAULT, None).unwrap();
    let gpu = coalesce::load_into(&ctx).unwrap();
    assert_eq!(gpu.context_handle(), ctx.as_raw());
    let (major, minor) = gpu.compute_capability();
    let newest = coalesce::Ptx::pick(coalesce::MODULES, major, minor).map(|m| m.arch);
    assert_eq!(gpu.ptx_arch(), newest, "the newest module this GPU can run");
    let stream = gpu.borrow_stream(&mine).unwrap();
    assert!(stream.is_blocking().unwrap(), "cust 0.3.2 makes only blocking streams");

    // The program's own buffers (cust's DeviceBuffer), its own stream.
    let mut rng = rng("own context");
    let shape = MatrixShape::new(301, 77).unwrap();
    let host = random_matrix(&mut rng, shape.len());
    let input = DeviceBuffer::from_slice(&host).unwrap();
    let mut output = DeviceBuffer::from_slice(&poison(shape.len())).unwrap();
    transpose::vec4(&stream, &input, &mut output, shape).unwrap();
    let mut got = poison(shape.len());
    stream.download(&output, &mut got).unwrap();
    let mut want = poison(shape.len());
    coalesce::transpose::emu::launch(transpose::Variant::Vec4, &host, &mut want, shape).unwrap();
    assert_eq!(bits(&got), bits(&want));

    let g = GemmShape::new(33, 65, 17).unwrap();
    let (a, b) = (random_matrix(&mut rng, g.a().len()), random_matrix(&mut rng, g.b().len()));
    let (da, db) = (DeviceBuffer::from_slice(&a).unwrap(), DeviceBuffer::from_slice(&b).unwrap());
    let mut dc = DeviceBuffer::from_slice(&poison(g.c().len())).unwrap();
    gemm::sgemm(&stream, &da, &db, &mut dc, g, AlphaBeta::PRODUCT).unwrap();
    let mut got = poison(g.c().len());
    stream.download(&dc, &mut got).unwrap();
    assert!(!got.iter().any(|v| v.to_bits() == POISON_BITS));
    let sm = MatrixShape::new(5, 999).unwrap();
    let logits = DeviceBuffer::from_slice(&random_matrix(&mut rng, sm.len())).unwrap();
    let mut probs = DeviceBuffer::from_slice(&poison(sm.len())).unwrap();
    softmax::softmax(&stream, &logits, &mut probs, sm).unwrap();
    nested_sin::fused_reduced(&stream, &logits, &mut probs).unwrap();
    stream.synchronize().unwrap();

    // A stream of another context: refused by name, before any launch.
    {
        let other =
            cust::context::legacy::Context::create_and_push(cust::context::legacy::ContextFlags::SCHED_AUTO, device)
                .unwrap();
        let foreign = CustStream::new(StreamFlags::DEFAULT, None).unwrap();
        let e = gpu.borrow_stream(&foreign).err().unwrap();
        assert!(matches!(e, Error::WrongContext { .. }), "{e}");
        drop(foreign);
        drop(other);
    }
    // The Gpu makes its context current again for its own calls.
    let again = gpu.upload(&[1.0f32, 2.0]).unwrap();
    assert_eq!(again.len(), 2);
    drop(again);
    drop(stream);
    drop(gpu);
    // The program's context outlives the Gpu and still works.
    let z = DeviceBuffer::from_slice(&[3.0f32; 4]).unwrap();
    let mut back = [0.0f32; 4];
    z.copy_to(&mut back[..]).unwrap();
    assert_eq!(back, [3.0; 4]);
}

/// One `Gpu` per device, each used from its own thread; an ordinal past the
/// last device is an error value.
#[test]
fn gpu_one_per_device() {
    let Some(first) = gpu_or_skip("gpu per device") else { return };
    let count = cust::device::Device::num_devices().unwrap();
    drop(first);
    let gpus: Vec<Gpu> = (0..count).map(|i| coalesce::init_on(i).unwrap()).collect();
    for (i, g) in gpus.iter().enumerate() {
        assert_eq!(g.ordinal(), i as u32);
    }
    std::thread::scope(|scope| {
        for gpu in &gpus {
            scope.spawn(move || {
                let shape = MatrixShape::new(65, 33).unwrap();
                let x: Vec<f32> = (0..shape.len()).map(|i| i as f32).collect();
                let stream = gpu.nonblocking_stream().unwrap();
                let d = stream.upload(&x).unwrap();
                let mut t = stream.upload(&poison(shape.len())).unwrap();
                transpose::padded(&stream, &d, &mut t, shape).unwrap();
                let mut got = poison(shape.len());
                stream.download(&t, &mut got).unwrap();
                assert_eq!(got[1], x[33], "device {}", gpu.ordinal());
            });
        }
    });
    match coalesce::init_on(count) {
        Err(Error::DeviceNotFound { ordinal, count: c }) => assert_eq!((ordinal, c), (count, count)),
        other => panic!("expected DeviceNotFound, got {:?}", other.map(|g| g.name().to_owned())),
    }
}

/// The emulator is used from several threads at once (CI's test runner does
/// so): the same bits from each.
#[test]
fn emulator_from_several_threads() {
    let shape = MatrixShape::new(37, 45).unwrap();
    let mut rng = rng("emulator threads");
    let x = random_matrix(&mut rng, shape.len());
    let run = || {
        let mut t = poison(shape.len());
        coalesce::transpose::emu::launch(transpose::Variant::Padded, &x, &mut t, shape).unwrap();
        let mut s = poison(shape.len());
        softmax::emu::softmax(&x, &mut s, shape).unwrap();
        let mut y = poison(shape.len());
        nested_sin::emu::launch(nested_sin::Variant::FusedReduced, &x, &mut y).unwrap();
        [bits(&t), bits(&s), bits(&y)]
    };
    let want = run();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4).map(|_| scope.spawn(run)).collect();
        for r in runs {
            assert_eq!(r.join().unwrap(), want);
        }
    });
}

/// Buffers do not borrow the `Gpu` that allocated them, so they may outlive
/// it: the device's primary context stays alive for the process, and the
/// buffers can still be read, used by a new `Gpu`, and freed.
#[test]
fn gpu_buffers_outlive_their_gpu() {
    let Some(gpu) = gpu_or_skip("gpu buffers outlive their gpu") else { return };
    let x: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    let d = gpu.upload(&x).unwrap();
    let mut y = gpu.alloc::<f32>(x.len()).unwrap();
    drop(gpu);
    let mut back = poison(x.len());
    d.copy_to(&mut back[..]).unwrap();
    assert_eq!(back, x);
    let again = coalesce::init().unwrap();
    let stream = again.nonblocking_stream().unwrap();
    copy::copy(&stream, &d, &mut y).unwrap();
    stream.download(&y, &mut back).unwrap();
    assert_eq!(back, x);
    drop(stream);
    drop(again);
    drop((d, y));
}
