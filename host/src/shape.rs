//! Matrix shapes, checked once.

use crate::{Error, Result};
use std::fmt;

/// A `rows x cols` row-major matrix whose dimensions fit the kernels' `u32`
/// parameters.
///
/// Either dimension may be 0, as in BLAS and PyTorch: every launcher takes
/// an empty matrix as a successful no-op (it checks the buffers' lengths,
/// then launches nothing and touches neither buffer), since CUDA refuses a
/// launch of zero blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatrixShape {
    rows: u32,
    cols: u32,
}

impl MatrixShape {
    /// Checks that both dimensions fit in `u32` and that the element count
    /// fits in memory's address space ([`Error::ShapeTooLarge`]). Zero
    /// dimensions are allowed: see [`MatrixShape::is_empty`].
    pub fn new(rows: usize, cols: usize) -> Result<Self> {
        let (r, c) = Self::fits(rows, cols)?;
        Ok(MatrixShape { rows: r, cols: c })
    }

    /// Checks that both dimensions fit in `u32` and that the element count
    /// of f32s fits in memory's address space (zero allowed): the two
    /// dimensions as `u32`.
    pub(crate) fn fits(rows: usize, cols: usize) -> Result<(u32, u32)> {
        let (Ok(r), Ok(c)) = (u32::try_from(rows), u32::try_from(cols)) else {
            return Err(Error::ShapeTooLarge { rows, cols, why: "a dimension exceeds u32::MAX".into() });
        };
        if rows.checked_mul(cols).and_then(|n| n.checked_mul(4)).is_none_or(|b| b > isize::MAX as usize) {
            return Err(Error::ShapeTooLarge { rows, cols, why: "its byte size overflows the address space".into() });
        }
        Ok((r, c))
    }

    pub fn rows(self) -> usize {
        self.rows as usize
    }
    pub fn cols(self) -> usize {
        self.cols as usize
    }
    /// Number of elements.
    pub fn len(self) -> usize {
        self.rows() * self.cols()
    }
    /// Whether the matrix has no elements (a dimension is 0): launchers
    /// check the buffers, then do nothing.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// The shape with rows and columns swapped.
    pub fn t(self) -> Self {
        MatrixShape { rows: self.cols, cols: self.rows }
    }
    /// A shape whose dimensions [`Self::fits`] checked.
    pub(crate) const fn of(rows: u32, cols: u32) -> Self {
        MatrixShape { rows, cols }
    }
    pub(crate) fn rows_u32(self) -> u32 {
        self.rows
    }
    pub(crate) fn cols_u32(self) -> u32 {
        self.cols
    }

    /// Checks that a buffer of `actual` elements holds exactly this matrix.
    pub(crate) fn check_len(self, buffer: &'static str, actual: usize) -> Result<()> {
        check_len(buffer, (self.rows(), self.cols()), actual)
    }
}

/// Checks that a buffer of `actual` elements holds exactly a row-major
/// `rows x cols` matrix ([`Error::LengthMismatch`] if not).
pub(crate) fn check_len(buffer: &'static str, (rows, cols): (usize, usize), actual: usize) -> Result<()> {
    let expected = rows * cols;
    if actual != expected {
        return Err(Error::LengthMismatch { buffer, shape: format!("a {rows}x{cols} matrix"), expected, actual });
    }
    Ok(())
}

impl fmt::Display for MatrixShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}
