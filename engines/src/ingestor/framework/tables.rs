//! Groups a Triton family's contract tables are built from, each spelled once: the launch
//! values of a list of element strides (so a family names its strides in one list, which its
//! `VALUES`, its kernel parameters and its spec-variant filter all read), the six values of a
//! two-dimensional tile config, and the UID values and kernel pointer parameters of a list of
//! tensors ([`tensor_pointers!`](crate::tensor_pointers)).

use super::family::{I32_MAX, IntValue, int};

/// The launch values of the element strides `names`, in that order, each in
/// [0, 2147483647].
pub const fn strides<const N: usize>(names: [&'static str; N]) -> [IntValue; N] {
    let mut out = [int("", 0, 0); N];
    let mut i = 0;
    while i < N {
        out[i] = int(names[i], 0, I32_MAX);
        i += 1;
    }
    out
}

/// The six launch values of a two-dimensional tile config, in the order of
/// [`tile_config_ints`](super::launch::tile_config_ints): `spec` in `[0, spec_max]`, `block_m`
/// and `block_n` in their ranges, `num_warps` in [1, 16], `shared_bytes` in [0, 262144],
/// `warp_size` in [32, 64].
pub const fn tile_config(spec_max: i64, block_m: (i64, i64), block_n: (i64, i64)) -> [IntValue; 6] {
    [
        int("spec", 0, spec_max),
        int("block_m", block_m.0, block_m.1),
        int("block_n", block_n.0, block_n.1),
        int("num_warps", 1, 16),
        int("shared_bytes", 0, 262_144),
        int("warp_size", 32, 64),
    ]
}

/// The launch values holding the UIDs of a kernel's tensor pointers and the kernel's pointer
/// parameters, both named from one list of tensors: `tensor_pointers!(x, y)` is
/// `(["x.uid", "y.uid"], ["x_ptr", "y_ptr"])` (for a family whose kernel names the pointer of
/// tensor `t` `t_ptr` and whose contract saves its UID as `t.uid`).
#[macro_export]
macro_rules! tensor_pointers {
    ($($t:ident),+ $(,)?) => {
        (
            [$(concat!(stringify!($t), ".uid")),+],
            [$(concat!(stringify!($t), "_ptr")),+],
        )
    };
}
