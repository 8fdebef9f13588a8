//! Sixteen-byte vectors of floats, shared by every op that moves memory in
//! 16-byte accesses.

/// Four floats with the alignment that makes them one 16-byte access
/// (`ld.global.v4.f32`, `st.shared.v4.f32`, ...): a pointer cast to `*const
/// F4` and dereferenced loads all four in one instruction, and an `F4` built
/// from its lanes and stored is one vector store, not a `memcpy`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
pub struct F4(pub [f32; 4]);

impl F4 {
    /// Four zeros: the start value of vectors that are filled lane by lane.
    pub const ZERO: F4 = F4([0.0; 4]);
}

/// Two floats with the alignment that makes them one 8-byte access
/// (`ld.shared.v2.f32`, `st.global.v2.f32`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(8))]
pub struct F2(pub [f32; 2]);
