//! Kernels as wrong as a student's first try: each launch ends, with the
//! right error or finding, and touches no memory it was not given. An
//! endless loop ends at the step limit, an access outside every buffer of
//! the launch is refused, two blocks writing one word are a race when the
//! launch looks for them, a panic in every thread is one error printed
//! once, safe accesses never leave real memory, and the host's staged
//! buffers end exactly where their data does.

use crate::common::poison;
use crate::line_of;
use coalesce::emu::{
    Access, EmuError, Finding, FindingKind, Options, Report, STEP_LIMIT, Schedule, Site, launch_with, staged,
    staged_with,
};
use coalesce::kernels::copy::copy_dims;
use coalesce::kernels::emu::{self as kemu, SyncMutPtr, SyncPtr};
use coalesce::kernels::vector::F4;
use coalesce::kernels::{Dim3, LaunchDims, ThreadCtx};
use std::ops::Range;
use std::time::Instant;

/// The address range of `data`'s elements, as a launch registers it.
fn range_of<T>(data: &[T]) -> Range<usize> {
    let start = data.as_ptr() as usize;
    start..start + std::mem::size_of_val(data)
}

/// Options with `ranges` registered as the launch's buffers.
///
/// # Safety
/// As [`Options::register`], for every range.
unsafe fn with_buffers(ranges: impl IntoIterator<Item = Range<usize>>) -> Options {
    let mut options = Options::default();
    for r in ranges {
        // SAFETY: forwarded from the caller.
        unsafe { options.register(r) };
    }
    options
}

fn kinds(report: &Report) -> Vec<&FindingKind> {
    report.findings.iter().map(|f| &f.kind).collect()
}

/// The copy kernel's scalar loop with its stride mistaken for the thread's
/// first index: thread 0 of block 0 adds 0 and never leaves.
unsafe fn endless_copy<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: usize) {
    let (t, b, bd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim());
    let first = b.x as usize * bd.x as usize + t.x as usize;
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    let mut i = first;
    while i < len {
        // SAFETY: i < len.
        unsafe { dst.store(i, src.load(i)) }; // endless copy
        i += first;
    }
}

#[test]
fn an_endless_loop_ends_at_the_step_limit_on_the_line_it_loops_on() {
    let len = 100_003;
    let src: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let mut dst = poison(len);
    let (s, d) = (SyncPtr::new(&src), SyncMutPtr::new(&mut dst));
    let start = Instant::now();
    // SAFETY: both buffers hold len floats.
    let e = kemu::launch_checked(copy_dims(len as u64, 8), |ctx| unsafe { endless_copy(ctx, s.get(), d.get(), len) })
        .unwrap_err();
    let seconds = start.elapsed().as_secs_f64();
    let EmuError::StepLimit { block, thread, site, steps } = e else { panic!("{e}") };
    assert_eq!((block, thread, steps), (Dim3::new(0, 0, 0), Dim3::new(0, 0, 0), STEP_LIMIT + 1), "{e}");
    assert_eq!((site.file_name(), site.line), ("robust.rs", line_of("// endless copy")), "{e}");
    assert!(seconds < 10.0, "the endless loop took {seconds:.1} s to end");
    let message = e.to_string();
    assert!(message.contains("block (0, 0, 0) thread (0, 0, 0)") && message.contains("endless loop"), "{message}");
    println!("{message} ({seconds:.2} s)");
}

#[test]
fn a_barrier_or_a_shuffle_in_an_endless_loop_ends_at_its_line() {
    let options = Options::default().with_step_limit(1000);
    let dims = LaunchDims::linear(2, 64);
    let e = launch_with(dims, 1, &options, |ctx| {
        loop {
            ctx.sync_threads(); // endless barrier
        }
    })
    .unwrap_err();
    // Which thread crosses first depends on the order the barrier lets
    // them through; the block is the grid's first that fails.
    let EmuError::StepLimit { block, site, steps, .. } = e else { panic!("{e}") };
    assert_eq!((block, steps, site.line), (Dim3::new(0, 0, 0), 1001, line_of("// endless barrier")), "{e}");
    let e = launch_with(dims, 1, &options, |ctx| {
        let mut v = 1.0f32;
        while v > 0.0 {
            v = ctx.shfl_xor_f32(v, 1); // endless shuffle
        }
    })
    .unwrap_err();
    let EmuError::StepLimit { site, .. } = e else { panic!("{e}") };
    assert_eq!(site.line, line_of("// endless shuffle"), "{e}");
}

/// Each thread of one warp reads element `lane` of a view of 16 floats over
/// a buffer of `real` of them (a view longer than its buffer), writes it
/// to the output, and raises flag `lane` of 16 over a buffer of `real`.
unsafe fn reads_past_its_buffer<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, flags: *mut u32) {
    let lane = ctx.thread_idx().x as usize;
    let (src, dst, flags) = (ctx.global(src, 16usize), ctx.global_mut(dst, 32usize), ctx.global_mut(flags, 16usize));
    // SAFETY: none for lanes 16 and up, past the view (and for lanes past the
    // real buffer, which the launch's allocations refuse).
    let v = unsafe { src.load(lane) }; // long view read
    // SAFETY: lane < 32.
    unsafe { dst.store(lane, v) };
    if lane < 16 {
        // SAFETY: as for the read.
        unsafe { flags.raise_flag(lane) }; // long view flag
    }
}

#[test]
fn an_access_outside_every_buffer_of_the_launch_is_refused() {
    let real = 10;
    // The buffers go on past `real` (so that an unchecked access stays in
    // memory), but only `real` elements are registered.
    let src: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let mut dst = poison(32);
    let mut flags = vec![0u32; 16];
    let allocations = vec![range_of(&src[..real]), range_of(&dst), range_of(&flags[..real])];
    let (s, d, f) = (SyncPtr::new(&src), SyncMutPtr::new(&mut dst), SyncMutPtr::new(&mut flags));
    // SAFETY: the buffers outlive the launch, which alone uses them.
    let options = unsafe { with_buffers(allocations) };
    // SAFETY: the buffers hold 16, 32 and 16 elements; the view of 16 is
    // read past its end by half the warp, which the emulator refuses.
    let report = launch_with(LaunchDims::linear(1, 32), 1, &options, |ctx| unsafe {
        reads_past_its_buffer(ctx, s.get(), d.get(), f.get())
    })
    .unwrap();
    // Past the view: out of bounds, as without allocations; inside it but
    // past the buffer: outside every buffer, refused (read as 0).
    let read =
        report.findings.iter().find(|f| matches!(f.kind, FindingKind::OutsideAllocation { access: Access::Read, .. }));
    let read = read.unwrap_or_else(|| panic!("{:#?}", report.findings));
    let address = src.as_ptr() as usize + 4 * real;
    assert_eq!(read.kind, FindingKind::OutsideAllocation { access: Access::Read, address, bytes: 4 }, "{read}");
    assert_eq!((read.site.line, read.thread, read.count), (line_of("// long view read"), Dim3::new(10, 0, 0), 6));
    assert!(read.to_string().contains(&format!("reads 4 bytes at {address:#x} outside every buffer of the launch")));
    let flag =
        report.findings.iter().find(|f| f.site.line == line_of("// long view flag")).expect("the flag's finding");
    assert!(matches!(flag.kind, FindingKind::OutsideAllocation { access: Access::Write, bytes: 4, .. }), "{flag}");
    assert_eq!(flag.count, 6, "{flag}");
    let oob =
        report.findings.iter().find(|f| matches!(f.kind, FindingKind::OutOfBounds { .. })).expect("out of bounds");
    assert_eq!((oob.site.line, oob.thread.x, oob.count), (line_of("// long view read"), 16, 16), "{oob}");
    assert_eq!(report.findings.len(), 3, "{:#?}", report.findings);
    assert_eq!(&dst[..real], &src[..real]);
    assert!(dst[real..].iter().all(|&v| v == 0.0), "a refused read gives 0");
    assert!(flags[..real].iter().all(|&f| f == 1) && flags[real..].iter().all(|&f| f == 0), "{flags:?}");

    // Without allocations the same launch reads the buffer's rest, as a
    // kernel's `unsafe` promise lets it: only the view is checked.
    dst.fill(f32::NAN);
    let d = SyncMutPtr::new(&mut dst);
    let mut flags = vec![0u32; 16];
    let f = SyncMutPtr::new(&mut flags);
    // SAFETY: as above.
    let report = launch_with(LaunchDims::linear(1, 32), 1, &Options::default(), |ctx| unsafe {
        reads_past_its_buffer(ctx, s.get(), d.get(), f.get())
    })
    .unwrap();
    assert!(kinds(&report).iter().all(|k| matches!(k, FindingKind::OutOfBounds { .. })), "{:#?}", report.findings);
    assert_eq!(&dst[..16], &src[..]);
    assert!(flags.iter().all(|&f| f == 1));
}

#[test]
fn a_copy_async_from_outside_every_buffer_is_refused() {
    let src: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let mut dst = poison(8);
    // SAFETY: the buffers outlive the launch, which alone uses them.
    let options = unsafe { with_buffers([range_of(&src[..4]), range_of(&dst)]) };
    let (s, d) = (SyncPtr::new(&src), SyncMutPtr::new(&mut dst));
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 8 * 4 };
    // SAFETY: both buffers hold 8 floats; the second 16 bytes of `src` lie
    // outside its registered range, which the emulator refuses.
    let report = launch_with(dims, 1, &options, |ctx| unsafe {
        let (src, dst, tile) =
            (ctx.global(s.get(), 8usize), ctx.global_mut(d.get(), 8usize), ctx.shared::<f32>(8usize));
        let lane = ctx.thread_idx().x as usize;
        if lane < 2 {
            tile.copy_async_16(4 * lane, &src, 4 * lane); // copy past the buffer
        }
        ctx.wait_async_copies();
        ctx.sync_threads();
        if lane < 4 {
            dst.store(lane, tile.load(lane));
        }
    })
    .unwrap();
    let f = report.findings.iter().find(|f| f.site.line == line_of("// copy past the buffer")).expect("the copy");
    assert!(matches!(f.kind, FindingKind::OutsideAllocation { access: Access::Read, bytes: 16, .. }), "{f}");
    assert_eq!((f.thread.x, f.count), (1, 1), "{f}");
    assert_eq!(&dst[..4], &src[..4]);
}

/// One 64 x 64 transpose of 32 x 32 tiles, 32 x 8 threads a tile, in a
/// 2 x 2 grid; besides its own tile of the output, each block's first
/// thread stores one float into the tile of the block after it in the
/// grid's order (which that block, in that order, overwrites).
unsafe fn transpose_with_a_stray_store<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32) {
    const N: usize = 64;
    let tile = ctx.shared::<f32>(32 * 32usize);
    let (input, output) = (ctx.global(input, N * N), ctx.global_mut(output, N * N));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty, row0, col0) = (t.x as usize, t.y as usize, b.y as usize * 32, b.x as usize * 32);
    for j in (ty..32).step_by(8) {
        // SAFETY: inside the matrix and the tile.
        unsafe { tile.store(j * 32 + tx, input.load((row0 + j) * N + col0 + tx)) };
    }
    ctx.sync_threads();
    for j in (ty..32).step_by(8) {
        // SAFETY: as above.
        unsafe { output.store((col0 + j) * N + row0 + tx, tile.load(tx * 32 + j)) }; // own tile
    }
    // The next block's first output element: block (x, y) writes the tile
    // at rows col0.., columns row0.. of the output.
    let next = b.x + 2 * b.y + 1;
    if t.x == 0 && t.y == 0 && next < 4 {
        let (nx, ny) = ((next % 2) as usize, (next / 2) as usize);
        // SAFETY: inside the matrix.
        unsafe { output.store(nx * 32 * N + ny * 32, -1.0) }; // stray store
    }
}

/// The findings of [`transpose_with_a_stray_store`] under `options`, each
/// global race's address as its offset in the output.
fn transpose_races(options: &Options) -> Vec<Finding> {
    let input: Vec<f32> = (0..64 * 64).map(|i| i as f32).collect();
    let mut output = poison(64 * 64);
    let base = output.as_ptr() as usize;
    let (i, o) = (SyncPtr::new(&input), SyncMutPtr::new(&mut output));
    let dims = LaunchDims { grid: Dim3::xy(2, 2), block: Dim3::xy(32, 8), shared_bytes: 32 * 32 * 4 };
    // SAFETY: both buffers hold 64 * 64 floats.
    let report =
        launch_with(dims, 1, options, |ctx| unsafe { transpose_with_a_stray_store(ctx, i.get(), o.get()) }).unwrap();
    let mut findings = report.findings;
    for f in &mut findings {
        if let FindingKind::GlobalRace { address, .. } = &mut f.kind {
            *address -= base;
        }
    }
    findings
}

#[test]
fn two_blocks_writing_one_global_word_are_a_race_when_the_launch_looks() {
    let off = transpose_races(&Options::default().with_schedule(Schedule::InOrder));
    assert!(off.is_empty(), "{off:#?}");
    let on = Options::default().with_schedule(Schedule::InOrder).with_global_races(true);
    let findings = transpose_races(&on);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    let FindingKind::GlobalRace { address, access, other_access, other_block, other_thread, other_site } = f.kind
    else {
        panic!("{f}")
    };
    // Block 1's first output element: row 32, column 0.
    assert_eq!(address, 4 * 32 * 64, "{f}");
    // Told by the later block of each pair (1, 2, 3), whose own store
    // meets the stray store of the block before it.
    assert_eq!(
        (f.site.line, access, f.block, f.thread),
        (line_of("// own tile"), Access::Write, Dim3::new(1, 0, 0), Dim3::new(0, 0, 0)),
        "{f}"
    );
    assert_eq!(
        (other_site.line, other_access, other_block, other_thread),
        (line_of("// stray store"), Access::Write, Dim3::new(0, 0, 0), Dim3::new(0, 0, 0)),
        "{f}"
    );
    assert_eq!(f.count, 3, "{f}");
    let message = f.to_string();
    assert!(
        message.contains("block (1, 0, 0) thread (0, 0, 0) writes global 0x2000 that block (0, 0, 0)"),
        "{message}"
    );
    assert!(message.contains("thread (0, 0, 0) wrote at") && message.contains("not ordered"), "{message}");
    println!("{message}");
    // Another order of the blocks: the stray store may now come second,
    // and the race reads the same.
    for seed in 1..=4 {
        let seeded = transpose_races(&on.clone().with_schedule(Schedule::Seeded(seed)));
        assert_eq!(seeded, findings, "seed {seed}");
    }
}

/// Indexes a Rust array past its end, in every thread.
fn panics_in_every_thread(ctx: &impl ThreadCtx) {
    let table = [1u32, 2, 3, 4];
    let i = std::hint::black_box(4 + ctx.thread_idx().x as usize % 2);
    std::hint::black_box(table[i]); // array past its end
}

/// The child of [`a_panic_in_every_thread_is_one_error_printed_once`]:
/// under `COALESCE_ROBUST_CHILD`, launches [`panics_in_every_thread`], prints
/// the error, then panics outside the emulator; otherwise does nothing.
#[test]
fn panicking_child() {
    if std::env::var_os("COALESCE_ROBUST_CHILD").is_none() {
        return;
    }
    let e = kemu::launch(LaunchDims::linear(2, 256), |ctx| panics_in_every_thread(ctx)).unwrap_err();
    let EmuError::Panicked { block, thread, message, site } = &e else { panic!("{e}") };
    assert_eq!((*block, *thread), (Dim3::new(0, 0, 0), Dim3::new(0, 0, 0)), "{e}");
    assert!(message.contains("index out of bounds"), "{e}");
    let site: Site = site.expect("the panic's site");
    assert_eq!((site.file_name(), site.line), ("robust.rs", line_of("// array past its end")), "{e}");
    assert!(e.to_string().contains(&format!("panicked at {site}: index out of bounds")), "{e}");
    eprintln!("child: {e}");
    // Outside the emulator, the default hook prints as ever.
    let outside = std::panic::catch_unwind(|| panic!("a panic outside the emulator"));
    assert!(outside.is_err());
}

#[test]
fn a_panic_in_every_thread_is_one_error_printed_once() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["robust::panicking_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("COALESCE_ROBUST_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "the child did not run:\n{stdout}");
    // 512 threads panicked; the only report is the error, printed by the child.
    assert_eq!(stderr.matches("index out of bounds").count(), 1, "{stderr}");
    assert!(stderr.contains("child: block (0, 0, 0) thread (0, 0, 0) panicked at"), "{stderr}");
    assert!(stderr.contains("a panic outside the emulator"), "the previous hook went silent:\n{stderr}");
}

/// Copies element `i` of `src` to `dst` with safe accesses (`i` may be past
/// the views), then the last element's thread copies the element before
/// it over it, through a part of the view clamped to its end.
fn safe_copy<C: coalesce::kernels::mem::Checked>(ctx: &C, src: *const f32, dst: *mut f32, len: usize) {
    let i = ctx.thread_idx().x as usize;
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    dst.set(i, src.get(i)); // safe copy
    let tail = dst.part(len - 2, 5usize);
    assert_eq!(tail.len(), 2);
    if i == len - 1 {
        tail.set(1, tail.get(0));
    }
}

#[test]
fn safe_accesses_reach_the_staged_buffers_and_nothing_else() {
    let len = 10;
    let input: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let mut output = poison(len);
    let report =
        staged(LaunchDims::linear(1, 11), [&input], &mut output, |ctx, [s], d| safe_copy(ctx, s, d, len)).unwrap();
    // Thread 10's copy is past both views: two findings, nothing touched.
    let lines: Vec<(u32, &FindingKind)> = report.findings.iter().map(|f| (f.site.line, &f.kind)).collect();
    assert_eq!(report.findings.len(), 2, "{:#?}", report.findings);
    assert!(lines.iter().all(|(l, k)| *l == line_of("// safe copy") && matches!(k, FindingKind::OutOfBounds { .. })));
    assert_eq!(&output[..len - 1], &input[..len - 1]);
    assert_eq!(output[len - 1], input[len - 2], "the part's write");

    // The same kernel on the plain launch, which registers no buffer: every
    // safe global access is refused, and the output stays as it was.
    let mut output = poison(len);
    let (s, d) = (SyncPtr::new(&input), SyncMutPtr::new(&mut output));
    let report = kemu::launch_checked(LaunchDims::linear(1, 10), |ctx| safe_copy(ctx, s.get(), d.get(), len)).unwrap();
    assert!(output.iter().all(|v| v.to_bits() == poison(1)[0].to_bits()), "{output:?}");
    let refused: u64 = report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::OutsideAllocation { .. }))
        .map(|f| f.count)
        .sum();
    assert_eq!(refused, 2 * 10 + 2, "{:#?}", report.findings);
}

#[test]
fn a_safe_access_through_any_pointer_touches_nothing() {
    // A view made from a made-up address, with and without buffers
    // registered: refused either way.
    let data = vec![1.0f32; 4];
    // SAFETY: `data` outlives the launches, which alone use it.
    for options in [Options::default(), unsafe { with_buffers([range_of(&data)]) }] {
        let report = launch_with(LaunchDims::linear(1, 32), 1, &options, |ctx| {
            let v = ctx.global_mut(std::ptr::without_provenance_mut::<f32>(0x1000), 1usize << 20);
            let i = ctx.thread_idx().x as usize;
            v.set(i, v.get(i + 1) + 1.0); // made-up pointer
        })
        .unwrap();
        let f = &report.findings;
        assert_eq!(f.len(), 2, "{f:#?}");
        assert!(f.iter().all(|f| matches!(f.kind, FindingKind::OutsideAllocation { .. }) && f.count == 32), "{f:#?}");
    }
    // Shared memory: checked against the block's, whatever the view says.
    let mut out = poison(32);
    let o = SyncMutPtr::new(&mut out);
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 32 * 4 };
    // SAFETY: `out` outlives the launch, which alone uses it.
    let options = unsafe { with_buffers([range_of(&out)]) };
    let report = launch_with(dims, 1, &options, |ctx| {
        let (tile, out) = (ctx.shared::<f32>(64usize), ctx.global_mut(o.get(), 32usize));
        let i = ctx.thread_idx().x as usize;
        tile.set(i, i as f32);
        tile.set(32 + i, 0.0); // past the shared memory
        ctx.sync_threads();
        out.set(i, tile.get(31 - i));
    })
    .unwrap();
    let f: Vec<&Finding> = report.findings.iter().collect();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        matches!(f[0].kind, FindingKind::PastSharedMemory { .. })
            && f[0].site.line == line_of("// past the shared memory")
    );
    assert!(out.iter().enumerate().all(|(i, &v)| v == (31 - i) as f32), "{out:?}");
}

/// Writes element `i` of a view of 3 `F4`s over an output of 10 floats:
/// element 2 covers floats 8..12, past the output's end.
unsafe fn f4_past_the_end<C: ThreadCtx>(ctx: &C, out: *mut f32) {
    let out = ctx.global_mut(out.cast::<F4>(), 3usize);
    let i = ctx.thread_idx().x as usize;
    if i < 3 {
        // SAFETY: none for element 2, which the staged buffer's end refuses.
        unsafe { out.store(i, F4([1.0, 2.0, 3.0, 4.0])) }; // F4 past the end
    }
}

#[test]
fn a_staged_output_ends_where_its_data_does() {
    let mut output = poison(10);
    let options = Options::default().with_global_races(true);
    // SAFETY: the kernel's only access past the output is refused.
    let report = staged_with(LaunchDims::linear(1, 32), options, [], &mut output, |ctx, [], o| unsafe {
        f4_past_the_end(ctx, o)
    })
    .unwrap();
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    assert!(matches!(f.kind, FindingKind::OutsideAllocation { access: Access::Write, bytes: 16, .. }), "{f}");
    assert_eq!((f.site.line, f.thread.x), (line_of("// F4 past the end"), 2), "{f}");
    assert!(f.to_string().contains("writes 16 bytes at 0x"), "{f}");
    assert_eq!(&output[..8], &[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
    assert!(output[8..].iter().all(|v| v.is_nan()), "a refused store writes nothing: {output:?}");

    // The same on memory that goes on after the registered 10 floats: it
    // stays as it was.
    let mut memory = poison(16);
    // SAFETY: `memory` outlives the launch, which alone uses it.
    let options = unsafe { with_buffers([range_of(&memory[..10])]) };
    let m = SyncMutPtr::new(&mut memory);
    // SAFETY: as above; the memory holds 16 floats.
    let report =
        launch_with(LaunchDims::linear(1, 32), 1, &options, |ctx| unsafe { f4_past_the_end(ctx, m.get()) }).unwrap();
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    assert!(memory[8..].iter().all(|v| v.is_nan()), "{memory:?}");
}

#[test]
fn a_loop_of_mbarrier_inits_ends() {
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 64 };
    let e = kemu::launch(dims, |ctx| {
        if ctx.thread_idx().x == 0 {
            loop {
                ctx.mbarrier_init(0, 1);
            }
        }
    })
    .unwrap_err();
    let EmuError::Mbarrier { problem, .. } = e else { panic!("{e}") };
    assert_eq!(problem, coalesce::kernels::emu::MbarrierProblem::TooManyInits, "{e}");
}
