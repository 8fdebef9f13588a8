//! `wgmma` on the CPU: the warpgroup-collective TF32 matrix multiply of
//! Hopper's tensor cores, computed from shared memory as they read it.
//!
//! The 128 threads of a warpgroup meet, check that they name the same
//! operands, and each computes its fragment of `D += A * B^T` through the
//! matrix descriptors ([`descriptor_address`]: start address, strides,
//! swizzle). The operand reads pass the checker but are not counted: the
//! tensor cores do not read through the load/store unit. Each 8-deep step
//! rounds toward zero, as the hardware truncates its sums
//! ([`round_toward_zero`]), so a long sum drifts here as on the GPU.

use super::barrier::{Abandoned, Waypoint};
use super::block::Shared;
use super::error::EmuError;
use super::fiber::Fiber;
use super::memory::Request;
use super::types::WARPGROUP_SIZE;
use crate::Dim3;
use core::panic::Location;
use std::boxed::Box;
use std::vec::Vec;

/// `x` rounded to f32 toward zero: to nearest, then one step back toward
/// zero where that went past `x` (out of range gives `f32::MAX`, as `RZ`).
fn round_toward_zero(x: f64) -> f32 {
    let r = x as f32;
    if (r as f64).abs() > x.abs() { f32::from_bits(r.to_bits() - 1) } else { r }
}

/// The bits of an f32 that a TF32 operand keeps: sign, exponent and 10 of
/// the 23 mantissa bits. The kernels round their operands to TF32 before
/// staging them, so this drops nothing from theirs.
const TF32_MASK: u32 = 0xffff_e000;

/// The shared-memory byte that a `wgmma` matrix descriptor `desc` (PTX ISA,
/// "Matrix Descriptor Format") gives for byte `kbyte` of row `row` of a
/// K-major operand (rows are `M` for `A`, `N` for `B`; `kbyte < 32`):
///
/// - bits 0-13: start address >> 4; 16-29: leading byte offset >> 4 (LBO);
///   32-45: stride byte offset >> 4 (SBO); 49-51: base offset; 62-63:
///   swizzle (0 none, 1 128-byte, 2 64-byte, 3 32-byte);
/// - rows come in groups of 8, SBO bytes apart;
/// - without swizzle, a group is core matrices of 8 rows x 16 bytes (128
///   contiguous bytes), LBO bytes apart along `K`;
/// - with a `W`-byte swizzle, a row of the group is `W` contiguous bytes at
///   `W * (row % 8)`, and the address's 16-byte chunk bits (4 and up) are
///   XORed with its bits 7 and up (`log2(W / 16)` bits of each), as CuTe's
///   `Swizzle<log2(W/16), 4, 3>`: the pattern repeats every `8 W` bytes and
///   is a function of the address, so a tile whose base is aligned to that
///   is read as it was written.
pub fn descriptor_address(desc: u64, row: usize, kbyte: usize) -> usize {
    let field = |shift: u32| (((desc >> shift) & 0x3fff) << 4) as usize;
    let (start, lbo, sbo) = (field(0), field(16), field(32));
    assert!((desc >> 49) & 7 == 0, "wgmma descriptor: a nonzero base offset is not emulated");
    let group = start + (row / 8) * sbo;
    match desc >> 62 {
        0 => group + (kbyte / 16) * lbo + (row % 8) * 16 + kbyte % 16,
        mode => {
            let bits = 4 - mode as usize; // 128 B: 3, 64 B: 2, 32 B: 1
            let addr = group + (row % 8) * (16 << bits) + kbyte;
            addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)
        }
    }
}

/// Where a `wgmma` reads its `A` operand: shared memory through a matrix
/// descriptor, or the registers of the warpgroup's threads (this thread's
/// fragment, laid out as [`crate::ThreadCtx::wgmma_m64n256k8_tf32_rs`] says).
#[derive(Clone, Copy, Debug)]
pub(super) enum OperandA {
    Shared(u64),
    Registers([f32; 4]),
}

/// The slot value that stands for "`A` in registers" where the threads
/// compare their operands: no descriptor has all bits set (its bits 46-48
/// are reserved, zero).
const A_IN_REGISTERS: u64 = u64::MAX;

/// The thread that issues a `wgmma`, as [`wgmma_tf32`] needs it.
pub(super) struct Issuer<'a> {
    pub shared: &'a Shared,
    /// Its checked accesses.
    pub request: Request<'a>,
    /// Its index in the cluster, and its block's rank there.
    pub linear: u32,
    pub rank: u32,
    pub block: Dim3,
    pub fiber: &'a Fiber,
    /// The `wgmma`'s line.
    pub loc: &'static Location<'static>,
}

impl Issuer<'_> {
    fn group_sync(&self, group: &super::block::Warpgroup) {
        self.shared.meet(&group.barrier, Waypoint::Kernel, self.block, self.fiber);
    }
}

/// One TF32 `wgmma` of shape `m64nNk8`, `N = 2 R`, for this thread's `R`
/// accumulators: the warpgroup meets, checks that every thread names
/// the same operands (descriptors and scale-d), and each thread
/// computes its fragment (layout
/// in [`ThreadCtx::wgmma_m64n256k8_tf32`]) from shared memory and, for
/// `A` in registers, from the fragments its warp's threads hold.
///
/// Each output is `RZ(D + sum of the 8 products)`: the products of TF32
/// values are exact in f64, and so is their sum with `D` unless their
/// magnitudes lie more than about `2^29` apart; the result is rounded
/// to f32 toward zero. The tensor cores do not round their f32 sum to
/// nearest, they truncate it, so the error of each step leans toward
/// zero, by up to an ulp of the running sum, and a sum over all of `K`
/// in one accumulator drifts in proportion to `K`. This models that
/// bias (not the hardware's exact bits): a kernel that leaves the drift
/// in shows it here, as on the GPU.
pub(super) fn wgmma_tf32<const R: usize>(me: &Issuer<'_>, d: &mut [f32; R], a: OperandA, b: u64, accumulate: bool) {
    let a_slot = match a {
        OperandA::Shared(desc) => desc,
        OperandA::Registers(_) => A_IN_REGISTERS,
    };
    let fragment = match a {
        OperandA::Registers(fragment) => Some(fragment.map(f32::to_bits)),
        OperandA::Shared(_) => None,
    };
    let tf32 = |bits: u32| f32::from_bits(bits & TF32_MASK) as f64;
    // This thread's two rows of an `A` in registers, gathered while every
    // fragment is published: row `16 w + g + 8 h` has its `k` in lane
    // `4 g + k % 4` of warp `w`, register `h + 2 (k / 4)`.
    let (t, registers) = meet(me, (a_slot, b, accumulate as u64), fragment, |fragments, warp, lane| {
        let row = |h: usize| -> [f64; 8] {
            core::array::from_fn(|k| tf32(fragments[32 * warp + 4 * (lane / 4) + k % 4][h + 2 * (k / 4)]))
        };
        [row(0), row(1)]
    });
    let (warp, lane) = (t / 32, t % 32);
    let read = OperandReader::new(me);
    // The 8 TF32 values of `k` that row `row` of an operand holds.
    let operand = |desc: u64, row: usize| -> [f64; 8] { core::array::from_fn(|k| tf32(read.word(desc, row, 4 * k))) };
    // This thread's rows of A (two) and columns of B (R / 2), read once each.
    let rows: [[f64; 8]; 2] = match a {
        OperandA::Shared(desc) => core::array::from_fn(|h| operand(desc, 16 * warp + lane / 4 + 8 * h)),
        OperandA::Registers(_) => registers.expect("gathered in the meeting for A in registers"),
    };
    let cols: Vec<[f64; 8]> = (0..R / 2).map(|j| operand(b, 8 * (j / 2) + 2 * (lane % 4) + j % 2)).collect();
    for (i, acc) in d.iter_mut().enumerate() {
        let (x, y) = (&rows[(i / 2) % 2], &cols[2 * (i / 4) + i % 2]);
        let start = if accumulate { *acc as f64 } else { 0.0 };
        *acc = round_toward_zero((0..8).fold(start, |s, k| s + x[k] * y[k]));
    }
}

/// One integer `wgmma` of shape `m64nNk32`, `N = 2 R`, signed bytes from
/// shared memory into this thread's `R` s32 accumulators (layout as
/// [`wgmma_tf32`]'s): the 32 products of a row and a column and their sum
/// are exact, added to `D` with wrapping, as the `.s32` accumulator
/// without `.satfinite` does (or in place of `D` without `accumulate`). Both operands are K-major: a row's 32 `k`
/// are the 32 bytes a TF32 row's 8 take.
pub(super) fn wgmma_s8<const R: usize>(me: &Issuer<'_>, d: &mut [i32; R], (a, b): (u64, u64), accumulate: bool) {
    let (t, _) = meet(me, (a, b, accumulate as u64), None, |_, _, _| ());
    let (warp, lane) = (t / 32, t % 32);
    let read = OperandReader::new(me);
    let operand = |desc: u64, row: usize| -> [i32; 32] {
        let words: [u32; 8] = core::array::from_fn(|w| read.word(desc, row, 4 * w));
        core::array::from_fn(|k| (words[k / 4] >> (8 * (k % 4))) as u8 as i8 as i32)
    };
    let rows: [[i32; 32]; 2] = core::array::from_fn(|h| operand(a, 16 * warp + lane / 4 + 8 * h));
    let cols: Vec<[i32; 32]> = (0..R / 2).map(|j| operand(b, 8 * (j / 2) + 2 * (lane % 4) + j % 2)).collect();
    for (i, acc) in d.iter_mut().enumerate() {
        let (x, y) = (&rows[(i / 2) % 2], &cols[2 * (i / 4) + i % 2]);
        let sum = (0..32).map(|k| x[k] * y[k]).sum::<i32>();
        *acc = if accumulate { acc.wrapping_add(sum) } else { sum };
    }
}

/// The warpgroup of `me`'s `wgmma` meets: each thread publishes its
/// `operands` (`A`'s descriptor or [`A_IN_REGISTERS`], `B`'s, scale-d) and,
/// for `A` in registers, its `fragment`, and then `gather` reads the
/// published fragments (for warp and lane of this thread) before anyone
/// moves on. A partial warpgroup, or threads that name different operands,
/// abandon the launch with its error. Returns this thread's index in the
/// warpgroup and what `gather` returned (`None` with no fragment: the
/// fragments are not locked).
fn meet<G>(
    me: &Issuer<'_>, operands: (u64, u64, u64), fragment: Option<[u32; 4]>,
    gather: impl FnOnce(&[[u32; 4]], usize, usize) -> G,
) -> (usize, Option<G>) {
    let index = me.linear / WARPGROUP_SIZE;
    let group = &me.shared.warpgroups[index as usize];
    if group.threads != WARPGROUP_SIZE {
        me.shared.fail(EmuError::PartialWarpgroup { block: me.block, threads: group.threads });
        std::panic::resume_unwind(Box::new(Abandoned));
    }
    let t = (me.linear % WARPGROUP_SIZE) as usize;
    if let Some(fragment) = fragment {
        group.fragments.lock().unwrap_or_else(|e| e.into_inner())[t] = fragment;
    }
    group.slots.lock().unwrap_or_else(|e| e.into_inner())[t] = operands;
    me.group_sync(group);
    let same = group.slots.lock().unwrap_or_else(|e| e.into_inner()).iter().all(|&s| s == operands);
    let gathered = fragment.map(|_| gather(&group.fragments.lock().unwrap_or_else(|e| e.into_inner()), t / 32, t % 32));
    me.group_sync(group); // nobody overwrites a slot before all have read
    if !same {
        me.shared.fail(EmuError::DivergentWgmma { block: me.block, warpgroup: index });
        std::panic::resume_unwind(Box::new(Abandoned));
    }
    (t, gathered)
}

/// Reads a `wgmma`'s operands from its block's shared memory, each word
/// through the checker (races with the staging stores, unwritten words)
/// at the `wgmma`'s line, not counted: the operands bypass the load/store
/// unit.
struct OperandReader<'a> {
    smem: *const u8,
    bytes: usize,
    region: usize,
    loc: &'static Location<'static>,
    request: &'a Request<'a>,
}

impl<'a> OperandReader<'a> {
    fn new(me: &'a Issuer<'a>) -> Self {
        // This block's region of the shared memory, alive for the whole launch.
        let region = me.shared.region(me.rank) as usize;
        // SAFETY: only the pointer is taken, inside the cluster's memory.
        let smem = unsafe { me.shared.cluster_smem().add(region).cast_const() };
        OperandReader { smem, bytes: me.shared.cta_stride, region, loc: me.loc, request: &me.request }
    }

    /// The 4-byte word at byte `kbyte` (a multiple of 4) of row `row` of
    /// the K-major operand `desc` describes ([`descriptor_address`]).
    fn word(&self, desc: u64, row: usize, kbyte: usize) -> u32 {
        let at = descriptor_address(desc, row, kbyte);
        let bytes = self.bytes;
        assert!(at + 4 <= bytes, "wgmma: operand at shared byte {at}, past the {bytes} bytes of the block");
        self.request.operand_read(self.loc, self.region + at, 4);
        // SAFETY: inside the shared memory (checked); any bits are a word.
        unsafe { self.smem.add(at).cast::<u32>().read_unaligned() }
    }
}
