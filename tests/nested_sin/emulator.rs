//! Every nested-sin version on the emulator: the host's bits at odd
//! lengths and offsets with guards around the output, in place as out of
//! place; the launchers' length errors; and the versions' registry.

use crate::common::*;
use crate::reference::*;
use coalesce::Error;
use coalesce::emu::Report;
use coalesce::nested_sin::{self, Variant};

#[test]
fn every_variant_on_the_emulator_at_odd_lengths_and_offsets() {
    let mut rng = rng("emulator nested_sin");
    for len in LENGTHS {
        let xs = shuffled_inputs(&mut rng, len);
        for (in_off, out_off) in OFFSETS {
            let input = at_offset(&xs, in_off);
            for variant in Variant::ALL {
                let mut output = poison(out_off + len + GUARD);
                nested_sin::emu::launch(variant, &input[in_off..], &mut output[out_off..out_off + len]).unwrap();
                let want: Vec<f32> = xs.iter().map(|&x| host_expected(variant, x)).collect();
                let what = format!("{} len {len} offsets {in_off}/{out_off}", variant.name());
                assert_window(&what, &xs, &output, out_off, &want);
            }
        }
    }
}

#[test]
fn in_place_equals_out_of_place_on_the_emulator() {
    let mut rng = rng("emulator nested_sin in place");
    let xs = inputs(&mut rng, 3000);
    for variant in Variant::ALL {
        let mut out = poison(xs.len());
        nested_sin::emu::launch(variant, &xs, &mut out).unwrap();
        // Offset 1 of a larger buffer: the scalar head in place too.
        let mut data = vec![0.0f32; xs.len() + 1];
        data[1..].copy_from_slice(&xs);
        nested_sin::emu::launch_in_place(variant, &mut data[1..]).unwrap();
        assert_bits(&format!("{} in place", variant.name()), &xs, &data[1..], &out);
    }
}

#[test]
fn mismatched_lengths_are_errors_and_empty_is_a_no_op() {
    let x = vec![1.0f32; 10];
    let mut short = vec![0.0f32; 9];
    for variant in Variant::ALL {
        let e = nested_sin::emu::launch(variant, &x, &mut short).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 10, actual: 9, .. }), "{e}");
        nested_sin::emu::launch(variant, &[], &mut []).unwrap();
        nested_sin::emu::launch_in_place(variant, &mut []).unwrap();
        assert_eq!(nested_sin::emu::launch_checked(variant, &[], &mut []).unwrap(), Report::default());
        assert!(nested_sin::emu::launches_checked(variant, &[], &mut []).unwrap().is_empty());
        let e = nested_sin::emu::launch_checked(variant, &[], &mut [0.0]).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 0, actual: 1, .. }), "{e}");
    }
}

/// The versions, their names and their PTX entries agree (one list).
#[test]
fn variant_registry_is_consistent() {
    let entries: Vec<&str> = Variant::ALL.iter().map(|v| v.entry_point()).collect();
    assert_eq!(entries, coalesce::kernels::nested_sin::ENTRIES);
    assert_eq!(Variant::ALL.iter().map(|v| v.launches()).sum::<u32>(), 4 + 4);
    for v in Variant::ALL {
        assert!(coalesce::PTX.contains(&format!(".entry {}(", v.entry_point())), "{}", v.name());
    }
}
