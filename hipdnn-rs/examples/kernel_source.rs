//! Where this program finds its GPU kernels, and the handle it gets: prints
//! `kernel source: <location>` (the lookup of `hipdnn_engines::kernel_location`:
//! `HIPDNN_KERNEL_DIR`, then `<exe dir>/../lib/hipdnn/kernels`, then the kernels compiled into
//! the binary), then creates a [`Handle`] with INFO logging on stderr and prints its device.
//! Needs no GPU (`.ci/relocation.sh` runs it from an install prefix).
//!
//! ```text
//! cargo run --example kernel_source
//! ```

use hipdnn::Handle;

struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("{} {}", r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

static LOGGER: Stderr = Stderr;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    log::set_logger(&LOGGER).map_err(|e| e.to_string())?;
    log::set_max_level(log::LevelFilter::Info);
    let location = hipdnn_engines::gpu::resolve_kernel_location();
    println!("kernel source: {location}");
    let handle = Handle::new()?;
    println!("handle device: {:?}", handle.device());
    Ok(())
}
