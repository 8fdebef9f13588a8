//! The overlap check every out-of-place launcher makes.
//!
//! `cust`'s `DeviceSlice::index` takes `&self`, so safe code can hold an
//! input `buf.index(0..n)` and an output `buf.index(32..n + 32)` at once:
//! Rust's borrows do not keep device ranges apart. A kernel that reads one
//! and writes the other races, so the launchers compare the byte ranges.

use crate::{Error, Result};
use cust::memory::DeviceSlice;

/// The device bytes `[start, end)` of a slice.
pub(crate) fn span<T: cust::memory::DeviceCopy>(slice: &DeviceSlice<T>) -> (u64, u64) {
    let start = slice.as_device_ptr().as_raw();
    let bytes = (slice.len() as u64).saturating_mul(size_of::<T>() as u64);
    (start, start.saturating_add(bytes))
}

/// [`Error::Aliased`] if the two device ranges share a byte. Empty ranges
/// share nothing.
pub(crate) fn disjoint_spans(kernel: &'static str, a: (u64, u64), b: (u64, u64)) -> Result<()> {
    let empty = |(s, e): (u64, u64)| s >= e;
    if empty(a) || empty(b) || a.1 <= b.0 || b.1 <= a.0 { Ok(()) } else { Err(Error::Aliased { kernel }) }
}

/// [`Error::Aliased`] if `input` and `output` overlap in device memory.
pub(crate) fn disjoint<T: cust::memory::DeviceCopy>(
    kernel: &'static str, input: &DeviceSlice<T>, output: &DeviceSlice<T>,
) -> Result<()> {
    disjoint_spans(kernel, span(input), span(output))
}

#[cfg(test)]
mod tests {
    use super::disjoint_spans;

    #[test]
    fn ranges_that_share_a_byte_are_refused() {
        let ok = |a, b| disjoint_spans("k", a, b).is_ok();
        assert!(ok((0, 16), (16, 32)) && ok((16, 32), (0, 16)), "adjacent ranges are disjoint");
        assert!(!ok((0, 16), (15, 32)) && !ok((15, 32), (0, 16)), "one shared byte is overlap");
        assert!(!ok((0, 64), (8, 16)) && !ok((8, 16), (0, 64)), "containment is overlap");
        assert!(!ok((0, 16), (0, 16)), "the same range is overlap");
        assert!(ok((8, 8), (0, 16)) && ok((0, 16), (8, 8)), "an empty range overlaps nothing");
    }
}
