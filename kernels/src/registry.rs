//! The registry: every kernel of the crate, one entry each, written once.
//!
//! An op module lists its ladder in one `#[macro_export]` macro
//! (`transpose_steps!`, `nested_sin_steps!`, `softmax_steps!`,
//! `gemm_steps!`) that hands the list to whatever generator it is given:
//!
//! - here, [`ladder!`] turns it into each step's module, its `.entry`
//!   kernel, the op's enum (`ALL`, `name`, `entry_point`, `step`,
//!   `geometry`, the `run` dispatch), its `ENTRIES` list, its [`Step`] table
//!   and the table in the enum's docs;
//! - in `coalesce-host`, each op's launcher module turns the same list into
//!   one named launcher per step, with the kernel's parameters as its typed
//!   arguments.
//!
//! A step is its file and one line of the list:
//!
//! ```text
//! /// step 4 pads the tile by one column (`TILE + 1`): a column spans 32 banks
//! Padded => padded: "4" in "04_padded.rs";
//! ```
//!
//! - the doc line is the step's idea, in one line;
//! - `Padded` is its variant, `padded` its name (launchers, benches, the
//!   command line) and its `.entry` kernel is `transpose_padded`;
//! - `"4"` is its place in the ladder; the file, under the op's folder,
//!   defines the kernel body `padded` (the op's `run` parameters) and its
//!   launch geometry, `pub const GEOMETRY`.
//!
//! A step whose kernel is an instance of another's body says so in braces,
//! in this order, each optional: `{ body: warp_per_row::<C, 8>, geometry:
//! .., entry: "sin_f32", needs: "sm_90a", }`. `needs` names the one module
//! that has the kernel: it uses instructions that exist on one architecture
//! only (`wgmma` is `sm_90a`'s), so its `.entry` is compiled into that module
//! alone, and a host whose loaded module is another refuses its launch with
//! a clear error instead of a failed launch.
//!
//! This module is the vocabulary every op uses; the list of the ops is
//! [`crate::ops`], which uses every op, so that no op depends on the list.
//! `docs/registry.json` is that list as JSON (the doc scripts read it), and
//! `tests/registry.rs` checks it against the PTX, the files and the docs.

/// One kernel, as the registry lists it.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// The op module: `transpose`, `gemm`, ..
    pub op: &'static str,
    /// Its place in the op's ladder ("1", "3b"); "-" for the utility kernels.
    pub step: &'static str,
    /// Short name used by launchers, benches, reports and the command line.
    pub name: &'static str,
    /// The `.entry` kernel in the PTX module.
    pub entry: &'static str,
    /// The kernel body it runs, as the registry names it
    /// (`warp_per_row::<C, 8>`): a function of its file.
    pub body: &'static str,
    /// The file that holds the kernel, relative to `kernels/src/`.
    pub file: &'static str,
    /// What the step changes, in one line.
    pub idea: &'static str,
    /// The launch geometry its file gives it.
    pub geometry: StepGeometry,
    /// The one module that has this kernel (`Some("sm_90a")`), or `None`
    /// when every module has it.
    pub needs: Option<&'static str>,
    /// Whether a launch may use more than 48 KiB of dynamic shared memory:
    /// the host opts the kernel in first (see [`crate::OPT_IN_SHARED`]).
    pub opt_in_shared: bool,
}

impl PartialEq for Step {
    fn eq(&self, other: &Step) -> bool {
        self.entry == other.entry
    }
}
impl Eq for Step {}

/// A step's launch geometry, as the docs show it (`{:?}`).
#[derive(Clone, Copy)]
pub enum StepGeometry {
    /// A ladder step's: the op's `Geometry` value.
    Value(&'static (dyn core::fmt::Debug + Sync)),
    /// A utility kernel's: the function that computes it, in words.
    Words(&'static str),
}

impl core::fmt::Debug for StepGeometry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StepGeometry::Value(g) => g.fmt(f),
            StepGeometry::Words(w) => f.write_str(w),
        }
    }
}

impl Step {
    /// Whether the module built for `module` (`"sm_90"`, `"sm_90a"`, ..)
    /// has this kernel.
    pub fn in_module(&self, module: &str) -> bool {
        self.needs.is_none_or(|n| n == module)
    }
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

/// The [`Step`] table of kernels outside the ladders (copies, probes, the
/// GEMM's passes), written as a ladder's list is: one line per kernel under
/// a one-line doc comment that is its idea.
///
/// ```text
/// pub const STEPS: &[Step] = utilities! {
///     op: "probe";
///     /// launch overhead: one tiny launch, almost no work
///     increment => "probe_increment" in "probe.rs", geometry "increment_dims(len)";
/// };
/// ```
///
/// `increment` is the kernel's name and body, `"probe_increment"` its
/// `.entry`, the file is relative to `kernels/src/`, and the geometry is the
/// function that computes it, in words. A utility has no step number (`"-"`)
/// and is in every module, unless braces after it say otherwise, in this
/// order, each optional: `{ needs: "sm_90a", opt_in_shared: true, }`.
macro_rules! utilities {
    (
        op: $op:literal;
        $(
            #[doc = $idea:literal]
            $name:ident => $entry:literal in $file:literal, geometry $geometry:literal
            $({
                $(needs: $needs:literal,)?
                $(opt_in_shared: $opt_in:literal,)?
            })?;
        )*
    ) => {
        &[$(
            $crate::registry::Step {
                op: $op,
                step: "-",
                name: stringify!($name),
                entry: $entry,
                body: stringify!($name),
                file: $file,
                idea: $idea.trim_ascii(),
                geometry: $crate::registry::StepGeometry::Words($geometry),
                needs: $crate::registry::ladder!(@needs $($($needs)?)?),
                opt_in_shared: $crate::registry::ladder!(@or [$($($opt_in)?)?] false),
            }
        ),*]
    };
}
pub(crate) use utilities;

/// The kernels' side of an op's registry list (see the module docs): the
/// enum, its tables, its dispatch, each step's module, and one `.entry`
/// kernel per step.
macro_rules! ladder {
    (@needs) => { None };
    (@needs $needs:literal) => { Some($needs) };
    (@or [] $default:expr) => { $default };
    (@or [$given:expr] $default:expr) => { $given };
    (@body_str [] $name:ident) => { stringify!($name) };
    (@body_str [$body:expr] $name:ident) => { stringify!($body) };
    (@entry [] $op:literal $name:ident) => { concat!($op, "_", stringify!($name)) };
    (@entry [$entry:literal] $op:literal $name:ident) => { $entry };
    // A step without a `body` override has a file of its own: its module,
    // named for the step, and its kernel body re-exported under that name.
    (@module [] $name:ident $file:literal) => {
        #[path = $file]
        mod $name;
        pub use $name::$name;
    };
    (@module [$body:expr] $name:ident $file:literal) => {};
    // The entry kernels take `run`'s parameters, or `kernel(..)`'s where the
    // op gives them with how they become `run`'s.
    (
        op: $op:literal;
        $(#[$meta:meta])*
        pub enum $Variant:ident, geometry $Geometry:ty;
        unsafe fn run<$C:ident>($ctx:ident $(, $arg:ident: $argty:ty)* $(,)?);
        kernel($($karg:ident: $kty:ty),* $(,)?) => ($($kcall:tt)*);
        $($steps:tt)*
    ) => {
        $crate::registry::ladder! {
            @emit op: $op;
            meta: [$(#[$meta])*];
            enum: $Variant, $Geometry, $C;
            sig: ($ctx: &$C, $($arg: $argty),*);
            run_sig: ($ctx: &$C, $($arg: $argty),*);
            call: ($ctx, $($arg),*);
            kernel: ($($karg: $kty),*);
            kernel_call: ($ctx, $($kcall)*);
            $($steps)*
        }
    };
    // Without `kernel(..)`, the entry kernels take `run`'s parameters as
    // they are.
    (
        op: $op:literal;
        $(#[$meta:meta])*
        pub enum $Variant:ident, geometry $Geometry:ty;
        unsafe fn run<$C:ident>($ctx:ident $(, $arg:ident: $argty:ty)* $(,)?);
        $($steps:tt)*
    ) => {
        $crate::registry::ladder! {
            op: $op;
            $(#[$meta])*
            pub enum $Variant, geometry $Geometry;
            unsafe fn run<$C>($ctx $(, $arg: $argty)*);
            kernel($($arg: $argty),*) => ($($arg),*);
            $($steps)*
        }
    };
    (
        @emit op: $op:literal;
        meta: [$(#[$meta:meta])*];
        enum: $Variant:ident, $Geometry:ty, $C:ident;
        sig: $sig:tt;
        run_sig: ($($run_sig:tt)*);
        call: $call:tt;
        kernel: $kernel:tt;
        kernel_call: $kernel_call:tt;
        $(
            #[doc = $idea:literal]
            $V:ident => $name:ident: $step:literal in $file:literal
            $({
                $(body: $body:expr,)?
                $(geometry: $geometry:expr,)?
                $(entry: $entry:literal,)?
                $(needs: $needs:literal,)?
            })?;
        )*
    ) => {
        $( $crate::registry::ladder!(@module [$($($body)?)?] $name $file); )*

        $(#[$meta])*
        ///
        /// | step | name | `.entry` | file | idea |
        /// | --- | --- | --- | --- | --- |
        $(
            #[doc = concat!("| ", $step, " | `", stringify!($name), "` | `", $crate::registry::ladder!(@entry [$($($entry)?)?] $op $name), "` | `", $op, "/", $file, "` | ", $idea, " |")]
        )*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $Variant {
            $( #[doc = $idea] $V, )*
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
                    entry: $crate::registry::ladder!(@entry [$($($entry)?)?] $op $name),
                    body: $crate::registry::ladder!(@body_str [$($($body)?)?] $name),
                    file: concat!($op, "/", $file),
                    idea: $idea.trim_ascii(),
                    geometry: $crate::registry::StepGeometry::Value(&$crate::registry::ladder!(@or [$($($geometry)?)?] $name::GEOMETRY)),
                    needs: $crate::registry::ladder!(@needs $($($needs)?)?),
                    opt_in_shared: $crate::registry::ladder!(@or [$($($geometry)?)?] $name::GEOMETRY).opt_in_shared(),
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

            /// The launch geometry its file gives it.
            pub const fn geometry(self) -> $Geometry {
                match self {
                    $($Variant::$V => $crate::registry::ladder!(@or [$($($geometry)?)?] $name::GEOMETRY),)*
                }
            }

            /// Runs this entry's kernel body for the calling thread.
            ///
            /// # Safety
            /// As for the kernel body: the buffers hold what it reads and
            /// writes, and the launch uses this entry's launch dimensions.
            #[inline(always)]
            pub unsafe fn run<$C: $crate::ThreadCtx>(self, $($run_sig)*) {
                // SAFETY: forwarded from the caller.
                #[allow(unused_unsafe)]
                unsafe {
                    match self {
                        $($Variant::$V => ($crate::registry::ladder!(@or [$($($body)?)?] $name))$call,)*
                    }
                }
            }
        }

        /// The `.entry` kernels of this module, one per entry of the registry.
        pub const ENTRIES: &[&str] = &$crate::registry::entries(&$Variant::STEPS);

        $(
            #[cfg(all(target_arch = "nvptx64" $($(, target_feature = $needs)?)?))]
            const _: () = {
                #[unsafe(export_name = $crate::registry::ladder!(@entry [$($($entry)?)?] $op $name))]
                unsafe extern "gpu-kernel" fn entry $kernel {
                    #[inline(always)]
                    unsafe fn body<$C: $crate::ThreadCtx> $sig {
                        // SAFETY: forwarded from the entry.
                        unsafe { ($crate::registry::ladder!(@or [$($($body)?)?] $name))$call }
                    }
                    // SAFETY: the host launcher checked lengths and launch geometry.
                    unsafe { $crate::registry::ladder!(@with_gpu body $kernel_call) }
                }
            };
        )*
    };
    // `f(ctx, args..)` with the GPU's thread context as `ctx`.
    (@with_gpu $f:ident ($ctx:ident, $($args:tt)*)) => {
        $f(&$crate::gpu::Gpu, $($args)*)
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

/// A utility's `.entry` kernel (on the GPU) and, everywhere, its parameter
/// types in order as the tuple type `$Params`: the host builds the
/// kernel's arguments as that tuple mapped to host values (`HostParams` in
/// `coalesce-host`), so a parameter added, dropped or reordered here is a
/// compile error there.
///
/// ```text
/// params_and_entry! {
///     /// `gemm_maxima`'s parameters.
///     MaximaParams => gemm_maxima(src: *const f32, rows: u32, ..) { body }
/// }
/// ```
macro_rules! params_and_entry {
    ($(#[$doc:meta])* $Params:ident => $entry:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        pub type $Params = ($($ty,)*);

        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(improper_gpu_kernel_arg, clippy::too_many_arguments)]
        pub unsafe extern "gpu-kernel" fn $entry($($arg: $ty),*) $body
    };
}
pub(crate) use params_and_entry;
