//! Tensor maps: the emulator's encoding of [`TmaMap`] round-trips and
//! refuses what is not one, and a copy's 128-byte swizzle puts each element
//! where a `wgmma` descriptor of the same layout reads it.

use coalesce_kernels::TensorMap;
use coalesce_kernels::emu::{TmaMap, TmaSwizzle, descriptor_address};
use coalesce_kernels::gemm::k_major_128b;

#[test]
fn a_tensor_map_encodes_decodes_and_refuses_what_is_not_one() {
    let m = TmaMap {
        base: 0x7f00_0000_1000,
        cols: 40,
        rows: 48,
        row_stride: 160,
        box_cols: 32,
        box_rows: 8,
        swizzle: TmaSwizzle::B128,
        tf32: false,
    };
    let e = m.encode();
    assert_eq!(TmaMap::decode(&TmaMap { tf32: true, ..m }.encode()), Some(TmaMap { tf32: true, ..m }));
    assert_eq!(TmaMap::decode(&e), Some(m));
    assert_eq!(core::mem::align_of::<TensorMap>(), 64);
    // Any bit flipped, anywhere, is noticed.
    for word in 0..16 {
        for bit in [0, 17, 63] {
            let mut bad = e;
            bad.0[word] ^= 1 << bit;
            assert_eq!(TmaMap::decode(&bad), None, "word {word} bit {bit}");
        }
    }
    assert_eq!(TmaMap::decode(&TensorMap([0; 16])), None);
    // What cuTensorMapEncodeTiled would refuse encodes, and decodes to nothing.
    for (bad, why) in [
        (TmaMap { base: m.base + 4, ..m }, "16-byte"),
        (TmaMap { row_stride: 152, ..m }, "row stride"),
        (TmaMap { box_cols: 16, ..m }, "128-byte swizzle"),
        (TmaMap { box_cols: 6, swizzle: TmaSwizzle::None, ..m }, "multiple of 16 bytes"),
        (TmaMap { box_rows: 257, ..m }, "1..=256"),
        (TmaMap { rows: 0, ..m }, "no elements"),
    ] {
        assert_eq!(TmaMap::decode(&bad.encode()), None, "{bad:?}");
        let e = TmaMap::parse(&bad.encode()).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    assert_eq!((m.box_bytes(), m.dst_align()), (1024, 1024));
}

/// The 128-byte swizzle of a copy puts element `c` of box row `r` where a
/// K-major `wgmma` descriptor in the same swizzle, at the copy's
/// destination, reads float `c % 8` of row `r` in step `c / 8`.
#[test]
fn the_128_byte_swizzle_is_the_wgmma_descriptors() {
    let m = TmaMap {
        base: 0,
        cols: 32,
        rows: 256,
        row_stride: 128,
        box_cols: 32,
        box_rows: 256,
        swizzle: TmaSwizzle::B128,
        tf32: false,
    };
    for dst in [0u32, 1024, 8192, 40960] {
        for r in 0..256 {
            for c in 0..32 {
                let desc = k_major_128b(dst + 32 * (c / 8));
                let want = descriptor_address(desc, r as usize, 4 * (c % 8) as usize);
                assert_eq!(m.shared_address(dst, r, c), want, "dst {dst} row {r} col {c}");
            }
        }
    }
    // Without the swizzle, rows are packed.
    let plain = TmaMap { swizzle: TmaSwizzle::None, ..m };
    assert_eq!(plain.shared_address(1024, 3, 5), 1024 + 3 * 128 + 5 * 4);
}

/// The emulator's TF32 copies round as an H100's TMA does, on the values of
/// `docs/measurements/2026-11-28-h100-tma-tf32-probe` at commit f58f145 (input, what the GPU
/// copied): ties to even, a carry into the exponent, FLT_MAX to inf,
/// subnormals rounded and not flushed, inf kept, every NaN `0x7fffe000`.
#[test]
fn tf32_copies_round_as_the_h100s_tma() {
    use coalesce_kernels::emu::round_tf32;
    let h100: [(u32, u32); 16] = [
        (0x3f80_1000, 0x3f80_0000),
        (0x3f80_3000, 0x3f80_4000),
        (0xbf80_1000, 0xbf80_0000),
        (0xbf80_3000, 0xbf80_4000),
        (0x3fff_ffff, 0x4000_0000),
        (0x7f7f_ffff, 0x7f80_0000),
        (0x7f80_0000, 0x7f80_0000),
        (0xff80_0000, 0xff80_0000),
        (0x7f80_0001, 0x7fff_e000),
        (0x7fc0_0000, 0x7fff_e000),
        (0x0000_1000, 0x0000_0000),
        (0x0000_3000, 0x0000_4000),
        (0x0000_0fff, 0x0000_0000),
        (0x8000_1001, 0x8000_2000),
        (0x3f80_0fff, 0x3f80_0000),
        (0x3f80_1001, 0x3f80_2000),
    ];
    for (input, gpu) in h100 {
        assert_eq!(round_tf32(input), gpu, "{input:08x}");
    }
}
