//! The exercises, in ladder order: the files a learner edits, and what each
//! is graded on. Each file's docs say what to do.

pub mod e1_coalesce_stores;
pub mod e2_shared_tile;
pub mod e3_padding;
pub mod e4_swizzle;
pub mod e5_vector;
pub mod e6_barrier;
pub mod e7_register_tile;
mod tile;

use crate::{Body, Exercise, Goal, Grade, Grader, Launch, Per, Submission, Target, Which};
use coalesce::Result;
use coalesce::emu::Op;
use coalesce::kernels::gemm::Variant as Gemm;
use coalesce::kernels::transpose::{Padded, Swizzled, TILE, TileLayout, Variant};

/// A coalesced `op` (a global load or store): a warp's request of 32 floats
/// touches the 4 sectors they fill, at most.
const fn coalesced(op: Op, hint: &'static str, answer: &'static str) -> Goal {
    Goal { target: Target::AtMost(op, 4.0), hint, answer }
}
/// A conflict-free `op` (a shared load or store): one wavefront per request.
const fn conflict_free(op: Op, hint: &'static str, answer: &'static str) -> Goal {
    Goal { target: Target::AtMost(op, 1.0), hint, answer }
}

/// The coalescing goal of a warp's global `$op`s (`$requests`, "loads"),
/// whose lanes `$verb` floats of an `$side` row: the hint and the answer
/// worded once for loads and stores.
macro_rules! coalesced_along {
    ($op:expr, $requests:literal, $verb:literal, $side:literal) => {
        coalesced(
            $op,
            concat!(
                "a warp's 32 ",
                $requests,
                " touch 32 sectors: where does lane t.x ",
                $verb,
                ", and where does lane t.x + 1?"
            ),
            concat!("let consecutive lanes (t.x) ", $verb, " consecutive floats of an ", $side, " row"),
        )
    };
}
/// The conflict-free goal of a shared `$op` whose lanes (`$lanes`,
/// "reading") take a tile `$part` ("column"): worded once for both sides.
macro_rules! free_along {
    ($op:expr, $lanes:literal, $part:literal) => {
        conflict_free(
            $op,
            concat!(
                "the lanes ",
                $lanes,
                " a tile ",
                $part,
                " wait for each other: which bank does each of the ",
                $part,
                "'s 32 words fall in?"
            ),
            concat!("make the 32 elements of a tile ", $part, " fall in 32 different banks"),
        )
    };
}
const STORES_COALESCED: Goal = coalesced_along!(Op::GlobalStore, "stores", "write", "output");
const LOADS_COALESCED: Goal = coalesced_along!(Op::GlobalLoad, "loads", "read", "input");
const SHARED_READS_FREE: Goal = free_along!(Op::SharedLoad, "reading", "column");
const SHARED_WRITES_FREE: Goal = free_along!(Op::SharedStore, "writing", "row");

/// Each input element read once, each output element written once: the
/// ideal traffic of a transpose or a copy.
const READ_ONCE: Goal = Goal {
    target: Target::Traffic(Op::GlobalLoad, Per::Element, 4.0),
    hint: "more bytes loaded than the input holds: does any element get read twice, by two threads or two \
           passes of a loop?",
    answer: "read each input element once: one thread, one pass",
};
const WRITE_ONCE: Goal = Goal {
    target: Target::Traffic(Op::GlobalStore, Per::Element, 4.0),
    hint: "the output's bytes stored more than once (or not all through a view): does each output element have \
           exactly one thread, one pass, that writes it?",
    answer: "write each output element once: its own thread, in one pass of the loop",
};
/// A tile staged once: each element written into shared memory once and
/// read back once.
const STAGE_ONCE: [Goal; 2] = [
    Goal {
        target: Target::Traffic(Op::SharedStore, Per::Element, 4.0),
        hint: "more shared-memory bytes written than the tiles hold: is any element staged twice?",
        answer: "store each element into the tile once",
    },
    Goal {
        target: Target::Traffic(Op::SharedLoad, Per::Element, 4.0),
        hint: "more shared-memory bytes read than the tiles hold: is any element read back twice?",
        answer: "read each element of the tile once",
    },
];
/// Every request a whole warp's: each thread does its share.
const FULL_WARPS: Goal = Goal {
    target: Target::FullWarps,
    hint: "requests with fewer than 32 lanes where every block is whole: do all 32 threads of each warp take \
           part, or does one thread do the work of many?",
    answer: "give every thread of the block its share of the elements, consecutive lanes on consecutive addresses",
};

/// The kernel file around exercises 3 and 4's layouts.
const TILE_KERNEL: &str = "learn/src/exercises/tile.rs";

/// The footprint of a `[32][33]` padded tile, which exercises 3 and 6 need.
const PADDED_FLOATS: u32 = TILE * (TILE + 1);

const fn shared_at_most(floats: u32, hint: &'static str, answer: &'static str) -> Goal {
    Goal { target: Target::SharedFloats(floats), hint, answer }
}

pub static ALL: &[Exercise] = &[
    Exercise {
        number: 1,
        title: "coalesce the naive transpose's stores",
        file: "learn/src/exercises/e1_coalesce_stores.rs",
        source: include_str!("e1_coalesce_stores.rs"),
        kernel: None,
        solution: "transpose step 2, naive_cols (kernels/src/transpose/02_naive_cols.rs)",
        goals: &[STORES_COALESCED, READ_ONCE, WRITE_ONCE, FULL_WARPS],
        launch: Launch::Transpose(Variant::NaiveCols),
        submit: e1,
    },
    Exercise {
        number: 2,
        title: "stage a tile through shared memory",
        file: "learn/src/exercises/e2_shared_tile.rs",
        source: include_str!("e2_shared_tile.rs"),
        kernel: None,
        solution: "transpose step 3, tiled (kernels/src/transpose/03_tiled.rs)",
        goals: &[
            LOADS_COALESCED,
            coalesced(
                Op::GlobalStore,
                "straight from global memory, one side of a transpose is strided whichever way the lanes walk: \
                 where could a block keep its tile between reading it and writing it?",
                "read the tile along input rows into shared memory, wait at a barrier, then write output rows \
                 from the tile's columns",
            ),
            READ_ONCE,
            WRITE_ONCE,
            STAGE_ONCE[0],
            STAGE_ONCE[1],
            FULL_WARPS,
        ],
        launch: Launch::Transpose(Variant::Tiled),
        submit: e2,
    },
    Exercise {
        number: 3,
        title: "remove the 32-way bank conflict by padding",
        file: "learn/src/exercises/e3_padding.rs",
        source: include_str!("e3_padding.rs"),
        kernel: Some(TILE_KERNEL),
        solution: "transpose step 4, padded (kernels/src/transpose/04_padded.rs)",
        goals: &[
            conflict_free(
                Op::SharedLoad,
                "a tile column's words are 32 apart: which bank is word w in, and what if a row were one word \
                 longer than it holds?",
                "give each row one float more than it holds (a [32][33] tile), so that a column steps 33 words, \
                 one bank to the next",
            ),
            SHARED_WRITES_FREE,
            shared_at_most(
                PADDED_FLOATS,
                "more shared memory than a padded tile takes: how many floats does one extra per row add?",
                "32 rows of 33 floats: 1056",
            ),
            READ_ONCE,
            WRITE_ONCE,
            FULL_WARPS,
        ],
        launch: Launch::Transpose(Variant::Padded),
        submit: e3,
    },
    Exercise {
        number: 4,
        title: "remove the bank conflict by a swizzle",
        file: "learn/src/exercises/e4_swizzle.rs",
        source: include_str!("e4_swizzle.rs"),
        kernel: Some(TILE_KERNEL),
        solution: "transpose step 5, swizzled (kernels/src/transpose/05_swizzled.rs)",
        goals: &[
            SHARED_READS_FREE,
            SHARED_WRITES_FREE,
            shared_at_most(
                TILE * TILE,
                "a swizzle moves elements within the tile's own 32x32 floats: which columns of a row can \
                 (row, col) go to?",
                "keep the tile's T * T floats (floats() as the trait gives it) and permute the columns within each row: col ^ row",
            ),
            READ_ONCE,
            WRITE_ONCE,
            FULL_WARPS,
        ],
        launch: Launch::Transpose(Variant::Swizzled),
        submit: e4,
    },
    Exercise {
        number: 5,
        title: "move 16 bytes per lane",
        file: "learn/src/exercises/e5_vector.rs",
        source: include_str!("e5_vector.rs"),
        kernel: None,
        solution: "the copy kernel (kernels/src/copy.rs)",
        goals: &[
            Goal {
                target: Target::BytesAtLeast(Op::GlobalLoad, 512.0),
                hint: "each lane loads 4 bytes a request: what type moves 16 bytes at once, and how do you view \
                       the buffer as those?",
                answer: "load an F4 (16 bytes) through a view of F4s over the buffer: \
                         ctx.global(src.cast::<F4>(), len / 4)",
            },
            Goal {
                target: Target::BytesAtLeast(Op::GlobalStore, 512.0),
                hint: "each lane stores 4 bytes a request: what type moves 16 bytes at once?",
                answer: "store an F4 through a view of F4s over the output: ctx.global_mut(dst.cast::<F4>(), len / 4)",
            },
            READ_ONCE,
            WRITE_ONCE,
            FULL_WARPS,
        ],
        launch: Launch::Copy,
        submit: e5,
    },
    Exercise {
        number: 6,
        title: "find the missing barrier",
        file: "learn/src/exercises/e6_barrier.rs",
        source: include_str!("e6_barrier.rs"),
        kernel: None,
        solution: "transpose step 4, padded (kernels/src/transpose/04_padded.rs)",
        goals: &[SHARED_READS_FREE, LOADS_COALESCED, STORES_COALESCED, READ_ONCE, WRITE_ONCE, FULL_WARPS],
        launch: Launch::Transpose(Variant::Padded),
        submit: e6,
    },
    Exercise {
        number: 7,
        title: "a register tile for GEMM",
        file: "learn/src/exercises/e7_register_tile.rs",
        source: include_str!("e7_register_tile.rs"),
        kernel: None,
        solution: "GEMM step 3, blocktile_1d (kernels/src/gemm/03_blocktile_1d.rs)",
        goals: &[
            Goal {
                // Per slice of 8 and per thread: 8 x (8 A + 1 B) shared loads
                // and 2 global ones (its share of the slices) for 64 FMAs.
                target: Target::LoadsPerFma(74.0 / 64.0),
                hint: "count the loads of one pass over r: which operand is the same for all 8 of the thread's \
                       outputs?",
                answer: "B[i][col] is the same for the thread's 8 outputs: load it once per i, into a register, \
                         before the loop over r",
            },
            Goal {
                // A block reads each 64x8 slice of A and 8x64 slice of B once:
                // 1024 floats for 64 x 64 x 8 FMAs.
                target: Target::Traffic(Op::GlobalLoad, Per::Fma, 4096.0 / 32768.0),
                hint: "more bytes read from global memory than the block's slices hold: which operand does the \
                       inner loop fetch from global memory instead of the tile?",
                answer: "read A and B only through the shared tiles, each slice loaded once per block",
            },
            Goal {
                target: Target::Traffic(Op::GlobalStore, Per::Element, 4.0),
                hint: "each element of C is written once, at the end: is any written twice?",
                answer: "store each of the thread's 8 outputs once, after the last slice",
            },
            shared_at_most(
                64 * 8 + 8 * 64,
                "more shared memory than the two slices take",
                "A's 64x8 slice and B's 8x64: 1024 floats",
            ),
            FULL_WARPS,
        ],
        launch: Launch::Gemm,
        submit: e7,
    },
];

/// Hands `grade` exercise `e`'s kernel: the learner's `body`, from the
/// exercise's file, or the ladder's step that its launch runs (the
/// reference, graded without the file checks). `floats`: the shared memory
/// each asks for, `[yours, the step's]`; `None`: what the launch gives.
fn submit(which: Which, grade: Grader<'_>, e: usize, body: Body<'_>, floats: Option<[usize; 2]>) -> Result<Grade> {
    let e = &ALL[e];
    let [yours, step] = floats.map_or([None; 2], |f| f.map(Some));
    match which {
        Which::Yours => grade(Submission { body, shared_floats: yours, file: Some(e.file), source: Some(e.source) }),
        Which::Solution => {
            // SAFETY (every step): the grader passes buffers of the
            // documented sizes, distinct, 256-byte aligned, and launches
            // each step with the grid and shared memory it documents.
            // Each body is a temporary of the call that grades it.
            let reference = |body| Submission { body, shared_floats: step, file: None, source: None };
            match e.launch {
                Launch::Transpose(v) => {
                    grade(reference(Body::Transpose(&move |ctx, i, o, r, c| unsafe { v.run(ctx, i, o, r, c) })))
                }
                Launch::Copy => grade(reference(Body::Copy(&|ctx, s, d, len| unsafe {
                    coalesce::kernels::copy::copy(ctx, s, d, len)
                }))),
                Launch::Gemm => {
                    grade(reference(Body::Gemm(&|ctx, a, b, c, p| unsafe { Gemm::Blocktile1d.run(ctx, a, b, c, p) })))
                }
            }
        }
    }
}

fn e1(which: Which, grade: Grader<'_>) -> Result<Grade> {
    submit(which, grade, 0, Body::Transpose(&|ctx, i, o, r, c| e1_coalesce_stores::transpose(ctx, i, o, r, c)), None)
}

fn e2(which: Which, grade: Grader<'_>) -> Result<Grade> {
    submit(which, grade, 1, Body::Transpose(&|ctx, i, o, r, c| e2_shared_tile::transpose(ctx, i, o, r, c)), None)
}

fn e3(which: Which, grade: Grader<'_>) -> Result<Grade> {
    let floats = [e3_padding::Layout::floats::<{ TILE as usize }>(), Padded::floats::<{ TILE as usize }>()];
    submit(which, grade, 2, Body::Transpose(&|ctx, i, o, r, c| e3_padding::transpose(ctx, i, o, r, c)), Some(floats))
}

fn e4(which: Which, grade: Grader<'_>) -> Result<Grade> {
    let floats = [e4_swizzle::Layout::floats::<{ TILE as usize }>(), Swizzled::floats::<{ TILE as usize }>()];
    submit(which, grade, 3, Body::Transpose(&|ctx, i, o, r, c| e4_swizzle::transpose(ctx, i, o, r, c)), Some(floats))
}

fn e5(which: Which, grade: Grader<'_>) -> Result<Grade> {
    submit(which, grade, 4, Body::Copy(&|ctx, s, d, len| e5_vector::copy(ctx, s, d, len)), None)
}

fn e6(which: Which, grade: Grader<'_>) -> Result<Grade> {
    submit(which, grade, 5, Body::Transpose(&|ctx, i, o, r, c| e6_barrier::transpose(ctx, i, o, r, c)), None)
}

fn e7(which: Which, grade: Grader<'_>) -> Result<Grade> {
    submit(which, grade, 6, Body::Gemm(&|ctx, a, b, c, p| e7_register_tile::gemm(ctx, a, b, c, p)), None)
}
