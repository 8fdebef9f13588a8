//! The device side of the runtime: a [`Gpu`] (a device, its primary
//! context and the kernel module loaded into it), the [`Stream`]s that
//! kernels are queued on, device memory, and the launch.
//!
//! | file | idea |
//! | --- | --- |
//! | `device.rs` | opening a device: the driver, its primary context, its properties |
//! | `module.rs` | which PTX module a device loads ([`Ptx`]), and its kernels |
//! | `stream.rs` | [`Stream`]: made by a [`Gpu`], or a program's own borrowed |
//! | `device_memory.rs` | allocations, uploads, downloads, device copies, stream-ordered workspaces |
//! | `tensor_map.rs` | TMA tensor maps, encoded by the driver |
//! | `launch.rs` | a kernel's arguments as one typed tuple, and `cuLaunchKernel` |

mod device;
mod device_memory;
pub(crate) mod launch;
mod module;
mod stream;
mod tensor_map;

pub use device::Gpu;
pub(crate) use device_memory::Workspace;
pub(crate) use launch::{driver_entry, launch_matrix};
pub use module::Ptx;
pub use stream::Stream;
pub(crate) use tensor_map::encode_tiled_2d;
