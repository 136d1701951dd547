//! Device graphs: the launches of one or more plans' executes recorded once (a CUDA graph on
//! NVIDIA, a hipGraph on AMD) and replayed with a single launch, without the host work of an
//! execute (variant-pack checks, argument packing, one driver call per kernel).
//!
//! [`Handle::capture`] runs a closure that executes plans on the handle as usual; their
//! launches are recorded on a stream of the capture's own instead of running.
//! [`DeviceGraph::replay`] queues them on the handle's stream; [`DeviceGraph::update`] records
//! the same executes with other buffers and gives the graph their addresses. A plan whose
//! executes do more than queue device work (a CPU reference plan, a benchmarking plan that has
//! not timed its candidates yet) is refused by name when it is executed inside a capture.
//!
//! Memory: every device [`crate::Buffer`] bound during the capture (or the last update) is
//! leased by the graph, so its memory stays allocated until the graph is dropped or updated,
//! even if the buffer is dropped first: a replay never reaches freed memory. Replays read and
//! write those buffers when they run, like executes.

use hipdnn_hip::{CapturedGraph, DriverError, GraphExec, Stream};

use crate::graph::{Error, ErrorCode, Result};
use crate::handle::{Handle, Recorder, Recording};

pub use crate::handle::CAPTURE;

fn driver_error(what: &str, e: DriverError) -> Error {
    Error::new(
        ErrorCode::HipdnnBackendError,
        format!("{CAPTURE}: {what}: {e}"),
    )
}

/// The executes of one or more plans recorded into a device graph (CUDA graph / hipGraph) by
/// [`Handle::capture`], replayed with one launch.
///
/// # Example
/// ```no_run
/// use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes as T};
/// use hipdnn::VariantPack;
/// # fn main() -> hipdnn::Result<()> {
/// let mut handle = Handle::gpu()?;
/// let mut g = Graph::new();
/// g.set_io_data_type(DataType::Float);
/// let a = g.tensor(T::new("a").uid(1).dims([64, 64]));
/// let b = g.tensor(T::new("b").uid(2).dims([64, 64]));
/// let c = g.matmul(a, b, MatmulAttributes::new());
/// g.set_output(c, true).set_uid(c, 3);
/// g.build(&handle)?;
/// let ab = Buffer::from_slice_on(&handle, &[1f32; 64 * 64])?;
/// let bb = Buffer::from_slice_on(&handle, &[0.5f32; 64 * 64])?;
/// let mut cb = Buffer::<f32>::alloc(&handle, 64 * 64)?;
/// // Recorded, not run: cb is still zero here.
/// let graph = handle.capture(|h| {
///     let pack = VariantPack::new().input(1, &ab).input(2, &bb).output(3, &mut cb);
///     g.execute(h, pack, None)
/// })?;
/// graph.replay(&handle)?; // the matmul's launches, one driver call
/// assert_eq!(cb.to_vec()?, vec![32f32; 64 * 64]); // the copy waits for the replay
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DeviceGraph {
    exec: GraphExec,
    /// The non-blocking stream captures run on (reused by updates).
    stream: Stream,
    /// Device ordinal of the capture.
    ordinal: usize,
    recording: Recording,
    nodes: usize,
}

impl DeviceGraph {
    /// Queues one replay of the recorded executes on `handle`'s stream (the default stream
    /// unless the handle's stream was set), ordered with the executes and copies made on it.
    /// Returns before the work completes; read outputs after [`Handle::synchronize`] or a
    /// copy to the host (which waits for the default stream).
    ///
    /// # Errors
    /// `GRAPH_NOT_SUPPORTED` `graph capture: the graph was captured on GPU 0, the handle runs
    /// on the CPU` (or `GPU 1`) for a handle of another device; `HIPDNN_BACKEND_ERROR`
    /// `graph capture: replay: hipGraphLaunch (cuGraphLaunch) failed: …` when the driver
    /// refuses.
    pub fn replay(&self, handle: &Handle) -> Result<()> {
        let dev = self.same_device(handle)?;
        hipdnn_engines::ingestor::hip_device::on_handle_stream(
            dev,
            handle.backend().stream(),
            |s| self.exec.launch(s),
        )
        .map_err(|e| driver_error("replay", e))
    }

    /// Records `record`'s executes again (they must be the same plans in the same order, with
    /// other buffers or the same) and gives this graph their buffer addresses
    /// (`hipGraphExecUpdate` / `cuGraphExecUpdate`): cuDNN frontend's `update_cuda_graph`.
    /// The graph then leases the new buffers and releases the old ones.
    ///
    /// # Errors
    /// As [`Handle::capture`]; `INVALID_VALUE` `graph capture: the update's executes do not
    /// match the captured graph (…)` naming both recordings' execute and node counts and the
    /// driver's reason (e.g. "the topology changed") when they differ — the graph is then
    /// unchanged and replays as before.
    pub fn update(
        &mut self,
        handle: &mut Handle,
        record: impl FnOnce(&Handle) -> Result<()>,
    ) -> Result<()> {
        self.same_device(handle)?;
        let (graph, recording) = handle.record_on(&self.stream, record)?;
        let nodes = graph
            .node_count()
            .map_err(|e| driver_error("counting nodes", e))?;
        self.exec.update(&graph).map_err(|e| {
            Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "{CAPTURE}: the update's executes do not match the captured graph ({} \
                     executes, {} nodes captured; {} executes, {nodes} nodes now): {}: {}; \
                     capture a new graph for other executes",
                    self.recording.executes, self.nodes, recording.executes, e.name, e.text
                ),
            )
        })?;
        self.recording = recording;
        self.nodes = nodes;
        Ok(())
    }

    /// How many executes the capture (or last update) recorded.
    pub fn executes(&self) -> usize {
        self.recording.executes
    }

    /// How many nodes (kernel launches and workspace fills) the device graph holds.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    fn same_device<'h>(
        &self,
        handle: &'h Handle,
    ) -> Result<&'h std::sync::Arc<hipdnn_hip::Device>> {
        match handle.gpu_device() {
            Some(d) if d.info().ordinal == self.ordinal => Ok(d),
            other => Err(Error::new(
                ErrorCode::GraphNotSupported,
                format!(
                    "{CAPTURE}: the graph was captured on GPU {}, the handle runs on {}",
                    self.ordinal,
                    other.map_or_else(
                        || "the CPU".to_string(),
                        |d| format!("GPU {}", d.info().ordinal)
                    )
                ),
            )),
        }
    }
}

impl Handle {
    /// Records the executes `record` makes on this handle into a [`DeviceGraph`] instead of
    /// running them (stream capture in relaxed mode on a non-blocking stream of the capture's
    /// own; cuDNN frontend's `populate_cuda_graph`). Several plans — a model's whole pass —
    /// can be executed inside one capture; replay them with [`DeviceGraph::replay`]. Only
    /// executes are recorded: copies made inside `record` run once, at capture time.
    ///
    /// Inside `record`, every execute checks first that its plan can be captured; the
    /// handle's stream is restored afterwards, whatever `record` returns.
    ///
    /// # Errors
    /// `GRAPH_NOT_SUPPORTED` `graph capture: the handle runs on the CPU; …` for a CPU handle;
    /// `GRAPH_NOT_SUPPORTED` `graph capture: engine "<name>": <reason>` from the execute of a
    /// plan that cannot be captured (the CPU reference engine computes on the host; a
    /// benchmarking plan must be executed once first); `INVALID_VALUE` `graph capture:
    /// nothing was executed …` when `record` executed no plan; `record`'s own error (the
    /// partial recording is dropped); `HIPDNN_BACKEND_ERROR` `graph capture: <step>: <driver
    /// error>` when the driver refuses (e.g. a runtime without the graph API:
    /// `hipErrorNotSupported`).
    pub fn capture(&mut self, record: impl FnOnce(&Handle) -> Result<()>) -> Result<DeviceGraph> {
        let dev = self.gpu_device().cloned().ok_or_else(|| {
            Error::new(
                ErrorCode::GraphNotSupported,
                format!(
                    "{CAPTURE}: the handle runs on the CPU; device graphs need a GPU handle \
                     (Handle::gpu), and a CPU plan is executed directly"
                ),
            )
        })?;
        let stream =
            Stream::new_non_blocking(&dev).map_err(|e| driver_error("creating its stream", e))?;
        let (graph, recording) = self.record_on(&stream, record)?;
        let nodes = graph
            .node_count()
            .map_err(|e| driver_error("counting nodes", e))?;
        let exec = graph
            .instantiate()
            .map_err(|e| driver_error("instantiating", e))?;
        Ok(DeviceGraph {
            exec,
            stream,
            ordinal: dev.info().ordinal,
            recording,
            nodes,
        })
    }

    /// Runs `record` with this handle's stream set to `stream`, capturing it, and returns the
    /// recorded graph and what the executes reported.
    fn record_on(
        &mut self,
        stream: &Stream,
        record: impl FnOnce(&Handle) -> Result<()>,
    ) -> Result<(CapturedGraph, Recording)> {
        let saved = self.backend().stream();
        self.backend_mut().set_stream(stream.handle_value());
        self.recorder = Some(Recorder::default());
        let mut outcome = Ok(());
        let this = &*self;
        // A panic in `record` is caught only to put the handle back (its own stream, no
        // recorder: the capture stream dies with the caller's frame) and then resumed.
        let captured = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            stream.capture(|| {
                outcome = record(this);
                Ok::<(), DriverError>(())
            })
        }));
        let recording = self
            .recorder
            .take()
            .map(Recorder::into_recording)
            .unwrap_or_default();
        self.backend_mut().set_stream(saved);
        let captured = captured.unwrap_or_else(|p| std::panic::resume_unwind(p));
        let (graph, ()) = captured.map_err(|e| driver_error("recording", e))?;
        outcome?;
        if recording.executes == 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "{CAPTURE}: nothing was executed on the handle inside the capture; execute \
                     the plans to record with the handle the closure is given"
                ),
            ));
        }
        Ok((graph, recording))
    }
}
