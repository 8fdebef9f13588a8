//! [`Load`] and [`Store`]: one bound for code that reads or writes a view
//! whichever memory it is of.
//!
//! A helper that reads a row from global or shared memory alike takes
//! `impl Load<T>`, one that writes either takes `impl Store<T>`. Each
//! method forwards to the view's own, inlined, so a kernel that goes
//! through the traits makes the same instructions as one that calls the
//! view directly.

use super::{Global, GlobalMut, Shared};
use crate::ThreadCtx;

/// A view to read from, whichever memory it is of: code that reads a row
/// from global or shared memory alike takes `impl Load<T>`.
pub trait Load<T>: Copy {
    /// The first element's address.
    fn as_ptr(&self) -> *const T;
    /// Elements in the view (on the emulator; 0 on the GPU).
    fn len(&self) -> usize;
    /// Whether the view has no elements (on the emulator).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` (see [`Global::load`]).
    ///
    /// # Safety
    /// As [`Global::load`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load(&self, i: usize) -> T;
    /// The `U` at element `i` (see [`Global::load_as`]).
    ///
    /// # Safety
    /// As [`Global::load_as`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_as<U: Copy + Default>(&self, i: usize) -> U;
}

/// A view to write to, global or shared.
pub trait Store<T>: Load<T> {
    /// Writes element `i` (see [`GlobalMut::store`]).
    ///
    /// # Safety
    /// As [`GlobalMut::store`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store(&self, i: usize, value: T);
    /// Writes the `U` at element `i` (see [`GlobalMut::store_as`]).
    ///
    /// # Safety
    /// As [`GlobalMut::store_as`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store_as<U: Copy + Default>(&self, i: usize, value: U);
}

macro_rules! load_trait {
    ($View:ident) => {
        impl<C: ThreadCtx, T: Copy + Default> Load<T> for $View<'_, C, T> {
            #[inline(always)]
            fn as_ptr(&self) -> *const T {
                $View::as_ptr(self)
            }
            #[inline(always)]
            fn len(&self) -> usize {
                $View::len(self)
            }
            #[inline(always)]
            unsafe fn load(&self, i: usize) -> T {
                // SAFETY: forwarded from the caller.
                unsafe { $View::load(self, i) }
            }
            #[inline(always)]
            unsafe fn load_as<U: Copy + Default>(&self, i: usize) -> U {
                // SAFETY: forwarded from the caller.
                unsafe { $View::load_as::<U>(self, i) }
            }
        }
    };
}

macro_rules! store_trait {
    ($View:ident) => {
        impl<C: ThreadCtx, T: Copy + Default> Store<T> for $View<'_, C, T> {
            #[inline(always)]
            unsafe fn store(&self, i: usize, value: T) {
                // SAFETY: forwarded from the caller.
                unsafe { $View::store(self, i, value) }
            }
            #[inline(always)]
            unsafe fn store_as<U: Copy + Default>(&self, i: usize, value: U) {
                // SAFETY: forwarded from the caller.
                unsafe { $View::store_as::<U>(self, i, value) }
            }
        }
    };
}

load_trait!(Global);
load_trait!(GlobalMut);
load_trait!(Shared);
store_trait!(GlobalMut);
store_trait!(Shared);
