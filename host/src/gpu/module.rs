//! Which PTX module a device loads, and the module's kernels: looked up
//! once when the module loads, with the error that names the architecture
//! a kernel needs when the loaded module lacks it.

use super::Gpu;
use crate::error::check;
use crate::{Error, Result};
use cust::sys;

/// One PTX module of the kernels, built for one GPU architecture.
///
/// PTX built for `sm_XY` is JIT-compiled by the driver for any GPU of compute
/// capability X.Y or later, and refused by earlier ones. PTX built for
/// `sm_XYa` uses architecture-specific instructions (`wgmma` on `sm_90a`) and
/// runs on compute capability X.Y only. A crate ships one module per
/// architecture it supports, and [`Gpu`] loads the newest one the device can
/// run ([`Ptx::pick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ptx {
    /// The architecture, as compute capability `major * 10 + minor`: 90 for
    /// `sm_90` and `sm_90a`.
    pub arch: u32,
    /// `sm_90a` rather than `sm_90`: runs on compute capability `arch` only.
    pub arch_specific: bool,
    /// The module's PTX text.
    pub text: &'static str,
}

impl Ptx {
    /// The module's target, as PTX names it: `sm_90`, `sm_90a`.
    pub fn name(&self) -> String {
        format!("sm_{}{}", self.arch, if self.arch_specific { "a" } else { "" })
    }

    /// Whether a GPU of compute capability `major.minor` runs this module.
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        let cc = major * 10 + minor;
        if self.arch_specific { self.arch == cc } else { self.arch <= cc }
    }

    /// The newest module of `modules` that a GPU of compute capability
    /// `major.minor` can run (an architecture-specific one before the
    /// generic one of the same number), or `None` if every one needs
    /// another GPU.
    pub fn pick(modules: &[Ptx], major: u32, minor: u32) -> Option<Ptx> {
        modules.iter().filter(|m| m.runs_on(major, minor)).max_by_key(|m| (m.arch, m.arch_specific)).copied()
    }
}

impl Gpu {
    /// Looks every kernel of the loaded module up once, so that a launch
    /// costs no `cuModuleGetFunction` (part of the per-launch overhead
    /// measured in examples/04_launch_overhead.rs), and opts in the kernels
    /// that may use more than 48 KiB of dynamic shared memory.
    pub(super) fn look_up_kernels(&mut self) -> Result<()> {
        // A kernel that only one architecture's module has (`wgmma`:
        // sm_90a) is absent from the others: its launcher then says so
        // ([`Error::ArchitectureRequired`]).
        for step in coalesce_kernels::ops::steps() {
            let name = step.entry;
            // Not even asked for where the registry says the module lacks it
            // (a failed cuModuleGetFunction is an error to compute-sanitizer).
            if self.module_name().is_some_and(|m| !step.in_module(m)) {
                continue;
            }
            match self.module.get_function(name) {
                Ok(f) => {
                    self.functions.insert(name, KernelHandle(f.to_raw()));
                }
                Err(_) if step.needs.is_some() => {}
                Err(_) => return Err(Error::MissingKernel { name }),
            }
        }
        // Kernels that may use more than 48 KiB of dynamic shared memory must
        // say so once (CUDA's opt-in); the launch checks then enforce the
        // device's opt-in limit.
        for &name in coalesce_kernels::OPT_IN_SHARED {
            let Some(f) = self.functions.get(name).map(|f| f.0) else { continue };
            // SAFETY: a live function handle of the module we own.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    f,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    self.grid_limits().max_shared_bytes_optin as i32,
                )
            })?;
        }
        Ok(())
    }

    /// Whether the loaded module has kernel `entry`: every kernel but those
    /// of another architecture ([`coalesce_kernels::registry::Step::needs`]).
    pub fn has_kernel(&self, entry: &str) -> bool {
        self.functions.contains_key(entry)
    }

    /// [`Error::ArchitectureRequired`] (or [`Error::MissingKernel`]) unless
    /// the loaded module has the kernel `name`.
    pub(crate) fn require(&self, name: &'static str) -> Result<()> {
        self.function(name).map(|_| ())
    }

    pub(crate) fn function(&self, name: &'static str) -> Result<sys::CUfunction> {
        if let Some(f) = self.functions.get(name) {
            return Ok(f.0);
        }
        let needs = coalesce_kernels::ops::steps().find(|s| s.entry == name).and_then(|s| s.needs);
        let (major, minor) = self.compute_capability();
        Err(match needs {
            Some(needs) => Error::ArchitectureRequired {
                kernel: name,
                needs,
                device: self.name().to_owned(),
                major,
                minor,
                loaded: self.module_name().unwrap_or("a module given as text").to_owned(),
            },
            None => Error::MissingKernel { name },
        })
    }
}

/// A kernel's driver handle. CUDA function handles may be used from any
/// thread of the process for as long as their module is loaded.
#[derive(Clone, Copy)]
pub(super) struct KernelHandle(sys::CUfunction);
// SAFETY: see above; the Gpu that holds these keeps the module loaded.
unsafe impl Send for KernelHandle {}
// SAFETY: as above: launching reads the handle only.
unsafe impl Sync for KernelHandle {}
