//! Empty matrices, as `torch.softmax` takes them (no rows, or rows of no
//! columns): every launcher checks the buffers, then launches nothing, on
//! the emulator and on the GPU.

use crate::common::*;
use coalesce::emu::Report;
use coalesce::softmax::{self, Kernel, Strategy, emu};
use coalesce::{Error, MatrixShape};

/// An empty matrix (no rows, or rows of no columns: `torch.softmax` takes
/// both) launches nothing once its buffers are checked, whatever the
/// launcher; a row too long for a forced kernel is still an error.
#[test]
fn empty_matrices_are_no_ops_on_the_emulator() {
    for shape in empty_shapes() {
        emu::softmax(&[], &mut [], shape).unwrap_or_else(|e| panic!("softmax of {shape}: {e}"));
        for strategy in [Strategy::WarpPerRow, Strategy::BlockPerRow, Strategy::Online] {
            emu::with_strategy(strategy, &[], &mut [], shape)
                .unwrap_or_else(|e| panic!("{strategy:?} of {shape}: {e}"));
        }
        for kernel in Kernel::ALL {
            emu::launch(kernel, &[], &mut [], shape)
                .unwrap_or_else(|e| panic!("{} of {shape}: {e}", kernel.entry_point()));
            let report = emu::launch_checked(kernel, &[], &mut [], shape).unwrap();
            assert_eq!(report, Report::default(), "{} of {shape}: something was launched", kernel.entry_point());
        }
        let e = emu::softmax(&[1.0], &mut [], shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "input", expected: 0, actual: 1, .. }), "{e}");
        let e = emu::launch_checked(Kernel::Warp4, &[], &mut [0.0], shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 0, actual: 1, .. }), "{e}");
    }
    // Rows of 0 columns take the kernel each strategy takes for 1 column.
    let (no_cols, one_col) = (MatrixShape::new(7, 0).unwrap(), MatrixShape::new(7, 1).unwrap());
    for strategy in [Strategy::WarpPerRow, Strategy::BlockPerRow, Strategy::Online] {
        let kernel = softmax::kernel_for(strategy, no_cols).unwrap();
        assert_eq!(kernel, softmax::kernel_for(strategy, one_col).unwrap(), "{strategy:?}");
    }
    assert_eq!(softmax::kernel_for(Strategy::WarpPerRow, no_cols).unwrap(), Kernel::Warp4);
    // No rows, but rows too long for the kernel asked for.
    let long = MatrixShape::new(0, 1025).unwrap();
    emu::softmax(&[], &mut [], long).unwrap();
    let e = emu::launch(Kernel::Warp32, &[], &mut [], long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { cols: 1025, .. }), "{e}");
    let e = emu::with_strategy(Strategy::WarpPerRow, &[], &mut [], long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { cols: 1025, .. }), "{e}");
}

#[test]
fn empty_matrices_are_no_ops_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu softmax empty") else { return };
    let stream = gpu.stream().unwrap();
    for shape in empty_shapes() {
        empty_is_a_no_op(&stream, &format!("softmax of {shape}"), |i, o| softmax::softmax(&stream, i, o, shape));
        empty_is_a_no_op(&stream, &format!("warp_per_row of {shape}"), |i, o| {
            softmax::warp_per_row(&stream, i, o, shape)
        });
        empty_is_a_no_op(&stream, &format!("block_per_row of {shape}"), |i, o| {
            softmax::block_per_row(&stream, i, o, shape)
        });
        empty_is_a_no_op(&stream, &format!("online of {shape}"), |i, o| softmax::online(&stream, i, o, shape));
        for kernel in Kernel::ALL {
            empty_is_a_no_op(&stream, &format!("{} of {shape}", kernel.entry_point()), |i, o| {
                softmax::launch(&stream, kernel, i, o, shape)
            });
        }
        let (one, mut none) = (gpu.alloc::<f32>(1).unwrap(), gpu.alloc::<f32>(0).unwrap());
        let e = softmax::softmax(&stream, &one, &mut none, shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "input", expected: 0, actual: 1, .. }), "{e}");
    }
}
