//! The checker on `wgmma` operands, which the tensor cores read from
//! shared memory: a `wgmma` issued before the barrier after the operands'
//! stores races with them, and one that reads a row nobody stored reads
//! unwritten memory.

use crate::common::*;
use crate::{line_of, run};
use coalesce::emu::{Access, FindingKind};
use coalesce::kernels::{Dim3, LaunchDims, ThreadCtx};

/// Byte of row `row`, float `k` (< 8) of a K-major operand without swizzle:
/// core matrices of 8 rows x 16 bytes, the two along `K` 128 bytes apart
/// (LBO), groups of 8 rows 256 bytes apart (SBO).
fn core_matrix_byte(row: usize, k: usize) -> usize {
    (row / 8) * 256 + (k / 4) * 128 + (row % 8) * 16 + (k % 4) * 4
}

/// The descriptor of that layout at shared address `addr` (swizzle mode 0).
fn unswizzled(addr: u32) -> u64 {
    let enc = |x: u32| ((x & 0x3ffff) >> 4) as u64;
    enc(addr) | (enc(128) << 16) | (enc(256) << 32)
}

/// One warpgroup stores a 64x8 `A` and a 256x8 `B` (ones), all but the
/// rows of `B` from `skip_rows_from` on, then multiplies them with one
/// `wgmma`, with or without the barrier between.
unsafe fn wgmma_after_stores<C: ThreadCtx>(ctx: &C, output: *mut f32, barrier: bool, skip_rows_from: usize) {
    const A_BYTES: usize = 64 * 32;
    let tile = ctx.shared::<f32>((A_BYTES + 256 * 32) / 4);
    let output = ctx.global_mut(output, 128usize * 128);
    let t = ctx.thread_idx().x as usize;
    for f in (t..64 * 8).step_by(128) {
        // SAFETY: inside the A tile.
        unsafe { tile.store(core_matrix_byte(f / 8, f % 8) / 4, 1.0) }; // operand store
    }
    for f in (t..256 * 8).step_by(128) {
        if f / 8 < skip_rows_from {
            // SAFETY: inside the B tile.
            unsafe { tile.store((A_BYTES + core_matrix_byte(f / 8, f % 8)) / 4, 1.0) }; // B operand store
        }
    }
    ctx.fence_proxy_async();
    if barrier {
        ctx.sync_threads();
    }
    let base = ctx.shared_addr(tile.as_ptr());
    let mut d = [0.0f32; 128];
    ctx.wgmma_fence();
    // SAFETY: both operands lie inside the tile.
    unsafe { ctx.wgmma_m64n256k8_tf32(&mut d, unswizzled(base), unswizzled(base + A_BYTES as u32)) }; // wgmma read
    ctx.wgmma_commit();
    ctx.wgmma_wait::<0>(&mut d);
    for (i, v) in d.iter().enumerate() {
        // SAFETY: 128 threads x 128 values.
        unsafe { output.store(t * 128 + i, *v) };
    }
}

#[test]
fn a_wgmma_before_the_barrier_races_with_the_operand_stores() {
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(128, 1), shared_bytes: (64 + 256) * 32 };
    let mut output = poison(128 * 128);
    // SAFETY: the output holds 128 * 128 floats.
    let ok = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, true, 256) });
    assert!(ok.findings.is_empty(), "{:#?}", ok.findings);
    assert!(output.iter().all(|&v| v == 8.0), "ones times ones over k = 8");

    // SAFETY: as above.
    let racy = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, false, 256) });
    let stores = [line_of("// operand store"), line_of("// B operand store")];
    let read = line_of("// wgmma read");
    assert!(!racy.findings.is_empty());
    for f in &racy.findings {
        let FindingKind::SharedRace { access, other_access, other_site, .. } = &f.kind else { panic!("{f}") };
        assert_eq!((f.site.line, *access, *other_access), (read, Access::Read, Access::Write), "{f}");
        assert!(stores.contains(&other_site.line), "{f}");
    }
    println!("{}", racy.findings[0]);
}

#[test]
fn a_wgmma_operand_nobody_stored_is_unwritten() {
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(128, 1), shared_bytes: (64 + 256) * 32 };
    let mut output = poison(128 * 128);
    // SAFETY: the output holds 128 * 128 floats.
    let report = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, true, 255) });
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    // Row 255 of B: group 31, row 7 of its core matrices.
    assert_eq!(f.kind, FindingKind::UnwrittenShared { byte: 64 * 32 + 31 * 256 + 7 * 16 }, "{f}");
    assert_eq!(f.site.line, line_of("// wgmma read"), "{f}");
    println!("{f}");
}
