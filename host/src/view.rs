//! Strided matrix views: [`MatrixView::t`] is O(1), [`MatrixView::contiguous`]
//! is where the transpose happens.
//!
//! PyTorch describes a tensor as a buffer plus a shape and *strides*: how
//! many elements to step in memory for one step along each dimension. A
//! row-major `rows x cols` matrix has strides `(cols, 1)`. Its transpose is
//! the same buffer read with shape and strides swapped, `cols x rows` with
//! strides `(1, cols)`, so `x.t()` moves no data and costs the same at any
//! size. The bill comes later: the transposed view is not row-major
//! (`x.t().is_contiguous()` is false), and whatever needs row-major data
//! calls `.contiguous()`, which is the real transpose: the memory traffic of
//! a copy (every element read once and written once) with the access
//! pattern of a transpose, the problem the kernels of [`crate::transpose`]
//! solve.
//!
//! [`MatrixView`] is that idea for one f32 matrix in device memory, kept to
//! the two layouts those kernels can materialise: row-major, and its
//! transpose (column-major).
//!
//! | view of a row-major 1000x3000 buffer | shape | strides | `.contiguous()` |
//! | --- | --- | --- | --- |
//! | `MatrixView::new(&buf, shape)?` | 1000x3000 | `(3000, 1)` | borrows `buf`: no GPU work |
//! | `.t()` | 3000x1000 | `(1, 3000)` | the transpose kernel, into a new buffer |
//! | `.t().t()` | 1000x3000 | `(3000, 1)` | borrows `buf` again |
//!
//! As in PyTorch, a matrix with one row or one column is contiguous either
//! way (the stride of a dimension of size 1 is never used), and so is an
//! empty one (0 rows or 0 columns: no stride is ever used), so their
//! transposes materialise without a kernel.
//!
//! The layout arithmetic is [`StridedLayout`], which needs no GPU; [`emu`]
//! materialises a view of a host slice on the CPU emulator, by the same
//! decisions and the same kernel body as the GPU path.
//!
// GPU examples compile only with the `cuda` feature (`coalesce::init`).
#![cfg_attr(feature = "cuda", doc = "```no_run")]
#![cfg_attr(not(feature = "cuda"), doc = "```ignore")]
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.stream()?;
//! let shape = MatrixShape::new(1000, 3000)?;
//! let data = gpu.upload(&vec![1.0f32; shape.len()])?;
//! let a = MatrixView::new(&data, shape)?; // 1000x3000, strides (3000, 1)
//! let at = a.t(); // 3000x1000, strides (1, 3000): no GPU work
//! assert!(!at.is_contiguous());
//! let at_rows = at.contiguous(&stream)?; // the transpose kernel runs here
//! assert!(at_rows.is_owned() && a.contiguous(&stream)?.len() == shape.len());
//! // A row-major 3000x1000 matrix like any other, e.g. for a launcher:
//! let mut back = gpu.alloc::<f32>(shape.len())?;
//! transpose::padded(&stream, &at_rows, &mut back, at.shape())?;
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use crate::MatrixShape;
use crate::transpose::Variant;

#[cfg(feature = "cuda")]
use crate::{Result, Stream};
#[cfg(feature = "cuda")]
use cust::memory::{DeviceBuffer, DeviceSlice};
#[cfg(feature = "cuda")]
use std::ops::Deref;

/// The kernel that materialises a transposed view: the fastest version
/// ([`Variant::BEST`]; see README and docs/transpose.md for its figures).
const MATERIALISE_WITH: Variant = Variant::BEST;

/// Shape and strides of a matrix view, without its buffer: the GPU-free part
/// of [`MatrixView`].
///
/// Strides are in elements, `(row_stride, col_stride)`, as PyTorch's
/// `Tensor.stride()`: logical element `(r, c)` lives at
/// `r * row_stride + c * col_stride`. Only two layouts can be built, a
/// row-major matrix ([`StridedLayout::row_major`]) and its transpose
/// ([`StridedLayout::t`]), because those are the two the transpose kernels
/// can turn into each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StridedLayout {
    shape: MatrixShape,
    strides: (usize, usize),
}

impl StridedLayout {
    /// A row-major `shape` matrix: strides `(cols, 1)`.
    pub fn row_major(shape: MatrixShape) -> Self {
        StridedLayout { shape, strides: (shape.cols(), 1) }
    }

    /// The logical shape (rows x cols of the matrix the view shows).
    pub fn shape(self) -> MatrixShape {
        self.shape
    }

    /// `(row_stride, col_stride)`, in elements.
    pub fn strides(self) -> (usize, usize) {
        self.strides
    }

    /// The transpose, in O(1): shape and strides swapped, nothing moved.
    /// `layout.t().t() == layout`.
    #[must_use]
    pub fn t(self) -> Self {
        let (row, col) = self.strides;
        StridedLayout { shape: self.shape.t(), strides: (col, row) }
    }

    /// Whether the elements lie in memory in row-major order, so that the
    /// buffer can be used as a row-major matrix as it is. True for a
    /// row-major view, for any view with one row or one column (as in
    /// PyTorch, the stride of a dimension of size 1 does not matter), and
    /// for an empty view (no element, no stride used: PyTorch's
    /// `is_contiguous()` is true for every empty tensor).
    pub fn is_contiguous(self) -> bool {
        self.is_row_major() || self.shape.rows() <= 1 || self.shape.cols() <= 1
    }

    /// The row-major matrix the buffer holds: [`StridedLayout::shape`] for a
    /// row-major view, its transpose for a transposed one. This is the shape
    /// a [`crate::transpose`] launcher takes to materialise the view.
    pub fn storage_shape(self) -> MatrixShape {
        if self.is_row_major() { self.shape } else { self.shape.t() }
    }

    /// The element offset of logical element `(row, col)` in the buffer, or
    /// `None` if `(row, col)` is outside the shape.
    pub fn offset(self, row: usize, col: usize) -> Option<usize> {
        (row < self.shape.rows() && col < self.shape.cols()).then(|| row * self.strides.0 + col * self.strides.1)
    }

    fn is_row_major(self) -> bool {
        self.strides == StridedLayout::row_major(self.shape).strides
    }

    /// What materialising this layout takes. The one decision shared by the
    /// GPU and the emulator paths.
    fn plan(self) -> Plan {
        if self.is_contiguous() { Plan::Copy } else { Plan::Transpose { storage: self.storage_shape() } }
    }
}

/// How to turn a view's buffer into a row-major matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// The buffer is already in row-major order: copy it, or borrow it.
    Copy,
    /// The buffer holds the `storage` matrix row-major; its transpose is the view.
    Transpose { storage: MatrixShape },
}

/// A borrowed f32 matrix in device memory, row-major or transposed.
///
/// Taking the transpose ([`MatrixView::t`]) is O(1) and queues nothing on
/// the GPU; [`MatrixView::contiguous`] and [`MatrixView::contiguous_into`]
/// produce the row-major matrix, running a transpose kernel only when the
/// view is not already row-major. See the [module documentation](self).
#[derive(Clone, Copy, Debug)]
#[cfg(feature = "cuda")]
pub struct MatrixView<'a> {
    buffer: &'a DeviceSlice<f32>,
    layout: StridedLayout,
}

#[cfg(feature = "cuda")]
impl<'a> MatrixView<'a> {
    /// A row-major `shape` view of `buffer`.
    ///
    /// A column-major `rows x cols` matrix (Fortran, cuBLAS) is
    /// `MatrixView::new(buffer, MatrixShape::new(cols, rows)?)?.t()`.
    ///
    /// Errors: [`crate::Error::LengthMismatch`] unless `buffer` holds exactly
    /// `shape.len()` elements.
    pub fn new(buffer: &'a DeviceSlice<f32>, shape: MatrixShape) -> Result<Self> {
        shape.check_len("view buffer", buffer.len())?;
        Ok(MatrixView { buffer, layout: StridedLayout::row_major(shape) })
    }

    /// The transpose, in O(1): shape and strides swapped, no GPU work.
    /// `view.t().t()` is `view`.
    #[must_use]
    pub fn t(self) -> MatrixView<'a> {
        MatrixView { buffer: self.buffer, layout: self.layout.t() }
    }

    /// The logical shape.
    pub fn shape(&self) -> MatrixShape {
        self.layout.shape()
    }

    /// `(row_stride, col_stride)`, in elements, as PyTorch's `Tensor.stride()`.
    pub fn strides(&self) -> (usize, usize) {
        self.layout.strides()
    }

    /// Whether the buffer already holds the view row-major (see
    /// [`StridedLayout::is_contiguous`]); if so, [`MatrixView::contiguous`]
    /// runs no kernel.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Shape and strides, without the buffer.
    pub fn layout(&self) -> StridedLayout {
        self.layout
    }

    /// The underlying buffer, in storage order (see [`StridedLayout::storage_shape`]).
    pub fn buffer(&self) -> &'a DeviceSlice<f32> {
        self.buffer
    }

    /// The view as a row-major matrix of [`MatrixView::shape`].
    ///
    /// A contiguous view is returned as it is ([`Contiguous::Borrowed`]):
    /// nothing is allocated or queued, as PyTorch's `.contiguous()` returns
    /// the tensor itself. A transposed view is transposed by the fastest
    /// kernel into a new buffer ([`Contiguous::Owned`]), queued on `stream`:
    /// synchronise the stream (or keep using it) before reading the result.
    ///
    /// Errors: [`crate::Error::GridTooLarge`] if the shape needs more blocks than
    /// the device allows (checked before allocating),
    /// [`crate::Error::OutOfMemory`], and driver errors from the launch.
    pub fn contiguous(&self, stream: &Stream<'_>) -> Result<Contiguous<'a>> {
        match self.layout.plan() {
            Plan::Copy => Ok(Contiguous::Borrowed(self.buffer)),
            Plan::Transpose { storage } => {
                let len = self.buffer.len();
                crate::transpose::plan(MATERIALISE_WITH, storage, len, len, &stream.gpu().grid_limits())?;
                let mut out = stream.gpu().alloc::<f32>(len)?;
                crate::transpose::launch(stream, MATERIALISE_WITH, self.buffer, &mut out, storage)?;
                Ok(Contiguous::Owned(out))
            }
        }
    }

    /// Writes the view as a row-major matrix into `out`, queued on `stream`:
    /// a device-to-device copy if the view is contiguous, the fastest
    /// transpose kernel otherwise.
    ///
    /// Errors: [`crate::Error::LengthMismatch`] unless `out` holds exactly
    /// `shape().len()` elements, [`crate::Error::Aliased`] if `out` overlaps the
    /// view's buffer (`DeviceSlice` is `Copy` in `cust`, so safe code can
    /// make overlapping slices), [`crate::Error::GridTooLarge`], and driver errors.
    pub fn contiguous_into(&self, stream: &Stream<'_>, out: &mut DeviceSlice<f32>) -> Result<()> {
        self.shape().check_len("output", out.len())?;
        crate::alias::disjoint("MatrixView::contiguous_into", self.buffer, out)?;
        match self.layout.plan() {
            Plan::Copy => stream.copy(self.buffer, out),
            Plan::Transpose { storage } => {
                crate::transpose::launch(stream, MATERIALISE_WITH, self.buffer, out, storage)
            }
        }
    }
}

/// A view materialised as a row-major matrix: the view's own buffer when it
/// was contiguous already, or a new one. Dereferences to the
/// [`DeviceSlice`] either way.
#[derive(Debug)]
#[cfg(feature = "cuda")]
pub enum Contiguous<'a> {
    /// The view was contiguous: its buffer, untouched.
    Borrowed(&'a DeviceSlice<f32>),
    /// The view was transposed: a new buffer the transpose kernel writes.
    Owned(DeviceBuffer<f32>),
}

#[cfg(feature = "cuda")]
impl Contiguous<'_> {
    /// Whether a new buffer was allocated (and a kernel queued).
    pub fn is_owned(&self) -> bool {
        matches!(self, Contiguous::Owned(_))
    }

    /// An owned buffer: the new one as it is, or a device-to-device copy of
    /// the borrowed one, queued on `stream`.
    pub fn into_owned(self, stream: &Stream<'_>) -> Result<DeviceBuffer<f32>> {
        match self {
            Contiguous::Owned(buffer) => Ok(buffer),
            Contiguous::Borrowed(slice) => {
                let mut buffer = stream.gpu().alloc::<f32>(slice.len())?;
                stream.copy(slice, &mut buffer)?;
                Ok(buffer)
            }
        }
    }
}

#[cfg(feature = "cuda")]
impl Deref for Contiguous<'_> {
    type Target = DeviceSlice<f32>;
    fn deref(&self) -> &DeviceSlice<f32> {
        match self {
            Contiguous::Borrowed(slice) => slice,
            Contiguous::Owned(buffer) => buffer,
        }
    }
}

#[cfg(feature = "cuda")]
impl AsRef<DeviceSlice<f32>> for Contiguous<'_> {
    fn as_ref(&self) -> &DeviceSlice<f32> {
        self
    }
}

/// [`MatrixView::contiguous_into`] on the CPU emulator, for host slices.
pub mod emu {
    use super::{MATERIALISE_WITH, Plan, StridedLayout};
    use crate::Result;

    /// Writes the `layout` view of `src` as a row-major matrix into `dst`:
    /// a copy if the view is contiguous, else the same transpose kernel body
    /// as the GPU path on the emulator ([`crate::transpose::emu::launch`]).
    ///
    /// Errors: [`crate::Error::LengthMismatch`] unless `src` and `dst` each
    /// hold exactly `layout.shape().len()` elements, and the emulator's own
    /// ([`crate::Error::GridTooLarge`], [`crate::Error::Emulator`]).
    pub fn contiguous(layout: StridedLayout, src: &[f32], dst: &mut [f32]) -> Result<()> {
        let shape = layout.shape();
        shape.check_len("view buffer", src.len())?;
        shape.check_len("output", dst.len())?;
        match layout.plan() {
            Plan::Copy => {
                dst.copy_from_slice(src);
                Ok(())
            }
            Plan::Transpose { storage } => crate::transpose::emu::launch(MATERIALISE_WITH, src, dst, storage),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [(usize, usize); 9] = [(1, 1), (1, 7), (7, 1), (2, 3), (5, 5), (33, 65), (0, 0), (0, 4), (4, 0)];

    fn shape(rows: usize, cols: usize) -> MatrixShape {
        MatrixShape::new(rows, cols).unwrap()
    }

    #[test]
    fn row_major_strides_are_cols_and_one() {
        let l = StridedLayout::row_major(shape(3, 5));
        assert_eq!(l.strides(), (5, 1));
        assert_eq!(l.shape(), shape(3, 5));
        assert!(l.is_contiguous());
        assert_eq!(l.storage_shape(), shape(3, 5));
    }

    #[test]
    fn t_swaps_shape_and_strides_and_is_an_involution() {
        let l = StridedLayout::row_major(shape(3, 5));
        let t = l.t();
        assert_eq!(t.shape(), shape(5, 3));
        assert_eq!(t.strides(), (1, 5));
        assert!(!t.is_contiguous());
        assert_eq!(t.storage_shape(), shape(3, 5));
        assert_eq!(t.t(), l);
        assert_eq!(t.plan(), Plan::Transpose { storage: shape(3, 5) });
        assert_eq!(l.plan(), Plan::Copy);
    }

    /// `is_contiguous` means exactly "offsets are the row-major ones", and
    /// every layout is a bijection onto `0..len`.
    #[test]
    fn contiguity_matches_the_offsets() {
        for (rows, cols) in SHAPES {
            for l in [StridedLayout::row_major(shape(rows, cols)), StridedLayout::row_major(shape(rows, cols)).t()] {
                let (r, c) = (l.shape().rows(), l.shape().cols());
                let mut seen = vec![false; r * c];
                let mut row_major = true;
                for i in 0..r {
                    for j in 0..c {
                        let o = l.offset(i, j).unwrap();
                        assert!(!std::mem::replace(&mut seen[o], true), "{l:?}: offset {o} twice");
                        row_major &= o == i * c + j;
                    }
                }
                assert_eq!(l.is_contiguous(), row_major, "{l:?}");
                assert_eq!(l.offset(r, 0), None);
                assert_eq!(l.offset(0, c), None);
            }
        }
    }

    #[test]
    fn vectors_and_empty_matrices_are_contiguous_either_way() {
        for (rows, cols) in [(1, 1), (1, 9), (9, 1), (0, 0), (0, 9), (9, 0)] {
            let l = StridedLayout::row_major(shape(rows, cols));
            assert!(l.t().is_contiguous(), "{l:?}");
            assert_eq!(l.t().plan(), Plan::Copy);
        }
    }
}
