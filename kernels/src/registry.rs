//! The registry: every kernel of the crate, one entry each, written once.
//!
//! An op module lists its ladder in one `#[macro_export]` macro
//! (`transpose_steps!`, `nested_sin_steps!`, `softmax_steps!`,
//! `gemm_steps!`) that hands the list to whatever generator it is given:
//!
//! - here, [`ladder!`] turns it into the op's enum (`ALL`, `name`,
//!   `entry_point`, `step`, `geometry`, the `run` dispatch), its `ENTRIES`
//!   list, its [`Step`] table and the table in the enum's docs;
//! - in `coalesce-host`, each op's launcher module turns the same list into
//!   one named launcher per step.
//!
//! [`OPS`] gathers every op's table. `docs/registry.json` is that table as
//! JSON (the doc scripts read it), and `tests/registry.rs` checks it against
//! the PTX, the files and the docs.
//!
//! An entry reads:
//!
//! ```text
//! /// doc of the enum variant
//! Padded => padded {
//!     step: "4",                        // its place in the ladder
//!     idea: "one padding column",       // what the step changes, one line
//!     entry: "transpose_padded",        // the .entry kernel in the PTX
//!     file: "transpose/04_padded.rs",   // where it lives, under kernels/src
//!     body: padded,                     // what `run` calls: a kernel body
//!     geometry: Geometry { .. },        // the op's launch geometry type
//!     needs: "sm_90a",                  // optional: the only module that has it
//! }
//! ```
//!
//! A step with `needs` uses instructions that exist on one architecture only
//! (`wgmma` is `sm_90a`'s): its `.entry` is compiled into that module alone,
//! and a host whose loaded module is another refuses its launch with a
//! clear error instead of a failed launch.

/// One kernel, as the registry lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The op module: `transpose`, `gemm`, ..
    pub op: &'static str,
    /// Its place in the op's ladder ("1", "3b"); "-" for the utility kernels.
    pub step: &'static str,
    /// Short name used by launchers, benches, reports and the command line.
    pub name: &'static str,
    /// The `.entry` kernel in the PTX module.
    pub entry: &'static str,
    /// The file that holds the kernel, relative to `kernels/src/`.
    pub file: &'static str,
    /// What the step changes, in one line.
    pub idea: &'static str,
    /// The launch geometry, as written in the registry.
    pub geometry: &'static str,
    /// The one module that has this kernel (`Some("sm_90a")`), or `None`
    /// when every module has it.
    pub needs: Option<&'static str>,
}

impl Step {
    /// A kernel outside the ladders (copies, probes), written
    /// `[op, name, entry, file, idea, geometry]`: no step number, in every
    /// module.
    pub const fn utility([op, name, entry, file, idea, geometry]: [&'static str; 6]) -> Step {
        Step { op, step: "-", name, entry, file, idea, geometry, needs: None }
    }

    /// Whether the module built for `module` (`"sm_90"`, `"sm_90a"`, ..)
    /// has this kernel.
    pub fn in_module(&self, module: &str) -> bool {
        self.needs.is_none_or(|n| n == module)
    }
}

/// Every op's [`Step`] table, in the order the docs teach them.
pub const OPS: &[(&str, &[Step])] = &[
    ("copy", crate::copy::STEPS),
    ("probe", crate::probe::STEPS),
    ("transpose", &crate::transpose::Variant::STEPS),
    ("nested_sin", &crate::nested_sin::Variant::STEPS),
    ("softmax", &crate::softmax::Kernel::STEPS),
    ("gemm", &crate::gemm::Variant::STEPS),
    ("gemm_pack", crate::gemm::pack::PACK_STEPS),
    ("gemm_fixup", crate::gemm::fixup::FIXUP_STEPS),
];

/// Every kernel of every op, in [`OPS`] order.
pub fn steps() -> impl Iterator<Item = &'static Step> {
    OPS.iter().flat_map(|(_, steps)| steps.iter())
}

/// The `.entry` names of a [`Step`] table, as a constant array.
pub(crate) const fn entries<const N: usize>(steps: &[Step; N]) -> [&'static str; N] {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = steps[i].entry;
        i += 1;
    }
    names
}

/// The kernels' side of an op's registry list (see the module docs): the
/// enum, its tables and its dispatch.
macro_rules! ladder {
    (@needs) => { None };
    (@needs $needs:literal) => { Some($needs) };
    (
        op: $op:literal;
        $(#[$meta:meta])*
        pub enum $Variant:ident, geometry $Geometry:ty;
        unsafe fn run<$C:ident>($ctx:ident $(, $arg:ident: $argty:ty)* $(,)?);
        $($entries:tt)*
    ) => {
        // The parameters once as a signature and once as a call, each a
        // single token tree, so the entries' repetition can use them.
        $crate::registry::ladder! {
            @emit op: $op;
            meta: [$(#[$meta])*];
            enum: $Variant, $Geometry, $C;
            sig: ($ctx: &$C, $($arg: $argty),*);
            call: ($ctx, $($arg),*);
            $($entries)*
        }
    };
    (
        @emit op: $op:literal;
        meta: [$(#[$meta:meta])*];
        enum: $Variant:ident, $Geometry:ty, $C:ident;
        sig: ($($sig:tt)*);
        call: $call:tt;
        $(
            $(#[$vmeta:meta])*
            $V:ident => $name:ident {
                step: $step:literal,
                idea: $idea:literal,
                entry: $entry:literal,
                file: $file:literal,
                body: $body:expr,
                geometry: $geometry:expr
                $(, needs: $needs:literal)? $(,)?
            }
        )*
    ) => {
        $(#[$meta])*
        ///
        /// | step | name | `.entry` | file | idea |
        /// | --- | --- | --- | --- | --- |
        $(
            #[doc = concat!("| ", $step, " | `", stringify!($name), "` | `", $entry, "` | `", $file, "` | ", $idea, " |")]
        )*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $Variant {
            $( $(#[$vmeta])* $V, )*
        }

        impl $Variant {
            const COUNT: usize = [$(stringify!($V)),*].len();

            /// Every entry, in teaching order.
            pub const ALL: [$Variant; Self::COUNT] = [$($Variant::$V),*];

            /// The registry's entries, in [`Self::ALL`] order.
            pub const STEPS: [$crate::registry::Step; Self::COUNT] = [$(
                $crate::registry::Step {
                    op: $op,
                    step: $step,
                    name: stringify!($name),
                    entry: $entry,
                    file: $file,
                    idea: $idea,
                    geometry: stringify!($geometry),
                    needs: $crate::registry::ladder!(@needs $($needs)?),
                }
            ),*];

            /// This entry of the registry.
            pub const fn registry(self) -> &'static $crate::registry::Step {
                &Self::STEPS[self as usize]
            }

            /// Short name used by launchers, benches, reports and the command line.
            pub const fn name(self) -> &'static str {
                self.registry().name
            }

            /// Name of the `.entry` kernel in the PTX module.
            pub const fn entry_point(self) -> &'static str {
                self.registry().entry
            }

            /// Its place in the ladder, as the file names number it.
            pub const fn step(self) -> &'static str {
                self.registry().step
            }

            /// The launch geometry the registry gives it.
            pub const fn geometry(self) -> $Geometry {
                match self {
                    $($Variant::$V => $geometry,)*
                }
            }

            /// Runs this entry's kernel body for the calling thread.
            ///
            /// # Safety
            /// As for the kernel body: the buffers hold what it reads and
            /// writes, and the launch uses this entry's launch dimensions.
            #[inline(always)]
            pub unsafe fn run<$C: $crate::ThreadCtx>(self, $($sig)*) {
                // SAFETY: forwarded from the caller.
                #[allow(unused_unsafe)]
                unsafe {
                    match self {
                        $($Variant::$V => ($body)$call,)*
                    }
                }
            }
        }

        /// The `.entry` kernels of this module, one per entry of the registry.
        pub const ENTRIES: &[&str] = &$crate::registry::entries(&$Variant::STEPS);
    };
}
pub(crate) use ladder;

/// One `.entry` kernel that hands its arguments to a kernel body with the
/// GPU's thread context: `entry!(transpose_naive(input: *const f32, ..) => naive)`.
/// The host launcher checked lengths and launch geometry before the launch.
#[cfg(target_arch = "nvptx64")]
macro_rules! entry {
    ($entry:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "gpu-kernel" fn $entry($($arg: $ty),*) {
            // SAFETY: the host launcher checked lengths and launch geometry.
            unsafe { $body(&$crate::gpu::Gpu, $($arg),*) }
        }
    };
}
#[cfg(target_arch = "nvptx64")]
pub(crate) use entry;
