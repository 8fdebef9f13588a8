//! Safe accesses, for code that is graded rather than trusted: a context
//! that checks every access against the view and against the memory that
//! really exists ([`Checked`], the emulator's) gives the views safe twins
//! of their `unsafe` methods: `get`, `get_as`, `set`, `set_as` and `part`.
//!
//! ```text
//! fn copy<C: Checked>(ctx: &C, src: *const f32, dst: *mut f32, len: usize) {
//!     let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
//!     let i = ctx.block_idx().x as usize * ctx.block_dim().x as usize + ctx.thread_idx().x as usize;
//!     dst.set(i, src.get(i)); // no `unsafe`: past the end, refused and reported
//! }
//! ```
//!
//! An access the checks refuse touches no memory: a load gives
//! `U::default()`, a store is dropped, and the emulator reports why (out of
//! bounds, outside the launch's buffers, past its shared memory). The
//! values moved are [`Plain`]: any bytes read are a valid value of them.
//!
//! Host only: the GPU's context checks nothing and does not implement
//! [`Checked`], and nothing here is compiled for it.

use super::{Extent, Global, GlobalMut, Shared, Space, sub_length};
use crate::ThreadCtx;
use crate::vector::{F2, F4};

/// A type of which every bit pattern of its size is a valid value, with no
/// padding bytes: what a safe access may read from memory that holds
/// anything (another type's bits, the emulator's shared-memory poison),
/// and write where anything may read it.
///
/// # Safety
/// Every `size_of::<Self>()` bytes are a valid `Self`, and a `Self` has no
/// padding (every byte of a value is initialised).
pub unsafe trait Plain: Copy + Default {}

macro_rules! plain {
    ($($t:ty),*) => {
        $(
            // SAFETY: a primitive number: any bits are a value, no padding.
            unsafe impl Plain for $t {}
        )*
    };
}
plain!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: `[f32; 2]` with the alignment of its size (8): no padding.
unsafe impl Plain for F2 {}
// SAFETY: `[f32; 4]` with the alignment of its size (16): no padding.
unsafe impl Plain for F4 {}
// SAFETY: an array has no padding between its elements, each `Plain`.
unsafe impl<T: Plain, const N: usize> Plain for [T; N] where [T; N]: Default {}

/// A thread context whose views have safe accesses: every one is checked
/// before it happens, and one that the checks refuse touches no memory.
///
/// # Safety
/// An implementation makes every access through these methods only if the
/// whole `U` lies inside the view (elements `i..` of the `len` at `base`)
/// and inside memory that really exists and may be read (and, for a store,
/// written) for as long as the kernel runs: the block's shared memory for
/// [`Space::Shared`], a buffer the launch holds for [`Space::Global`]. An
/// access that fails either check touches no memory (a load returns
/// `U::default()`, a store does nothing). `base` itself is any pointer,
/// dangling or null included: nothing about it is trusted.
pub unsafe trait Checked: ThreadCtx {
    /// The `U` at element `i` of the `len` elements of `T` at `base`, in
    /// `space`, or `U::default()` where the checks refuse it.
    #[track_caller]
    fn checked_load<T, U: Plain>(&self, space: Space, base: *const T, len: usize, i: usize) -> U;
    /// Writes the `U` at element `i` of the `len` elements of `T` at
    /// `base`, in `space`, unless the checks refuse it.
    #[track_caller]
    fn checked_store<T, U: Plain>(&self, space: Space, base: *mut T, len: usize, i: usize, value: U);
}

/// `get`, `get_as` and `part`, which every view of a [`Checked`] context has.
macro_rules! safe_readable {
    ($View:ident, $space:expr) => {
        impl<C: Checked, T: Plain> $View<'_, C, T> {
            /// Element `i`, checked ([`Checked`]): `T::default()` where the
            /// checks refuse it, which the emulator reports.
            #[track_caller]
            pub fn get(&self, i: usize) -> T {
                self.ctx.checked_load::<T, T>($space, self.ptr, self.len, i)
            }

            /// The `U` that starts at element `i` (`get_as::<F4>(i)`:
            /// elements `i..i+4`), checked, as [`Self::get`].
            #[track_caller]
            pub fn get_as<U: Plain>(&self, i: usize) -> U {
                self.ctx.checked_load::<T, U>($space, self.ptr, self.len, i)
            }
        }

        impl<C: Checked, T> $View<'_, C, T> {
            /// The `len` elements from element `start` on, as a view of their
            /// own: the safe twin of `at`, its length clamped to this view's
            /// end (empty past it), its pointer computed without a promise
            /// that it stays inside anything (the checks of every access
            /// see to that).
            #[track_caller]
            pub fn part(self, start: usize, len: impl Extent) -> Self {
                $View { ctx: self.ctx, ptr: self.ptr.wrapping_add(start), len: sub_length(self.len, start, len) }
            }
        }
    };
}

/// `set` and `set_as`, for the views that may write.
macro_rules! safe_writable {
    ($View:ident, $space:expr) => {
        impl<C: Checked, T: Plain> $View<'_, C, T> {
            /// Writes element `i`, checked ([`Checked`]): dropped where the
            /// checks refuse it, which the emulator reports.
            #[track_caller]
            pub fn set(&self, i: usize, value: T) {
                self.ctx.checked_store::<T, T>($space, self.ptr, self.len, i, value)
            }

            /// Writes the `U` that starts at element `i`, checked, as
            /// [`Self::set`].
            #[track_caller]
            pub fn set_as<U: Plain>(&self, i: usize, value: U) {
                self.ctx.checked_store::<T, U>($space, self.ptr, self.len, i, value)
            }
        }
    };
}

safe_readable!(Global, Space::Global);
safe_readable!(GlobalMut, Space::Global);
safe_readable!(Shared, Space::Shared);
safe_writable!(GlobalMut, Space::Global);
safe_writable!(Shared, Space::Shared);
