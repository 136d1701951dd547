//! Module sharing between plans (`IngestorDevice::module_share_key`, `KernelCode::load_on`):
//! byte-identical code objects loaded through devices of one sharing domain use one module
//! while any plan holds it; other bytes, other domains and devices without a key load their
//! own. The process-wide table is shared by the tests of this binary, so each test uses its
//! own domain key.

use hipdnn_engines::ingestor::device::{
    DeviceError, IngestorDevice, IngestorModule, KernelArgValue, KernelCode, KernelFunction,
    LaunchGeometry, resident_module_count,
};
use hipdnn_engines::ingestor::kernel::KernelArgument;
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

struct Function;
impl KernelFunction for Function {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Module;
impl IngestorModule for Module {
    fn get_function(&self, _symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        Ok(Arc::new(Function))
    }
}

/// A device that counts `load_module` calls and reports `key` as its sharing domain.
struct Device {
    key: Option<[u64; 3]>,
    loads: AtomicUsize,
}

impl Device {
    fn new(key: Option<[u64; 3]>) -> Device {
        Device {
            key,
            loads: AtomicUsize::new(0),
        }
    }
    fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }
}

impl IngestorDevice for Device {
    fn arch(&self) -> String {
        "sm_90".into()
    }
    fn ordinal(&self) -> i32 {
        0
    }
    fn module_share_key(&self) -> Option<[u64; 3]> {
        self.key
    }
    fn load_module(&self, _code: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Module))
    }
    fn launch(
        &self,
        _f: &dyn KernelFunction,
        _g: LaunchGeometry,
        _a: &[KernelArgValue],
        _s: &[KernelArgument],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        Ok(())
    }
    fn memset_async(&self, _a: u64, _v: u8, _b: u64, _s: u64) -> Result<(), DeviceError> {
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// The table is process-wide: the tests take turns so the counts they read are their own.
static SERIAL: Mutex<()> = Mutex::new(());

fn code(bytes: &[u8]) -> KernelCode {
    KernelCode::new(Arc::<[u8]>::from(bytes), "k")
}

#[test]
fn identical_code_in_one_domain_loads_one_module_while_a_plan_holds_it() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (a, b) = (Device::new(Some([7, 0, 1])), Device::new(Some([7, 0, 1])));
    let first = code(b"\x7fELF code object one");
    let k1 = first.load_on(&a).expect("load");
    assert_eq!(a.loads(), 1);
    // Another plan's copy of the same bytes, through another handle's device of the domain.
    let second = code(b"\x7fELF code object one");
    let k2 = second.load_on(&b).expect("load");
    assert_eq!(
        (a.loads(), b.loads()),
        (1, 0),
        "the resident module is reused"
    );
    assert!(
        Arc::ptr_eq(&k1.module, &k2.module),
        "one module serves both"
    );
    // Different bytes of the same length are not that module.
    let other = code(b"\x7fELF code object two");
    let k3 = other.load_on(&b).expect("load");
    assert_eq!(b.loads(), 1);
    assert!(!Arc::ptr_eq(&k1.module, &k3.module));
    // Once every holder is gone the entry is dead: the next load calls the driver again.
    drop((k1, k2, first, second));
    let third = code(b"\x7fELF code object one");
    third.load_on(&b).expect("load");
    assert_eq!(b.loads(), 2, "a module no plan holds is not kept alive");
}

#[test]
fn other_domains_and_devices_without_a_key_load_their_own() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let home = Device::new(Some([8, 0, 1]));
    let elsewhere = Device::new(Some([8, 1, 2]));
    let plain = Device::new(None);
    let bytes = b"\x7fELF shared between domains?";
    let (c1, c2, c3, c4) = (code(bytes), code(bytes), code(bytes), code(bytes));
    let k1 = c1.load_on(&home).expect("load");
    let k2 = c2.load_on(&elsewhere).expect("load");
    assert_eq!((home.loads(), elsewhere.loads()), (1, 1));
    assert!(!Arc::ptr_eq(&k1.module, &k2.module));
    let (k3, k4) = (
        c3.load_on(&plain).expect("load"),
        c4.load_on(&plain).expect("load"),
    );
    assert_eq!(
        plain.loads(),
        2,
        "no key: every KernelCode loads its own module"
    );
    assert!(!Arc::ptr_eq(&k3.module, &k4.module));
    assert_eq!(
        resident_module_count(),
        2,
        "only the two keyed modules are resident"
    );
    drop((k1, k2, c1, c2));
    assert_eq!(resident_module_count(), 0, "dead entries are dropped");
    let again = code(bytes);
    let k5 = again.load_on(&home).expect("load");
    assert_eq!(home.loads(), 2);
    assert_eq!(resident_module_count(), 1);
    drop(k5);
}
