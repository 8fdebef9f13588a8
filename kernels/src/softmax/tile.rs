//! The register tile of the softmax kernels: which float4 groups of a row a
//! thread holds (`Span`), the floats themselves (`Part`), the thread's share of
//! the two reductions over them, and their loads and stores.

use super::maths::exp_minus;
use crate::mem::{Load, Store};
use crate::vector::F4;

/// Whether a row can move as 16-byte vectors: both buffers 16-byte aligned
/// and `cols % 4 == 0`, so every row starts aligned on both sides.
#[inline(always)]
pub(crate) fn vector_rows(input: *const f32, output: *mut f32, cols: usize) -> bool {
    (input as usize | output as usize).is_multiple_of(16) && cols.is_multiple_of(4)
}

/// `$body` with the constant `$VEC` true where the rows move as 16-byte
/// vectors ([`vector_rows`]), false otherwise: each kernel is two
/// instantiations of straight-line code, and the launch picks one.
macro_rules! by_alignment {
    ($input:expr, $output:expr, $cols:expr, |$VEC:ident| $body:expr) => {
        if vector_rows($input, $output, $cols as usize) {
            const $VEC: bool = true;
            $body
        } else {
            const $VEC: bool = false;
            $body
        }
    };
}
pub(crate) use by_alignment;

// Every kernel gives each thread `N` floats as `N / 4` *slots*: slot `k` is
// the group of four floats `4g .. 4g + 4` of the row, `g = first + stride * k`
// (consecutive threads take consecutive groups, so a warp covers 512
// contiguous bytes per slot). A slot is wholly inside the row or wholly out.
// When `cols % 4 != 0` the last 1-3 floats form no whole group; the thread
// whose next slot would start there holds them in a separate `tail`. The
// vector path moves a slot with one 16-byte access; the scalar path
// (unaligned buffers or `cols % 4 != 0`) with four 4-byte ones at the same
// addresses.
//
// Slots are checked against the row's end whole, not float by float: a
// check per float makes ptxas keep one predicate per float alive from the
// loads to the stores, each `P2R`-saved in a register of its own, which at
// 32 floats per thread passes the 64 registers a 1024-thread block may use
// (`docs/softmax.md` lists each kernel's registers).

/// Which of a thread's slots lie inside the row, and how much tail it holds.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    /// Slots `0 .. slots` are inside the row (whole groups).
    slots: usize,
    /// Floats of the partial last group this thread holds (0-3): floats
    /// `4 * (first + stride * slots) ..` of the row.
    tail: usize,
}

impl Span {
    /// A thread's span of a row of `cols` floats, for slots
    /// `first + stride * k`, `k < max_slots`.
    #[inline(always)]
    pub(crate) fn of(cols: usize, first: usize, stride: usize, max_slots: usize) -> Span {
        let groups = cols / 4;
        if groups < first {
            return Span { slots: 0, tail: 0 };
        }
        let (q, r) = ((groups - first) / stride, (groups - first) % stride);
        let slots = q + (r != 0) as usize;
        let owns_tail = r == 0 && q < max_slots;
        Span { slots: if slots < max_slots { slots } else { max_slots }, tail: if owns_tail { cols % 4 } else { 0 } }
    }

    /// Every slot inside the row, no tail (a full chunk of [`online`]).
    #[inline(always)]
    pub(crate) const fn full(max_slots: usize) -> Span {
        Span { slots: max_slots, tail: 0 }
    }
}

/// A thread's part of a row: `N` floats in slots and, on the scalar path
/// (`VEC = false`), up to 3 tail floats; the vector path has no tail and
/// skips it entirely. Floats outside the row hold `-inf` (`exp` gives 0).
#[derive(Clone, Copy)]
pub(crate) struct Part<const N: usize, const VEC: bool> {
    v: [f32; N],
    tail: [f32; 3],
}

impl<const N: usize, const VEC: bool> Default for Part<N, VEC> {
    /// Holds nothing: every float `-inf`.
    #[inline(always)]
    fn default() -> Self {
        Part { v: [f32::NEG_INFINITY; N], tail: [f32::NEG_INFINITY; 3] }
    }
}

impl<const N: usize, const VEC: bool> Part<N, VEC> {
    /// Maximum of the part (`-inf` if it holds nothing).
    #[inline(always)]
    pub(crate) fn max(&self) -> f32 {
        let mut m = f32::NEG_INFINITY;
        unroll!(j < N, {
            m = m.max(self.v[j]);
        });
        if !VEC {
            unroll!(j < 3, {
                m = m.max(self.tail[j]);
            });
        }
        m
    }

    /// `sum exp(x - base)` over the part.
    #[inline(always)]
    pub(crate) fn sum_exp(&self, base: f32) -> f32 {
        let mut s = 0.0f32;
        unroll!(j < N, {
            s += exp_minus(self.v[j], base);
        });
        if !VEC {
            unroll!(j < 3, {
                s += exp_minus(self.tail[j], base);
            });
        }
        s
    }

    /// Replaces every `x` by `exp(x - base)` and returns their sum.
    #[inline(always)]
    pub(crate) fn exp_in_place(&mut self, base: f32) -> f32 {
        let mut s = 0.0f32;
        unroll!(j < N, {
            self.v[j] = exp_minus(self.v[j], base);
            s += self.v[j];
        });
        if !VEC {
            unroll!(j < 3, {
                self.tail[j] = exp_minus(self.tail[j], base);
                s += self.tail[j];
            });
        }
        s
    }

    /// Multiplies every float by `f`.
    #[inline(always)]
    pub(crate) fn scale(&mut self, f: f32) {
        unroll!(j < N, {
            self.v[j] *= f;
        });
        if !VEC {
            unroll!(j < 3, {
                self.tail[j] *= f;
            });
        }
    }

    /// Loads the part of the row `x` (in global or shared memory) given by
    /// `first`, `stride`, `span`.
    ///
    /// # Safety
    /// `span` is [`Span::of`] (or [`Span::full`] for slots known inside) for
    /// this row, `first` and `stride`; with `VEC`, `x` is 16-byte aligned and
    /// the row has no tail.
    #[inline(always)]
    pub(crate) unsafe fn load(x: impl Load<f32>, first: usize, stride: usize, span: Span) -> Self {
        let mut p = Part::default();
        unroll!(k < N / 4, {
            if k < span.slots {
                let g = first + stride * k;
                if VEC {
                    // SAFETY: group g is inside the row, 16g bytes past an aligned start.
                    let F4([a, b, c, d]) = unsafe { x.load_as::<F4>(4 * g) };
                    (p.v[4 * k], p.v[4 * k + 1], p.v[4 * k + 2], p.v[4 * k + 3]) = (a, b, c, d);
                } else {
                    unroll!(q < 4, {
                        // SAFETY: group g is inside the row.
                        p.v[4 * k + q] = unsafe { x.load(4 * g + q) };
                    });
                }
            }
        });
        if !VEC {
            let at = 4 * (first + stride * span.slots);
            unroll!(q < 3, {
                if q < span.tail {
                    // SAFETY: the tail floats are the row's last cols % 4.
                    p.tail[q] = unsafe { x.load(at + q) };
                }
            });
        }
        p
    }

    /// Stores the part to the row `y` (in global or shared memory), with the
    /// mapping it was loaded with.
    ///
    /// # Safety
    /// As [`Part::load`], for `y`.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, y: impl Store<f32>, first: usize, stride: usize, span: Span) {
        unroll!(k < N / 4, {
            if k < span.slots {
                let g = first + stride * k;
                if VEC {
                    // Built from its lanes so LLVM emits one v4 store, not a memcpy.
                    let q = F4([self.v[4 * k], self.v[4 * k + 1], self.v[4 * k + 2], self.v[4 * k + 3]]);
                    // SAFETY: as for the load.
                    unsafe { y.store_as::<F4>(4 * g, q) };
                } else {
                    unroll!(q < 4, {
                        // SAFETY: as for the load.
                        unsafe { y.store(4 * g + q, self.v[4 * k + q]) };
                    });
                }
            }
        });
        if !VEC {
            let at = 4 * (first + stride * span.slots);
            unroll!(q < 3, {
                if q < span.tail {
                    // SAFETY: as for the load.
                    unsafe { y.store(at + q, self.tail[q]) };
                }
            });
        }
    }
}
