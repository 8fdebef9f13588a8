//! [`ThreadCtx`] on the GPU: each method is one PTX special-register read or
//! instruction, and `#[inline(always)]` makes the context vanish.

use crate::mem::Space;
use crate::{Dim3, TensorMap, ThreadCtx};
use core::arch::nvptx;

/// The zero-sized context of a thread running on the GPU.
pub struct Gpu;

/// An inline-asm statement with the accumulator registers `d[i]` of the
/// listed indices (128 or 64) as in-out `reg32` operands, listed
/// comma-separated in the template between `$pre` and `$post` (string
/// literals, or `concat!`s of them; positional operands `{0}`..), then any
/// named operands.
macro_rules! accumulators {
    ($d:ident, $pre:expr, [$first:literal $($i:literal)*], $post:expr $(, $($named:tt)*)?) => {
        core::arch::asm!(
            concat!($pre, "{", $first, "}", $(", {", $i, "}",)* $post),
            inout(reg32) $d[$first],
            $(inout(reg32) $d[$i],)*
            $($($named)*,)?
            options(nostack)
        )
    };
}

/// The [`ThreadCtx`] methods that read a triple of PTX special registers
/// (`%tid`, `%ctaid`, `%ntid`, `%nctaid`) as a [`Dim3`]: `method: x, y, z;`
/// with the `core::arch::nvptx` intrinsic of each register.
macro_rules! special_registers {
    ($($method:ident: $x:ident, $y:ident, $z:ident;)*) => {
        $(
            #[inline(always)]
            fn $method(&self) -> Dim3 {
                // SAFETY: reading special registers has no preconditions.
                unsafe { Dim3::new(nvptx::$x(), nvptx::$y(), nvptx::$z()) }
            }
        )*
    };
}

/// A TF32 `wgmma.mma_async` of shape `$shape` (`"m64n256k8"`) into the
/// accumulators `$d` (`$regs` their indices, as [`accumulators!`] takes
/// them), with B from the shared-memory descriptor `$b` and A from the
/// descriptor `desc $a` or from a fragment of four registers `frag $a`. The
/// product adds to D where `$scale_d` is nonzero and overwrites it where it
/// is zero (the predicate the template sets from it).
macro_rules! mma_async {
    ($d:ident, $shape:literal, $regs:tt, desc $a:expr, $b:expr, $scale_d:expr) => {
        mma_async!(@asm $d, $shape, $regs, "{a}", $b, $scale_d, a = in(reg64) $a)
    };
    ($d:ident, $shape:literal, $regs:tt, frag $a:ident, $b:expr, $scale_d:expr) => {
        mma_async!(@asm $d, $shape, $regs, "{{{a0}, {a1}, {a2}, {a3}}}", $b, $scale_d,
            a0 = in(reg32) $a[0], a1 = in(reg32) $a[1], a2 = in(reg32) $a[2], a3 = in(reg32) $a[3])
    };
    (@asm $d:ident, $shape:literal, $regs:tt, $a:literal, $b:expr, $scale_d:expr, $($a_operands:tt)*) => {
        accumulators!(
            $d,
            concat!("{{ .reg .pred p; setp.ne.b32 p, {s}, 0; wgmma.mma_async.sync.aligned.", $shape, ".f32.tf32.tf32 {{"),
            $regs,
            concat!("}}, ", $a, ", {b}, p, 1, 1; }}"),
            $($a_operands)*,
            b = in(reg64) $b,
            s = in(reg32) $scale_d
        )
    };
}

/// The [`ThreadCtx`] `wgmma.wait_group N` methods over 128 accumulators of
/// one type: `method: type;`. The accumulators are in-out operands of the
/// wait (named in a PTX comment), so LLVM cannot move a read of them above
/// it while the tensor cores still write them.
macro_rules! waits_128 {
    ($($method:ident: $t:ty;)*) => {
        $(
            #[inline(always)]
            fn $method<const N: u32>(&self, d: &mut [$t; 128]) {
                // SAFETY: warpgroup-uniform; the registers are only pinned.
                unsafe {
                    accumulators!(d, "wgmma.wait_group.sync.aligned {n}; // ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127], "", n = const N)
                }
            }
        )*
    };
}

/// The [`ThreadCtx`] methods that are one PTX instruction (or a few) with no
/// operands but a constant: `method: "template";`, or `method<N>:
/// "template";` for a method generic over `const N: u32`, `{n}` in the
/// template. None is `nomem`, so the compiler keeps each in program order
/// with the memory accesses around it, as fences, waits and barriers need.
macro_rules! instructions {
    ($($method:ident $(<$n:ident>)?: $($ptx:literal),+;)*) => {
        $(
            #[inline(always)]
            fn $method$(<const $n: u32>)?(&self) {
                // SAFETY: the instruction takes no address; what it asks of
                // its callers (uniform calls across a warpgroup or cluster)
                // is the trait method's contract, noted at its line of the
                // list.
                unsafe { core::arch::asm!($($ptx,)+ $(n = const $n,)? options(nostack)) }
            }
        )*
    };
}

/// Waits on the mbarrier at shared address `$bar` for the phase of parity
/// `$parity`, with the `try_wait` instruction `$op` (its qualifiers say the
/// scope it acquires at), in a loop: `try_wait` suspends the thread for a
/// while in hardware before it gives up, so the loop does not spin hot. Not
/// `nomem`: what the phase released must not be read before it.
macro_rules! try_wait_loop {
    ($op:literal, $bar:expr, $parity:expr) => {
        loop {
            let done: u32;
            // SAFETY: `$bar` is an initialised barrier in shared memory (the
            // trait's contract).
            unsafe {
                core::arch::asm!(
                    concat!("{{ .reg .pred p; ", $op, " p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}"),
                    b = in(reg32) $bar,
                    q = in(reg32) $parity,
                    d = out(reg32) done,
                    options(nostack)
                )
            };
            if done != 0 {
                break;
            }
        }
    };
}

unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.bfly.f32"]
    fn shfl_sync_bfly_f32(member_mask: u32, value: f32, lane_mask: u32, clamp: u32) -> f32;
}

impl ThreadCtx for Gpu {
    special_registers! {
        thread_idx: _thread_idx_x, _thread_idx_y, _thread_idx_z;
        block_idx: _block_idx_x, _block_idx_y, _block_idx_z;
        block_dim: _block_dim_x, _block_dim_y, _block_dim_z;
        grid_dim: _grid_dim_x, _grid_dim_y, _grid_dim_z;
    }
    instructions! {
        // Waits on this thread's own copies.
        wait_async_copies: "cp.async.commit_group;", "cp.async.wait_group 0;";
        // A fence: the shared stores before it and the barrier after it
        // stay in order.
        fence_proxy_async: "fence.proxy.async.shared::cta;";
        // Warpgroup-uniform (the kernel's contract).
        wgmma_fence: "wgmma.fence.sync.aligned;";
        wgmma_commit: "wgmma.commit_group.sync.aligned;";
        // A fence.
        mbarrier_init_fence: "fence.mbarrier_init.release.cluster;";
        // Closes or waits on this thread's own bulk groups; the shared
        // stores after a wait stay after it.
        bulk_commit: "cp.async.bulk.commit_group;";
        bulk_wait_read<N>: "cp.async.bulk.wait_group.read {n};";
        bulk_wait_all: "cp.async.bulk.wait_group 0;";
        // Warpgroup-uniform (the trait's contract).
        setmaxnreg_dec<N>: "setmaxnreg.dec.sync.aligned.u32 {n};";
        setmaxnreg_inc<N>: "setmaxnreg.inc.sync.aligned.u32 {n};";
        // Called by every thread of the cluster (the trait's contract);
        // what the arrivals released is read after the wait.
        cluster_arrive_relaxed: "barrier.cluster.arrive.relaxed.aligned;";
        cluster_wait: "barrier.cluster.wait.aligned;";
    }
    #[inline(always)]
    fn sync_threads(&self) {
        // SAFETY: the kernel bodies call this from block-uniform control flow.
        unsafe { nvptx::_syncthreads() }
    }
    #[inline(always)]
    fn shared_mem<T>(&self) -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
    #[inline(always)]
    unsafe fn mem_load<T, U: Copy + Default>(&self, _: Space, base: *const T, _: usize, i: usize) -> U {
        // SAFETY: the caller's contract. The address space comes from the
        // pointer (LLVM infers shared from `shared_mem`'s).
        unsafe { *base.add(i).cast::<U>() }
    }
    #[inline(always)]
    unsafe fn mem_store<T, U: Copy>(&self, _: Space, base: *mut T, _: usize, i: usize, value: U) {
        // SAFETY: as above.
        unsafe { *base.add(i).cast::<U>() = value }
    }
    #[inline(always)]
    unsafe fn mem_raise_flag(&self, base: *mut u32, _: usize, i: usize) {
        // SAFETY: the caller's contract. Volatile: each raise is one store,
        // which LLVM may neither drop nor merge with another thread's.
        unsafe { base.add(i).write_volatile(1) }
    }
    #[inline(always)]
    unsafe fn mem_raise_to(&self, base: *mut u32, _: usize, i: usize, value: u32) {
        // SAFETY: the caller's contract; the address is converted from
        // generic to the global window the instruction names.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; red.relaxed.gpu.global.max.u32 [g], {v}; }}",
                p = in(reg64) base.add(i),
                v = in(reg32) value,
                options(nostack),
            )
        }
    }
    #[inline(always)]
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32 {
        // SAFETY: all lanes take part (full member mask), as the trait requires.
        unsafe { shfl_sync_bfly_f32(u32::MAX, value, lane_mask, 0x1f) }
    }
    #[inline(always)]
    unsafe fn copy_async_16(&self, dst: *mut f32, src: *const f32) {
        // Inline PTX: LLVM's cp.async intrinsics take address-space pointers,
        // which Rust cannot name. The asm is not `nomem`, so the compiler
        // treats it as touching memory and keeps it in order.
        // SAFETY: the caller's contract; the addresses are converted from
        // generic to the shared and global windows the instruction expects.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 s, g; .reg .u32 s32;",
                "cvta.to.shared.u64 s, {dst}; cvt.u32.u64 s32, s; cvta.to.global.u64 g, {src};",
                "cp.async.cg.shared.global [s32], [g], 16; }}",
                dst = in(reg64) dst,
                src = in(reg64) src,
                options(nostack),
            )
        }
    }
    #[inline(always)]
    fn shared_addr<T>(&self, p: *const T) -> u32 {
        let addr: u64;
        // SAFETY: an address conversion; it reads no memory.
        unsafe {
            core::arch::asm!(
                "cvta.to.shared.u64 {a}, {p};",
                a = out(reg64) addr,
                p = in(reg64) p,
                options(pure, nomem, nostack),
            )
        };
        addr as u32
    }
    waits_128! {
        wgmma_wait: f32;
        wgmma_wait_s32: i32;
    }
    #[inline(always)]
    unsafe fn wgmma_m64n256k8_tf32(&self, d: &mut [f32; 128], a: u64, b: u64) {
        // SAFETY: the caller's contract (descriptors inside shared memory,
        // operands fenced, warpgroup-uniform call).
        unsafe {
            mma_async!(d, "m64n256k8", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127], desc a, b, 1u32)
        }
    }
    #[inline(always)]
    fn wgmma_wait_rs<const N: u32>(&self, d: &mut [f32; 128], a: &[f32; 4]) {
        // As `wgmma_wait`, with the fragment as inputs (in the comment).
        // SAFETY: warpgroup-uniform; the registers are only pinned.
        unsafe {
            accumulators!(d, "wgmma.wait_group.sync.aligned {n}; // ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127], " {f0} {f1} {f2} {f3}", n = const N,
                f0 = in(reg32) a[0], f1 = in(reg32) a[1], f2 = in(reg32) a[2], f3 = in(reg32) a[3])
        }
    }
    #[inline(always)]
    unsafe fn wgmma_m64n256k32_s8(&self, d: &mut [i32; 128], a: u64, b: u64, accumulate: bool) {
        // SAFETY: the caller's contract (descriptors inside shared memory,
        // operands fenced, warpgroup-uniform call).
        unsafe {
            accumulators!(d, "{{ .reg .pred p; setp.ne.b32 p, {s}, 0; wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {{", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127], "}}, {a}, {b}, p; }}", a = in(reg64) a, b = in(reg64) b, s = in(reg32) accumulate as u32)
        }
    }
    #[inline(always)]
    unsafe fn wgmma_m64n256k8_tf32_rs(&self, d: &mut [f32; 128], a: [f32; 4], b: u64) {
        // SAFETY: the caller's contract (descriptor inside shared memory,
        // operand fenced, warpgroup-uniform call).
        unsafe {
            mma_async!(d, "m64n256k8", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127], frag a, b, 1u32)
        }
    }
    #[inline(always)]
    fn mbarrier_init(&self, bar: u32, count: u32) {
        // SAFETY: `bar` is a shared address (the trait's contract); the asm
        // is not `nomem`: it writes the barrier.
        unsafe {
            core::arch::asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count, options(nostack))
        }
    }
    #[inline(always)]
    fn mbarrier_arrive(&self, bar: u32) {
        // SAFETY: `bar` is an initialised barrier in shared memory.
        unsafe { core::arch::asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) }
    }
    #[inline(always)]
    fn mbarrier_arrive_expect_tx(&self, bar: u32, bytes: u32) {
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
                b = in(reg32) bar,
                n = in(reg32) bytes,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    fn mbarrier_wait(&self, bar: u32, parity: u32) {
        try_wait_loop!("mbarrier.try_wait.parity.shared::cta.b64", bar, parity);
    }
    #[inline(always)]
    unsafe fn tensormap_acquire(&self, map: *const TensorMap) {
        // SAFETY: the caller's contract (a tensor map in global memory).
        unsafe {
            core::arch::asm!(
                "fence.proxy.tensormap::generic.acquire.gpu [{m}], 128;",
                "prefetch.tensormap [{m}];",
                m = in(reg64) map,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    unsafe fn tma_load_2d(&self, dst: u32, map: *const TensorMap, (x, y): (i32, i32), bar: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
                d = in(reg32) dst,
                m = in(reg64) map,
                x = in(reg32) x,
                y = in(reg32) y,
                b = in(reg32) bar,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    unsafe fn mem_bulk_load(&self, dst: u32, (src, _, j): (*const f32, usize, usize), bytes: u32, bar: u32) {
        // SAFETY: the caller's contract; the source is converted from a
        // generic to a global address, as the instruction expects.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {src};",
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [g], {n}, [{b}]; }}",
                d = in(reg32) dst,
                src = in(reg64) src.add(j),
                n = in(reg32) bytes,
                b = in(reg32) bar,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    unsafe fn mem_bulk_store(&self, (dst, _, j): (*mut f32, usize, usize), src: u32, bytes: u32) {
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {dst};",
                "cp.async.bulk.global.shared::cta.bulk_group [g], [{s}], {n}; }}",
                dst = in(reg64) dst.add(j),
                s = in(reg32) src,
                n = in(reg32) bytes,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    fn wgmma_wait_n128<const N: u32>(&self, d: &mut [f32; 64]) {
        // As wgmma_wait: the accumulators are pinned after the wait.
        // SAFETY: warpgroup-uniform; the registers are only pinned.
        unsafe {
            accumulators!(d, "wgmma.wait_group.sync.aligned {n}; // ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63], "", n = const N)
        }
    }
    #[inline(always)]
    unsafe fn wgmma_m64n128k8_tf32(&self, d: &mut [f32; 64], a: u64, b: u64, accumulate: bool) {
        // The scale-d operand is a predicate: false makes the product
        // overwrite D instead of adding to it.
        // SAFETY: the caller's contract (descriptors inside shared memory,
        // operands fenced, warpgroup-uniform call and flag).
        unsafe {
            mma_async!(d, "m64n128k8", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63], desc a, b, accumulate as u32)
        }
    }
    #[inline(always)]
    fn wgmma_wait_n128_rs<const N: u32>(&self, d: &mut [f32; 64], a: &[f32; 32]) {
        // As wgmma_wait_rs: the fragments are pinned until the wait.
        // SAFETY: warpgroup-uniform; the registers are only pinned.
        unsafe {
            accumulators!(d, "wgmma.wait_group.sync.aligned {n}; // ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63], " {f0} {f1} {f2} {f3} {f4} {f5} {f6} {f7} {f8} {f9} {f10} {f11} {f12} {f13} {f14} {f15} {f16} {f17} {f18} {f19} {f20} {f21} {f22} {f23} {f24} {f25} {f26} {f27} {f28} {f29} {f30} {f31}", n = const N,
                f0 = in(reg32) a[0], f1 = in(reg32) a[1], f2 = in(reg32) a[2], f3 = in(reg32) a[3],
                f4 = in(reg32) a[4], f5 = in(reg32) a[5], f6 = in(reg32) a[6], f7 = in(reg32) a[7],
                f8 = in(reg32) a[8], f9 = in(reg32) a[9], f10 = in(reg32) a[10], f11 = in(reg32) a[11],
                f12 = in(reg32) a[12], f13 = in(reg32) a[13], f14 = in(reg32) a[14], f15 = in(reg32) a[15],
                f16 = in(reg32) a[16], f17 = in(reg32) a[17], f18 = in(reg32) a[18], f19 = in(reg32) a[19],
                f20 = in(reg32) a[20], f21 = in(reg32) a[21], f22 = in(reg32) a[22], f23 = in(reg32) a[23],
                f24 = in(reg32) a[24], f25 = in(reg32) a[25], f26 = in(reg32) a[26], f27 = in(reg32) a[27],
                f28 = in(reg32) a[28], f29 = in(reg32) a[29], f30 = in(reg32) a[30], f31 = in(reg32) a[31])
        }
    }
    #[inline(always)]
    unsafe fn wgmma_m64n128k8_tf32_rs(&self, d: &mut [f32; 64], a: [f32; 4], b: u64, accumulate: bool) {
        // SAFETY: the caller's contract (descriptor inside shared memory,
        // operand fenced, warpgroup-uniform call and flag).
        unsafe {
            mma_async!(d, "m64n128k8", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63], frag a, b, accumulate as u32)
        }
    }
    #[inline(always)]
    fn cluster_ctarank(&self) -> u32 {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(nostack, nomem, pure)) };
        r
    }
    #[inline(always)]
    fn cluster_nctarank(&self) -> u32 {
        let n: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {n}, %cluster_nctarank;", n = out(reg32) n, options(nostack, nomem, pure)) };
        n
    }
    #[inline(always)]
    fn launch_bound<const N: u32>(&self) {
        // A PTX comment that the build turns into the entry's `.maxntid`
        // (`build/ptx.rs`, `LAUNCH_BOUND`); it emits no instruction.
        // SAFETY: a comment.
        unsafe {
            core::arch::asm!("// coalesce.launch_bound {n}", n = const N, options(nomem, nostack, preserves_flags))
        }
    }
    #[inline(always)]
    fn launch_bounds<const N: u32, const B: u32>(&self) {
        // As `launch_bound`; the build adds `.minnctapersm B`.
        // SAFETY: a comment.
        unsafe {
            core::arch::asm!(
                "// coalesce.launch_bound {n} {b}",
                n = const N,
                b = const B,
                options(nomem, nostack, preserves_flags)
            )
        }
    }
    #[inline(always)]
    fn trap(&self, _why: &'static str) -> ! {
        // SAFETY: `trap` aborts the kernel; nothing follows it.
        unsafe { core::arch::asm!("trap;", options(noreturn, nostack)) }
    }
    #[inline(always)]
    unsafe fn st_async_f32x2(&self, rank: u32, dst: u32, [a, b]: [f32; 2], bar: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b32 rd, rb;",
                "mapa.shared::cluster.u32 rd, {d}, {r};",
                "mapa.shared::cluster.u32 rb, {m}, {r};",
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [rd], {{{a}, {b}}}, [rb]; }}",
                d = in(reg32) dst,
                m = in(reg32) bar,
                r = in(reg32) rank,
                a = in(reg32) a,
                b = in(reg32) b,
                options(nostack)
            )
        }
    }
    #[inline(always)]
    fn mbarrier_wait_cluster(&self, bar: u32, parity: u32) {
        try_wait_loop!("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64", bar, parity);
    }
}

/// A kernel must never unwind or call into `core::panicking` (that would leave
/// an `.extern .func` in the PTX, which the driver refuses). Bodies index
/// through raw pointers; should a panic path ever survive, it traps.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; nothing to uphold.
    unsafe { nvptx::trap() }
}
