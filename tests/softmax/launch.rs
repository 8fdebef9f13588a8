//! How a softmax is launched: which kernel and strategy a row length
//! gets, the block geometry for every row length, that the kernels
//! launched with 1024 threads fit the register file (ptxas says), and the
//! inputs the emulator's launchers refuse.

use coalesce::softmax::{self, Kernel, Strategy, emu};
use coalesce::{Error, MatrixShape};

#[test]
fn the_dispatch_picks_the_strategy_by_row_length() {
    let cases = [
        (1, Kernel::Warp4),
        (128, Kernel::Warp4),
        (129, Kernel::Warp8),
        (512, Kernel::Warp16),
        (1000, Kernel::Warp32),
        (1024, Kernel::Warp32),
        (1025, Kernel::Block8),
        (4096, Kernel::Block8),
        (4097, Kernel::Block16),
        (8192, Kernel::Block16),
        (8193, Kernel::Block32),
        (softmax::CLUSTER_MIN_COLS - 1, Kernel::Block32),
        (softmax::CLUSTER_MIN_COLS, Kernel::Cluster4x256),
        (18432, Kernel::Cluster4x256),
        (28672, Kernel::Cluster4x256),
        (28673, Kernel::Cluster8x256),
        (32768, Kernel::Cluster8x256),
        (32769, Kernel::Cluster8x256),
        (50000, Kernel::Cluster8x256),
        (57344, Kernel::Cluster8x256),
        (57345, Kernel::Cluster8x512),
        (114688, Kernel::Cluster8x512),
        (114689, Kernel::Online),
        (u32::MAX, Kernel::Online),
    ];
    for (cols, kernel) in cases {
        assert_eq!(Kernel::for_cols(cols), kernel, "{cols} columns");
        assert_eq!(Strategy::for_cols(cols), kernel.strategy(), "{cols} columns");
    }
    assert_eq!(Strategy::WarpPerRow.kernel(1025), None);
    assert_eq!(Strategy::BlockPerRow.kernel(32769), None);
    assert_eq!(Strategy::BlockPerRow.kernel(1000), Some(Kernel::Block8));
    assert_eq!(Strategy::Online.kernel(1), Some(Kernel::OnlineStash));
    assert_eq!(Strategy::Online.kernel(57345), Some(Kernel::Online));
    assert_eq!(Strategy::Cluster.kernel(1), Some(Kernel::Cluster4x256));
    assert_eq!(Strategy::Cluster.kernel(32769), Some(Kernel::Cluster8x256));
    assert_eq!(Strategy::Cluster.kernel(114689), None);
    // Without clusters: the dispatch's kernel, except that rows it gives a
    // cluster go to a block while one holds them, then online.
    for (cols, kernel) in [
        (0, Kernel::Warp4),
        (128, Kernel::Warp4),
        (1025, Kernel::Block8),
        (softmax::CLUSTER_MIN_COLS, Kernel::Block32),
        (32768, Kernel::Block32),
    ] {
        assert_eq!(softmax::without_clusters(cols), kernel, "{cols} columns without clusters");
    }
    // The threshold is where `block32`'s block passes 512 threads of its 64
    // registers: two blocks an SM below it, one from it.
    let threads = |cols| Kernel::Block32.launch_dims(1, cols).block.x;
    assert_eq!((threads(softmax::CLUSTER_MIN_COLS - 1), threads(softmax::CLUSTER_MIN_COLS)), (512, 544));
    assert_eq!(softmax::without_clusters(32769), Kernel::OnlineStash);
    assert_eq!(softmax::without_clusters(57345), Kernel::Online);
    // Two blocks' worth of registers per row slice: 50000 columns are 8
    // slices of 6252 floats, 224 threads of 28.
    assert_eq!(Kernel::Cluster8x256.launch_dims(5, 50000).block.x, 224);
    // Clusters of 4 up to 256 threads a block: 18432 columns are 4 slices
    // of 4608 floats, 192 threads of 28.
    assert_eq!(Kernel::Cluster4x256.launch_dims(5, 18432).block.x, 192);
    assert_eq!(Kernel::Cluster4x256.launch_dims(5, 18432).grid.x, 20);
    assert_eq!(Kernel::Cluster8x512.launch_dims(5, 100_000).block.x, 448);
    // The longest stashed row fits an H100's opt-in shared memory (227 KiB).
    assert_eq!(Kernel::OnlineStash.launch_dims(5, 57344).shared_bytes, 256 + 57344 * 4);
    assert!(
        Kernel::OnlineStash.launch_dims(5, 57344).shared_bytes <= coalesce::GridLimits::CUDA.max_shared_bytes_optin
    );
    assert!(coalesce::kernels::OPT_IN_SHARED.contains(&"softmax_online_stash"));
    // Every name is distinct and every kernel is in the PTX's entry list.
    let mut names: Vec<&str> = Kernel::ALL.iter().map(|k| k.entry_point()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Kernel::ALL.len());
    assert_eq!(coalesce::kernels::softmax::ENTRIES.len(), Kernel::ALL.len());
}

/// The block geometry covers the row with whole warps, never more than 1024
/// threads, for every row length a kernel takes.
#[test]
fn launch_geometry_covers_every_row_length() {
    for kernel in Kernel::ALL {
        let max = kernel.max_cols().min(70_000);
        for cols in (1..=max).step_by(7).chain([max]) {
            let d = kernel.launch_dims(5, cols);
            assert!(d.block.x.is_multiple_of(32) && d.block.x <= 1024, "{kernel:?} {cols}: {:?}", d.block);
            match kernel.strategy() {
                Strategy::WarpPerRow => assert_eq!((d.grid.x, d.block.x), (2, 128)),
                Strategy::BlockPerRow => {
                    assert!(d.block.x * kernel.floats_per_thread() >= cols, "{kernel:?} {cols}");
                    assert_eq!(d.grid.x, 5);
                }
                Strategy::Online => assert_eq!(d.grid.x, 5),
                Strategy::Cluster => {
                    assert!(kernel.cluster() * d.block.x * kernel.floats_per_thread() >= cols, "{kernel:?} {cols}");
                    assert_eq!(d.grid.x, 5 * kernel.cluster());
                }
            }
        }
    }
}

#[test]
fn bad_input_is_an_error_on_the_emulator() {
    let shape = MatrixShape::new(3, 40).unwrap();
    let input = vec![1.0f32; shape.len()];
    let mut short = vec![0.0f32; shape.len() - 1];
    let e = emu::softmax(&input, &mut short, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 120, actual: 119, .. }), "{e}");
    let mut out = vec![0.0f32; shape.len()];
    let e = emu::softmax(&input[1..], &mut out, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "input", .. }), "{e}");

    // Rows too long for a forced strategy or kernel.
    let long = MatrixShape::new(1, 1025).unwrap();
    let (input, mut out) = (vec![0.0f32; 1025], vec![0.0f32; 1025]);
    let e = emu::with_strategy(Strategy::WarpPerRow, &input, &mut out, long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { cols: 1025, .. }), "{e}");
    assert!(e.to_string().contains("at most 1024 columns"), "{e}");
    let e = emu::launch(Kernel::Warp4, &input, &mut out, long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    let longer = MatrixShape::new(1, 32769).unwrap();
    let e = softmax::kernel_for(Strategy::BlockPerRow, longer).unwrap_err();
    assert!(e.to_string().contains("at most 32768 columns"), "{e}");

    // Each kernel's error names its own limit, one column past it and at
    // the longest row a shape can have (no rows: nothing to allocate), and
    // no length panics (a stash of 2^30 columns overflows u32 bytes).
    for k in Kernel::ALL {
        for cols in [k.max_cols().saturating_add(1), 1 << 30, u32::MAX] {
            let shape = MatrixShape::new(0, cols as usize).unwrap();
            match emu::launch(k, &[], &mut [], shape) {
                Ok(()) => assert!(cols <= k.max_cols(), "{} at {cols} columns", k.name()),
                Err(e) => {
                    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{}: {e}", k.name());
                    let limit = format!("softmax {} holds rows of at most {} columns", k.name(), k.max_cols());
                    assert!(e.to_string().contains(&limit), "{e}");
                }
            }
        }
    }
}

/// A 1024-thread block needs at most 64 registers per thread (65536 per
/// SM): `softmax_block32` and `softmax_online` launch with 1024 threads, so
/// more would fail every launch at 32768 columns. ptxas -v says.
#[test]
fn kernels_launched_with_1024_threads_fit_the_register_file() {
    let Some(ptxas) = ptxas() else {
        eprintln!("skipping: no ptxas (run .ci/setup)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("coalesce-softmax-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.ptx"), coalesce::PTX).unwrap();
    let out = std::process::Command::new(ptxas)
        .args(["-v", &format!("-arch={}", coalesce::CUDA_ARCH), "-o"])
        .arg(dir.join("k.cubin"))
        .arg(dir.join("k.ptx"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stderr);
    let mut current = String::new();
    let mut seen = 0;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().unwrap().to_owned();
        }
        if let Some(n) = line.split("Used ").nth(1).and_then(|r| r.split(' ').next()?.parse::<u32>().ok())
            && current.starts_with("softmax_")
        {
            eprintln!("{current}: {n} registers");
            if current == "softmax_block32" || current == "softmax_online" {
                assert!(n <= 64, "{current} uses {n} registers: a 1024-thread block cannot launch");
            }
            seen += 1;
        }
    }
    let in_module = Kernel::ALL.iter().filter(|k| k.registry().in_module(coalesce::CUDA_ARCH)).count();
    assert_eq!(seen, in_module, "ptxas did not report every softmax kernel of the module:\n{log}");
}

fn ptxas() -> Option<std::path::PathBuf> {
    let mut candidates: Vec<std::path::PathBuf> = ["CUDA_PATH", "CUDA_LIBRARY_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|r| std::path::PathBuf::from(r).join("bin/ptxas"))
        .collect();
    candidates.push(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cuda/bin/ptxas"));
    candidates.push("/usr/local/cuda/bin/ptxas".into());
    candidates.into_iter().find(|c| c.is_file()).or_else(|| {
        let ok = std::process::Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
        ok.then(|| "ptxas".into())
    })
}
