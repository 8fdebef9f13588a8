//! The emulator's tensor maps and the bulk tensor copies (TMA) that read
//! them.
//!
//! On the GPU a [`TensorMap`] is what the driver's `cuTensorMapEncodeTiled`
//! writes, opaque to the kernel. The emulator reads its own encoding
//! instead, a [`TmaMap`]: a host that launches on the emulator builds its
//! maps with [`TmaMap::encode`], and a kernel passes them on as it would on
//! the GPU. A magic word and a check word let [`TmaMap::decode`] refuse bytes
//! that are not one (a driver's map, garbage, a map overwritten in part).
//!
//! What is emulated: 2D tensors of 4-byte elements, a box copied row by row
//! into shared memory, elements outside the tensor read as zeros, and the
//! 128-byte swizzle, all with the limits `cuTensorMapEncodeTiled` and the
//! copy instruction put on them (alignments, box sizes). The copy happens
//! at once, in the issuing thread ([`super::EmuCtx`]'s `tma_load_2d`).

use crate::TensorMap;

/// How a copy lays a box's rows out in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaSwizzle {
    /// Row `r` of the box is its `4 box_cols` bytes at `4 box_cols r`.
    None,
    /// `CU_TENSOR_MAP_SWIZZLE_128B`: rows of 128 bytes, whose 16-byte
    /// chunks are permuted by the shared address: bits 4-6 of the address
    /// are XORed with its bits 7-9, the pattern the `wgmma` descriptors'
    /// 128-byte swizzle reads ([`super::descriptor_address`], mode 1).
    B128,
}

/// A 2D tensor of 4-byte elements in global memory, and the box that one
/// copy moves from it into shared memory: the emulator's [`TensorMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmaMap {
    /// The global address of element (column 0, row 0), 16-byte aligned.
    pub base: u64,
    /// Elements per row: the inner dimension, `x` of a copy's coordinates.
    pub cols: u32,
    /// Rows: `y` of a copy's coordinates.
    pub rows: u32,
    /// Bytes from the start of one row to the next, a multiple of 16 below
    /// `2^40`.
    pub row_stride: u64,
    /// Elements per row of the box (`1..=256`, `4 box_cols` a multiple of
    /// 16; 32 with the 128-byte swizzle, whose rows are 128 bytes).
    pub box_cols: u32,
    /// Rows of the box, `1..=256`.
    pub box_rows: u32,
    pub swizzle: TmaSwizzle,
    /// Element type TF32 (`CU_TENSOR_MAP_DATA_TYPE_TFLOAT32`): the copy
    /// rounds each f32 to TF32 ([`round_tf32`]), as the TMA does.
    pub tf32: bool,
}

/// What a copy through a TF32 tensor map makes of the f32 `bits`, as an
/// H100 makes it (`docs/measurements/2026-11-28-h100-tma-tf32-probe` at commit f58f145): the
/// 13 low mantissa bits rounded away to nearest, ties to even (a carry may
/// reach the exponent: `FLT_MAX` becomes inf); subnormals rounded the same
/// way, not flushed; inf kept; every NaN the one NaN `0x7fffe000`.
pub fn round_tf32(bits: u32) -> u32 {
    if bits & 0x7f80_0000 == 0x7f80_0000 {
        return if bits & 0x007f_ffff == 0 { bits } else { 0x7fff_e000 };
    }
    (bits + 0xfff + ((bits >> 13) & 1)) & 0xffff_e000
}

/// Word 0 of an encoded map: `"emuTMA2d"`.
const MAGIC: u64 = u64::from_le_bytes(*b"emuTMA2d");
/// The word that holds the check of the others.
const CHECK: usize = 15;

/// A mix of words 0..15 that changes with any bit of them.
fn check(words: &[u64; 16]) -> u64 {
    words[..CHECK].iter().fold(MAGIC, |h, &w| (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29))
}

impl TmaMap {
    /// The bytes of the box in shared memory: the bytes a copy counts
    /// against its barrier.
    pub fn box_bytes(&self) -> u32 {
        4 * self.box_cols * self.box_rows
    }

    /// The alignment a copy's shared destination needs: 128 bytes, and the
    /// 1024 of the swizzle pattern's period with the 128-byte swizzle.
    pub fn dst_align(&self) -> u32 {
        match self.swizzle {
            TmaSwizzle::None => 128,
            TmaSwizzle::B128 => 1024,
        }
    }

    /// The shared address where a copy to `dst` puts element `col` of row
    /// `row` of the box.
    pub fn shared_address(&self, dst: u32, row: u32, col: u32) -> usize {
        let at = dst as usize + 4 * (self.box_cols * row + col) as usize;
        match self.swizzle {
            TmaSwizzle::None => at,
            TmaSwizzle::B128 => at ^ (((at >> 7) & 7) << 4),
        }
    }

    /// Whether the map is one `cuTensorMapEncodeTiled` would make (`Err`
    /// says why not).
    pub fn validate(&self) -> Result<(), &'static str> {
        let in_box = |n: u32| (1..=256).contains(&n);
        if !self.base.is_multiple_of(16) {
            Err("the tensor's base address is not 16-byte aligned")
        } else if self.cols == 0 || self.rows == 0 {
            Err("the tensor has no elements")
        } else if !self.row_stride.is_multiple_of(16) || self.row_stride >= 1 << 40 {
            Err("the row stride is not a multiple of 16 bytes below 2^40")
        } else if !in_box(self.box_cols) || !in_box(self.box_rows) {
            Err("a box dimension is outside 1..=256")
        } else if !(4 * self.box_cols).is_multiple_of(16) {
            Err("the box's rows are not a multiple of 16 bytes")
        } else if self.swizzle == TmaSwizzle::B128 && 4 * self.box_cols != 128 {
            Err("the 128-byte swizzle needs box rows of 128 bytes (32 elements)")
        } else {
            Ok(())
        }
    }

    /// The map's bytes as a kernel reads them: the fields, a magic word and
    /// a check word. A map that [`TmaMap::validate`] refuses encodes too;
    /// [`TmaMap::decode`] refuses it.
    pub fn encode(&self) -> TensorMap {
        let mut w = [0u64; 16];
        w[0] = MAGIC;
        w[1] = self.base;
        w[2] = self.cols as u64 | (self.rows as u64) << 32;
        w[3] = self.row_stride;
        w[4] = self.box_cols as u64 | (self.box_rows as u64) << 32;
        w[5] = match self.swizzle {
            TmaSwizzle::None => 0,
            TmaSwizzle::B128 => 128,
        };
        w[6] = self.tf32 as u64;
        w[CHECK] = check(&w);
        TensorMap(w)
    }

    /// The map `map` encodes, or `None` when its bytes are not an encoded
    /// map or the map is not valid.
    pub fn decode(map: &TensorMap) -> Option<TmaMap> {
        Self::parse(map).ok()
    }

    /// [`TmaMap::decode`], saying what is wrong.
    pub fn parse(map: &TensorMap) -> Result<TmaMap, &'static str> {
        let w = &map.0;
        if w[0] != MAGIC {
            return Err("no magic word: not a map TmaMap::encode made");
        }
        if w[CHECK] != check(w) || w[6] > 1 || w[7..CHECK].iter().any(|&x| x != 0) {
            return Err("the check word does not match: the map was altered");
        }
        let swizzle = match w[5] {
            0 => TmaSwizzle::None,
            128 => TmaSwizzle::B128,
            _ => return Err("unknown swizzle"),
        };
        let m = TmaMap {
            base: w[1],
            cols: w[2] as u32,
            rows: (w[2] >> 32) as u32,
            row_stride: w[3],
            box_cols: w[4] as u32,
            box_rows: (w[4] >> 32) as u32,
            swizzle,
            tf32: w[6] == 1,
        };
        m.validate().map(|()| m)
    }

    /// Copies the box whose first element is column `x`, row `y` to shared
    /// memory at `smem + ` the shared addresses from `dst`
    /// ([`TmaMap::shared_address`]), zeros where the box leaves the tensor.
    ///
    /// # Safety
    /// The tensor's elements are readable; `smem` is valid for writes of
    /// the box's bytes from `dst` on.
    pub(super) unsafe fn copy_box(&self, (x, y): (i32, i32), smem: *mut u8, dst: u32) {
        for r in 0..self.box_rows {
            let gy = y as i64 + r as i64;
            for c in 0..self.box_cols {
                let gx = x as i64 + c as i64;
                let inside = (0..self.cols as i64).contains(&gx) && (0..self.rows as i64).contains(&gy);
                let value = if inside {
                    let at = self.base + gy as u64 * self.row_stride + 4 * gx as u64;
                    // SAFETY: an element of the tensor (the caller's
                    // contract), 4-byte aligned: base and stride are
                    // multiples of 16.
                    let bits = unsafe { core::ptr::with_exposed_provenance::<u32>(at as usize).read() };
                    if self.tf32 { round_tf32(bits) } else { bits }
                } else {
                    0
                };
                // SAFETY: inside the box's bytes (the caller's contract),
                // which the swizzle permutes among themselves.
                unsafe { smem.add(self.shared_address(dst, r, c)).cast::<u32>().write_unaligned(value) };
            }
        }
    }
}
