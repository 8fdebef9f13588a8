//! Every op of the crate and its kernels, in the order the docs teach them:
//! the one place that names them all (each op only knows the
//! [`crate::registry`] vocabulary, so nothing runs back up to this list).

use crate::registry::Step;

/// Every op's [`Step`] table, in the order the docs teach them.
pub const OPS: &[(&str, &[Step])] = &[
    ("copy", crate::copy::STEPS),
    ("probe", crate::probe::STEPS),
    ("transpose", &crate::transpose::Variant::STEPS),
    ("nested_sin", &crate::nested_sin::Variant::STEPS),
    ("softmax", &crate::softmax::Kernel::STEPS),
    ("gemm", &crate::gemm::Variant::STEPS),
    ("gemm_maxima", crate::gemm::scale::MAXIMA_STEPS),
    ("gemm_pack", crate::gemm::pack::PACK_STEPS),
    ("gemm_fixup", crate::gemm::fixup::FIXUP_STEPS),
    ("gemm_sum_splits", crate::gemm::split_k::SPLIT_K_STEPS),
];

/// How many kernels opt in to more than 48 KiB of shared memory.
const OPT_IN_COUNT: usize = {
    let (mut n, mut op) = (0, 0);
    while op < OPS.len() {
        let mut i = 0;
        while i < OPS[op].1.len() {
            n += OPS[op].1[i].opt_in_shared as usize;
            i += 1;
        }
        op += 1;
    }
    n
};

/// The `.entry` names of the kernels that opt in, in [`OPS`] order.
pub(crate) const OPT_IN_SHARED: [&str; OPT_IN_COUNT] = {
    let (mut out, mut n, mut op) = ([""; OPT_IN_COUNT], 0, 0);
    while op < OPS.len() {
        let mut i = 0;
        while i < OPS[op].1.len() {
            if OPS[op].1[i].opt_in_shared {
                out[n] = OPS[op].1[i].entry;
                n += 1;
            }
            i += 1;
        }
        op += 1;
    }
    out
};

/// Every kernel of every op, in [`OPS`] order.
pub fn steps() -> impl Iterator<Item = &'static Step> {
    OPS.iter().flat_map(|(_, steps)| steps.iter())
}
