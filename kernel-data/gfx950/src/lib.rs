//! The packed GPU kernels of hipdnn-rs for `gfx950`, compiled into the binary: the kernel
//! descriptors (`kernels.json`), the Triton records (`triton.json`) and the kpack archives
//! they name, byte for byte as `xtask pack-kernels` wrote them to
//! `engines/kernels/packed/gfx950/`. `hipdnn-engines` uses them (feature `kernels-gfx950`,
//! default on) when no kernel directory is found on disk.
#![no_std]

/// The base architecture these kernels are for.
pub const ARCH: &str = "gfx950";

/// Every file of the packed directory, as `(file name, bytes)`.
pub const FILES: &[(&str, &[u8])] = &[
    ("kernels.json", include_bytes!("../packed/kernels.json")),
    ("triton.json", include_bytes!("../packed/triton.json")),
    (
        "hipdnn_kernels-gfx950.kpack",
        include_bytes!("../packed/hipdnn_kernels-gfx950.kpack"),
    ),
    (
        "hipdnn_triton-gfx950.kpack",
        include_bytes!("../packed/hipdnn_triton-gfx950.kpack"),
    ),
];
