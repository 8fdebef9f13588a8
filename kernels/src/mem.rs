//! Typed views of global and shared memory, made by the thread context.
//!
//! A kernel body turns each pointer it is given into a view with its length
//! (`ctx.global(input, rows * cols)`), and the block's dynamic shared memory
//! into another (`ctx.shared::<f32>(floats)`), then reads and writes through
//! them:
//!
//! ```text
//! let (input, output) = (ctx.global(input, n), ctx.global_mut(output, n));
//! // SAFETY: row < rows and col < cols, so both indices are in bounds.
//! unsafe { output.store(col * rows + row, input.load(row * cols + col)) };
//! ```
//!
//! - On the GPU a view is its pointer: `load(i)` is `*ptr.add(i)`, one `ld`,
//!   and `store` one `st`, the same instructions (and the same PTX, which
//!   `ptx/ENTRIES.sha256` pins per kernel) as the raw pointer code. The
//!   length is never read there, so no bounds check survives.
//! - On the CPU emulator every access goes to [`crate::emu`], which knows the
//!   thread, the view's length and, through `#[track_caller]`, the source line
//!   of the `load` or `store`: it checks bounds, alignment, shared-memory
//!   races and reads of unwritten shared memory, and counts 32-byte sectors
//!   and shared-memory wavefronts per warp-level request.
//!
//! Accesses are `unsafe`: on the GPU an index past the length is undefined
//! behaviour, exactly as with the pointer it replaces (the emulator reports
//! it instead, reads `U::default()` and drops the write). Making a view is
//! safe; it reads nothing.
//!
//! Converting pointer code to views leaves the PTX alone (each kernel's
//! fingerprint in `ptx/ENTRIES.sha256` proves it) when two things are kept:
//!
//! - no length arithmetic in the kernel: pass the factors, `(rows, cols)`,
//!   and let [`Extent`] multiply them where the length is read (the
//!   emulator), not `rows as usize * cols as usize`;
//! - the raw code's order of evaluation: `*dst.add(a) = *src.add(b)`
//!   computes `b` and loads before it computes `a`, while
//!   `dst.store(a, src.load(b))` computes `a` first. LLVM keeps that order
//!   and numbers registers by it; where it shows (step 5's XOR-swizzled
//!   index), load into a local first: `let v = src.load(b); dst.store(a, v)`.
//!
//! `load_as::<U>(i)` and `store_as::<U>(i, v)` move a `U` that starts at
//! element `i` (four floats as one 16-byte [`crate::vector::F4`], say) with
//! the address arithmetic of the element type, as `ptr.add(i).cast::<U>()`
//! does; `U` must be aligned there.
//!
//! Code that reads or writes global and shared memory alike is generic over
//! [`Load`] and [`Store`], which the views implement.
//!
//! On the host, a context that checks every access against the memory that
//! exists ([`Checked`], the emulator's) gives the views safe twins of those
//! methods, for code that is graded rather than trusted: `get`, `get_as`,
//! `set`, `set_as` and `part` (`checked.rs`).

use crate::ThreadCtx;

#[cfg(not(target_arch = "nvptx64"))]
mod checked;
mod load_store;
#[cfg(not(target_arch = "nvptx64"))]
pub use checked::{Checked, Plain};
pub use load_store::{Load, Store};

/// Which memory a view is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Global memory: the buffers a kernel is given.
    Global,
    /// The block's shared memory.
    Shared,
}

/// How many elements a view has: a count (`usize`, `u32`, `u64`) or a
/// matrix's `(rows, cols)`.
///
/// Only the emulator computes it: the GPU never reads a view's length, and
/// a length computed in the kernel (`rows as usize * cols as usize`) would
/// still move the kernel's own arithmetic around (LLVM merges its widening of
/// `rows` with the kernel's and places it first, which renumbers registers
/// and changes the PTX). Passing the factors defers the product to where
/// it is used.
pub trait Extent: Copy {
    /// The number of elements.
    fn elements(self) -> usize;
}

impl Extent for usize {
    #[inline(always)]
    fn elements(self) -> usize {
        self
    }
}

impl Extent for u32 {
    #[inline(always)]
    fn elements(self) -> usize {
        self as usize
    }
}

impl Extent for u64 {
    #[inline(always)]
    fn elements(self) -> usize {
        usize::try_from(self).unwrap_or(usize::MAX)
    }
}

/// `(rows, cols)`: `rows * cols` elements.
impl Extent for (u32, u32) {
    #[inline(always)]
    fn elements(self) -> usize {
        usize::try_from(self.0 as u64 * self.1 as u64).unwrap_or(usize::MAX)
    }
}

/// `count` elements `stride` apart (a matrix column, say): the view spans
/// the first to the last, `(count - 1) * stride + 1` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub count: u32,
    pub stride: u64,
}

impl Extent for Strided {
    #[inline(always)]
    fn elements(self) -> usize {
        match self.count {
            0 => 0,
            n => usize::try_from((n as u64 - 1).saturating_mul(self.stride).saturating_add(1)).unwrap_or(usize::MAX),
        }
    }
}

/// The length a view keeps: the extent's on the emulator, nothing computed
/// on the GPU (which never reads it).
#[inline(always)]
fn length(extent: impl Extent) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = extent;
        0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        extent.elements()
    }
}

/// `len` elements of global memory that a kernel reads.
pub struct Global<'c, C: ?Sized, T> {
    ctx: &'c C,
    ptr: *const T,
    len: usize,
}

/// `len` elements of global memory that a kernel reads and writes.
pub struct GlobalMut<'c, C: ?Sized, T> {
    ctx: &'c C,
    ptr: *mut T,
    len: usize,
}

/// `len` elements of the block's shared memory, which every thread of the
/// block reads and writes (between barriers: [`ThreadCtx::sync_threads`]).
pub struct Shared<'c, C: ?Sized, T> {
    ctx: &'c C,
    ptr: *mut T,
    len: usize,
}

// Views are pointers: copied freely, whatever `C` and `T` are.
impl<C: ?Sized, T> Clone for Global<'_, C, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: ?Sized, T> Copy for Global<'_, C, T> {}
impl<C: ?Sized, T> Clone for GlobalMut<'_, C, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: ?Sized, T> Copy for GlobalMut<'_, C, T> {}
impl<C: ?Sized, T> Clone for Shared<'_, C, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: ?Sized, T> Copy for Shared<'_, C, T> {}

/// The methods every view has: `len`, `load` and `load_as`.
macro_rules! readable {
    ($View:ident, $space:expr) => {
        impl<C: ThreadCtx, T: Copy + Default> $View<'_, C, T> {
            /// Elements in the view (on the emulator; 0 on the GPU, which
            /// does not keep it).
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.len
            }

            /// The pointer the view was made from (to test its alignment, say).
            #[inline(always)]
            pub fn as_ptr(&self) -> *const T {
                self.ptr
            }

            /// Whether the view has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Element `i`: one load.
            ///
            /// # Safety
            /// `i < len`, and the memory was valid for the view's `len`
            /// elements when it was made (on the GPU nothing checks either).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn load(&self, i: usize) -> T {
                // SAFETY: forwarded from the caller.
                unsafe { self.ctx.mem_load::<T, T>($space, self.ptr, self.len, i) }
            }

            /// The `U` that starts at element `i`, as one load of
            /// `size_of::<U>()` bytes (`load_as::<F4>(i)`: elements `i..i+4`).
            ///
            /// # Safety
            /// As [`Self::load`], for every element the `U` covers, and the
            /// address aligned for `U`.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn load_as<U: Copy + Default>(&self, i: usize) -> U {
                // SAFETY: forwarded from the caller.
                unsafe { self.ctx.mem_load::<T, U>($space, self.ptr, self.len, i) }
            }
        }
    };
}

/// `store` and `store_as`, for the views that may write.
macro_rules! writable {
    ($View:ident, $space:expr) => {
        impl<C: ThreadCtx, T: Copy + Default> $View<'_, C, T> {
            /// Writes element `i`: one store.
            ///
            /// # Safety
            /// As [`Self::load`].
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn store(&self, i: usize, value: T) {
                // SAFETY: forwarded from the caller.
                unsafe { self.ctx.mem_store::<T, T>($space, self.ptr, self.len, i, value) }
            }

            /// Writes the `U` that starts at element `i`, as one store of
            /// `size_of::<U>()` bytes.
            ///
            /// # Safety
            /// As [`Self::load_as`].
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn store_as<U: Copy + Default>(&self, i: usize, value: U) {
                // SAFETY: forwarded from the caller.
                unsafe { self.ctx.mem_store::<T, U>($space, self.ptr, self.len, i, value) }
            }
        }
    };
}

impl<'c, C: ?Sized, T> Global<'c, C, T> {
    /// The view of `len` elements at `ptr`, seen from `ctx`
    /// ([`ThreadCtx::global`] makes it).
    #[inline(always)]
    pub fn new(ctx: &'c C, ptr: *const T, len: impl Extent) -> Self {
        Global { ctx, ptr, len: length(len) }
    }
}

impl<'c, C: ?Sized, T> GlobalMut<'c, C, T> {
    /// The view of `len` elements at `ptr`, seen from `ctx`
    /// ([`ThreadCtx::global_mut`] makes it).
    #[inline(always)]
    pub fn new(ctx: &'c C, ptr: *mut T, len: impl Extent) -> Self {
        GlobalMut { ctx, ptr, len: length(len) }
    }
}

impl<C: ThreadCtx> GlobalMut<'_, C, u32> {
    /// Sets element `i` to 1, where other threads may set it at the same
    /// time ([`ThreadCtx::mem_raise_flag`]).
    ///
    /// # Safety
    /// As [`Self::store`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn raise_flag(&self, i: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.ctx.mem_raise_flag(self.ptr, self.len, i) }
    }

    /// Raises element `i` to `value` where it is less, where other threads
    /// may raise it at the same time ([`ThreadCtx::mem_raise_to`]).
    ///
    /// # Safety
    /// As [`Self::store`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn raise_to(&self, i: usize, value: u32) {
        // SAFETY: forwarded from the caller.
        unsafe { self.ctx.mem_raise_to(self.ptr, self.len, i, value) }
    }
}

impl<'c, C: ?Sized, T> Shared<'c, C, T> {
    /// The view of `len` elements of shared memory at `ptr` (inside the
    /// block's dynamic shared memory), seen from `ctx`
    /// ([`ThreadCtx::shared`] makes it, at the start).
    #[inline(always)]
    pub fn new(ctx: &'c C, ptr: *mut T, len: impl Extent) -> Self {
        Shared { ctx, ptr, len: length(len) }
    }
}

/// Sub-views and casts, which every view has.
macro_rules! reshape {
    ($View:ident, $Ptr:ty) => {
        impl<'c, C: ?Sized, T> $View<'c, C, T> {
            /// The `len` elements from element `start` on, as a view of their
            /// own (a tile of shared memory after another, a row of a matrix).
            /// On the emulator it never reaches past this view's end: an
            /// access beyond is out of bounds of both.
            ///
            /// # Safety
            /// `start` is inside the memory the view was made from, as for
            /// `ptr.add(start)`.
            #[inline(always)]
            pub unsafe fn at(self, start: usize, len: impl Extent) -> Self {
                // SAFETY: forwarded from the caller.
                let ptr = unsafe { self.ptr.add(start) };
                $View { ctx: self.ctx, ptr, len: sub_length(self.len, start, len) }
            }

            /// The same memory as `len` elements of `U` (a block's shared
            /// memory, aligned as `F4`, used as floats).
            #[inline(always)]
            pub fn cast<U>(self, len: impl Extent) -> $View<'c, C, U> {
                $View { ctx: self.ctx, ptr: self.ptr.cast::<U>() as $Ptr, len: length(len) }
            }
        }
    };
}

/// The length of the sub-view `start..start + len` of a view of `parent`
/// elements: clamped to the parent's end on the emulator, nothing on the GPU.
#[inline(always)]
fn sub_length(parent: usize, start: usize, len: impl Extent) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (parent, start, len);
        0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        len.elements().min(parent.saturating_sub(start))
    }
}

reshape!(Global, *const U);
reshape!(GlobalMut, *mut U);
reshape!(Shared, *mut U);

impl<C: ThreadCtx> Shared<'_, C, f32> {
    /// Starts copying the 4 floats at element `j` of `src` to elements
    /// `i..i + 4` of this view without holding them in registers
    /// ([`ThreadCtx::copy_async_16`], `cp.async.cg`); this thread reads them
    /// after [`ThreadCtx::wait_async_copies`], other threads after a barrier
    /// besides. On the emulator the copy is checked as a 16-byte global
    /// load and shared store, and counted as the two sides of a `cp.async`
    /// at the caller's line.
    ///
    /// # Safety
    /// As [`Self::store_as`] and [`Global::load_as`] for a 16-byte `F4`:
    /// both addresses 16-byte aligned, both ranges inside their views.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async_16(&self, i: usize, src: &impl Load<f32>, j: usize) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: forwarded from the caller.
        unsafe {
            self.ctx.copy_async_16(self.ptr.add(i), src.as_ptr().add(j))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: forwarded from the caller.
        unsafe {
            self.ctx.mem_copy_async::<f32, crate::vector::F4>((self.ptr, self.len, i), (src.as_ptr(), src.len(), j))
        }
    }
    /// Starts a bulk copy of the `count` floats at element `j` of `src` to
    /// elements `i..i + count` of this view ([`ThreadCtx::mem_bulk_load`]):
    /// one instruction for the whole run, which lands while the thread goes
    /// on, and counts its bytes on the mbarrier at `bar`. On the emulator
    /// both sides are checked, and not counted: the copy engine's traffic is
    /// not the load/store unit's requests, which the counters (and `ncu`'s)
    /// are.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_bulk_load`]: `4 count` a multiple of 16, both
    /// starts 16-byte aligned, both runs inside their views.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn bulk_load(&self, i: usize, src: &impl Load<f32>, j: usize, count: usize, bar: u32) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let dst = self.ctx.shared_addr(self.ptr.add(i));
            self.ctx.mem_bulk_load(dst, (src.as_ptr(), src.len(), j), 4 * count as u32, bar)
        }
    }
    /// Starts a bulk copy of elements `i..i + count` of this view to the
    /// `count` floats at element `j` of `dst` ([`ThreadCtx::mem_bulk_store`]),
    /// in the bulk group the next [`ThreadCtx::bulk_commit`] closes.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_bulk_store`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn bulk_store(&self, i: usize, dst: &impl Store<f32>, j: usize, count: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let src = self.ctx.shared_addr(self.ptr.add(i));
            self.ctx.mem_bulk_store((dst.as_ptr().cast_mut(), dst.len(), j), src, 4 * count as u32)
        }
    }
}

impl<C: ThreadCtx, T> Shared<'_, C, T> {
    /// Writes four floats at element `i` (which must be 16-byte aligned) as
    /// one 16-byte store: on the GPU four scalar stores that LLVM merges
    /// into one `st.shared.v4.f32`, told the alignment (a whole-`F4`
    /// assignment is an aggregate copy that LLVM lowers as two 8-byte
    /// integer moves, through local memory when the floats came from an
    /// array); on the emulator one checked 16-byte access, as the GPU makes it.
    ///
    /// # Safety
    /// As [`Self::store_as`] for a 16-byte `F4` at element `i`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_f32x4(&self, i: usize, v: [f32; 4]) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: forwarded from the caller, who guarantees the alignment.
        unsafe {
            let dst = self.ptr.add(i).cast::<f32>();
            core::hint::assert_unchecked((dst as usize).is_multiple_of(16));
            *dst = v[0];
            *dst.add(1) = v[1];
            *dst.add(2) = v[2];
            *dst.add(3) = v[3];
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: forwarded from the caller.
        unsafe {
            self.ctx.mem_store::<T, crate::vector::F4>(Space::Shared, self.ptr, self.len, i, crate::vector::F4(v))
        }
    }
}

readable!(Global, Space::Global);
readable!(GlobalMut, Space::Global);
readable!(Shared, Space::Shared);
writable!(GlobalMut, Space::Global);
writable!(Shared, Space::Shared);
