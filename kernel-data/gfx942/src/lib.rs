//! The packed GPU kernels of hipdnn-rs for `gfx942`, compiled into the binary: the kernel
//! descriptors (`kernels.json`), the Triton records (`triton.json`) and the kpack archives
//! they name, byte for byte as `xtask pack-kernels` wrote them to
//! `engines/kernels/packed/gfx942/`. `hipdnn-engines` uses them (feature `kernels-gfx942`,
//! default on) when no kernel directory is found on disk.
#![no_std]

/// The base architecture these kernels are for.
pub const ARCH: &str = "gfx942";

/// Every file of the packed directory, as `(file name, bytes)`.
pub const FILES: &[(&str, &[u8])] = &[
    ("kernels.json", include_bytes!("../packed/kernels.json")),
    ("triton.json", include_bytes!("../packed/triton.json")),
    (
        "hipdnn_kernels-gfx942.kpack",
        include_bytes!("../packed/hipdnn_kernels-gfx942.kpack"),
    ),
    (
        "hipdnn_triton-gfx942.kpack",
        include_bytes!("../packed/hipdnn_triton-gfx942.kpack"),
    ),
];
