//! The exercises, in ladder order: the files a learner edits, and what each
//! is graded on. Each file's docs say what to do.

pub mod e1_coalesce_stores;
pub mod e2_shared_tile;
pub mod e3_padding;
pub mod e4_swizzle;
pub mod e5_vector;
pub mod e6_barrier;
pub mod e7_register_tile;

use crate::{Exercise, Goal, Run, Target, Which, copy_run, gemm_run, step_dims, tile_floats, transpose_run};
use coalesce::Result;
use coalesce::emu::Op;
use coalesce::kernels::emu::EmuCtx;
use coalesce::kernels::transpose::{Padded, Swizzled, TILE, TileLayout, Variant};

const STORES_COALESCED: Goal = Goal {
    target: Target::AtMost(Op::GlobalStore, 4.0),
    hint: "each lane stores into its own 32-byte sector: let consecutive lanes (t.x) write consecutive floats",
};
const LOADS_COALESCED: Goal = Goal {
    target: Target::AtMost(Op::GlobalLoad, 4.0),
    hint: "each lane loads from its own 32-byte sector: let consecutive lanes (t.x) read consecutive floats",
};
const SHARED_READS_FREE: Goal = Goal {
    target: Target::AtMost(Op::SharedLoad, 1.0),
    hint: "the lanes reading a tile column hit the same bank at different words: make a column's 32 elements \
           fall in 32 different banks",
};
const SHARED_WRITES_FREE: Goal = Goal {
    target: Target::AtMost(Op::SharedStore, 1.0),
    hint: "the lanes writing a tile row must still hit 32 different banks",
};

pub static ALL: &[Exercise] = &[
    Exercise {
        number: 1,
        title: "coalesce the naive transpose's stores",
        file: "learn/src/exercises/e1_coalesce_stores.rs",
        solution: "transpose step 2, naive_cols (kernels/src/transpose/02_naive_cols.rs)",
        goals: &[STORES_COALESCED],
        run: e1,
    },
    Exercise {
        number: 2,
        title: "stage a tile through shared memory",
        file: "learn/src/exercises/e2_shared_tile.rs",
        solution: "transpose step 3, tiled (kernels/src/transpose/03_tiled.rs)",
        goals: &[
            LOADS_COALESCED,
            Goal {
                target: Target::AtMost(Op::GlobalStore, 4.0),
                hint: "a transpose straight from global memory has one strided side: read the tile along input \
                       rows into shared memory, then write output rows from the tile's columns",
            },
        ],
        run: e2,
    },
    Exercise {
        number: 3,
        title: "remove the 32-way bank conflict by padding",
        file: "learn/src/exercises/e3_padding.rs",
        solution: "transpose step 4, padded (kernels/src/transpose/04_padded.rs)",
        goals: &[
            Goal {
                target: Target::AtMost(Op::SharedLoad, 1.0),
                hint: "a tile column is 32 words apart, all in one bank: give each row one float more than it \
                       holds, so that a column steps 33 words, one bank to the next",
            },
            SHARED_WRITES_FREE,
        ],
        run: e3,
    },
    Exercise {
        number: 4,
        title: "remove the bank conflict by a swizzle",
        file: "learn/src/exercises/e4_swizzle.rs",
        solution: "transpose step 5, swizzled (kernels/src/transpose/05_swizzled.rs)",
        goals: &[
            SHARED_READS_FREE,
            SHARED_WRITES_FREE,
            Goal {
                target: Target::SharedFloats(TILE * TILE),
                hint: "a swizzle keeps the [32][32] footprint: permute the columns within each row (col ^ row)",
            },
        ],
        run: e4,
    },
    Exercise {
        number: 5,
        title: "move 16 bytes per lane",
        file: "learn/src/exercises/e5_vector.rs",
        solution: "the copy kernel (kernels/src/copy.rs)",
        goals: &[
            Goal {
                target: Target::BytesAtLeast(Op::GlobalLoad, 512.0),
                hint: "each lane loads 4 bytes: load an F4 (16 bytes) through a view of F4s over the buffer",
            },
            Goal {
                target: Target::BytesAtLeast(Op::GlobalStore, 512.0),
                hint: "each lane stores 4 bytes: store an F4 (16 bytes) through a view of F4s over the buffer",
            },
        ],
        run: e5,
    },
    Exercise {
        number: 6,
        title: "find the missing barrier",
        file: "learn/src/exercises/e6_barrier.rs",
        solution: "transpose step 4, padded (kernels/src/transpose/04_padded.rs)",
        goals: &[SHARED_READS_FREE, LOADS_COALESCED, STORES_COALESCED],
        run: e6,
    },
    Exercise {
        number: 7,
        title: "a register tile for GEMM",
        file: "learn/src/exercises/e7_register_tile.rs",
        solution: "GEMM step 3, blocktile_1d (kernels/src/gemm/03_blocktile_1d.rs)",
        goals: &[Goal {
            target: Target::PerFma(Op::SharedLoad, 1.125),
            hint: "B[i][col] is the same for the thread's 8 outputs: load it once per i, into a register, before \
                   the loop over r",
        }],
        run: e7,
    },
];

// Each runner calls the kernel inside a closure: the kernels are generic
// over the context, whose lifetime a plain function pointer cannot name.
// SAFETY (every runner): `transpose_run` and `copy_run` pass buffers of the
// kernel's documented sizes, distinct, 256-byte aligned, and launch it with
// the shared memory it documents.

fn e1(which: Which) -> Result<Run> {
    transpose_run(step_dims(Variant::NaiveCols, None), |ctx, i, o, r, c| match which {
        Which::Yours => unsafe { e1_coalesce_stores::transpose(ctx, i, o, r, c) },
        Which::Solution => unsafe { Variant::NaiveCols.run(ctx, i, o, r, c) },
    })
}

fn e2(which: Which) -> Result<Run> {
    transpose_run(step_dims(Variant::Tiled, None), |ctx, i, o, r, c| match which {
        Which::Yours => unsafe { e2_shared_tile::transpose(ctx, i, o, r, c) },
        Which::Solution => unsafe { Variant::Tiled.run(ctx, i, o, r, c) },
    })
}

fn e3(which: Which) -> Result<Run> {
    layout_run::<e3_padding::Layout, Padded>(which, Variant::Padded, |ctx, i, o, r, c| unsafe {
        e3_padding::transpose(ctx, i, o, r, c)
    })
}

fn e4(which: Which) -> Result<Run> {
    layout_run::<e4_swizzle::Layout, Swizzled>(which, Variant::Swizzled, |ctx, i, o, r, c| unsafe {
        e4_swizzle::transpose(ctx, i, o, r, c)
    })
}

/// A layout exercise (3, 4): `yours`, the learner's file with its layout
/// `Yours`, launched as step 3 with the shared memory `Yours` asks for; or
/// the ladder's `step` with its own layout `Step`.
fn layout_run<Yours: TileLayout, Step: TileLayout>(
    which: Which, step: Variant, yours: impl Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync,
) -> Result<Run> {
    match which {
        Which::Yours => transpose_run(step_dims(Variant::Tiled, Some(tile_floats::<Yours>())), yours),
        Which::Solution => transpose_run(step_dims(step, Some(tile_floats::<Step>())), |ctx, i, o, r, c| unsafe {
            step.run(ctx, i, o, r, c)
        }),
    }
}

fn e5(which: Which) -> Result<Run> {
    copy_run(|ctx, s, d, len| match which {
        Which::Yours => unsafe { e5_vector::copy(ctx, s, d, len) },
        Which::Solution => unsafe { coalesce::kernels::copy::copy(ctx, s, d, len) },
    })
}

fn e6(which: Which) -> Result<Run> {
    transpose_run(step_dims(Variant::Padded, None), |ctx, i, o, r, c| match which {
        Which::Yours => unsafe { e6_barrier::transpose(ctx, i, o, r, c) },
        Which::Solution => unsafe { Variant::Padded.run(ctx, i, o, r, c) },
    })
}

fn e7(which: Which) -> Result<Run> {
    use coalesce::kernels::gemm::Variant as Gemm;
    gemm_run(
        |m, n| Gemm::Blocktile1d.launch_dims(m, n),
        |ctx, a, b, c, p| match which {
            Which::Yours => unsafe { e7_register_tile::gemm(ctx, a, b, c, p) },
            Which::Solution => unsafe { Gemm::Blocktile1d.run(ctx, a, b, c, p) },
        },
    )
}
