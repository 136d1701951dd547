//! The packed GPU kernels of hipdnn-rs for `gfx90a`, compiled into the binary: the kernel
//! descriptors (`kernels.json`), the Triton records (`triton.json`) and the kpack archives
//! they name, byte for byte as `xtask pack-kernels` wrote them to
//! `engines/kernels/packed/gfx90a/`. `hipdnn-engines` uses them (feature `kernels-gfx90a`,
//! default on) when no kernel directory is found on disk.
#![no_std]

/// The base architecture these kernels are for.
pub const ARCH: &str = "gfx90a";

/// Every file of the packed directory, as `(file name, bytes)`.
pub const FILES: &[(&str, &[u8])] = &[
    ("kernels.json", include_bytes!("../packed/kernels.json")),
    ("triton.json", include_bytes!("../packed/triton.json")),
    (
        "hipdnn_kernels-gfx90a.kpack",
        include_bytes!("../packed/hipdnn_kernels-gfx90a.kpack"),
    ),
    (
        "hipdnn_triton-gfx90a.kpack",
        include_bytes!("../packed/hipdnn_triton-gfx90a.kpack"),
    ),
];
