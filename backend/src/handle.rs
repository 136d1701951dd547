//! The handle: a registry of engines and a stream, and the engine heuristic.
//!
//! This module owns engine registration (unique ids), lookup by id and name (routing), and the
//! heuristic that orders engine configs for a graph. It never builds or runs plans (the
//! execution plan descriptor does) and loads no plugins itself: the caller registers engines
//! (upstream `hipdnnCreate` loads plugins from paths; here that is replaced with in-process
//! registration).

use crate::engine::{Engine, EngineConfig};
use crate::graph::OperationGraph;
use crate::status::{BackendError, BackendResult, Status};
use std::sync::Arc;

/// `hipdnnBackendHeurMode_t`: how the heuristic orders engine configs.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeuristicMode {
    /// `HIPDNN_HEUR_MODE_FALLBACK` (0): every applicable engine, the graph's preferred engine
    /// first (when set and applicable), then registration order.
    #[default]
    Fallback = 0,
}

/// A handle (upstream `hipdnnHandle_t`): engine registry plus stream.
///
/// Engines are shared (`Arc`) so plans built or loaded through the handle can keep their
/// engine alive for their own lifetime.
#[derive(Default)]
pub struct BackendHandle {
    engines: Vec<Arc<dyn Engine>>,
    /// `engines[i].id()`, computed once at registration (an id hashes the engine's name; the
    /// execute path looks engines up by id on every call).
    engine_ids: Vec<i64>,
    /// Engines this handle knows of but does not have, with why and what to do instead
    /// ([`BackendHandle::note_absent_engine`]); used only to explain a plan load.
    absent: Vec<AbsentEngine>,
    stream: u64,
    /// Where the engine-override file is read from ([`crate::heur_config`]).
    override_source: crate::heur_config::OverrideSource,
    /// Architecture of the device the engines run on (`sm_90`, `gfx942`, `cpu`), for
    /// engine-override rules that name one.
    device_arch: Option<String>,
}

/// An engine a handle does not have, noted so that a plan saved by it is explained on load.
#[derive(Debug, Clone)]
struct AbsentEngine {
    name: String,
    id: i64,
    note: String,
}

impl std::fmt::Debug for BackendHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendHandle")
            .field(
                "engines",
                &self.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            )
            .field("stream", &self.stream)
            .finish()
    }
}

impl BackendHandle {
    /// A handle with no engines and the default stream (0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `engine` to the registry (after the ones already there).
    ///
    /// # Errors
    /// `BAD_PARAM` "duplicate engine id N: …" when an engine with the same id is registered
    /// (upstream checks that engine ids are unique across loaded plugins).
    pub fn register_engine(&mut self, engine: Arc<dyn Engine>) -> BackendResult<()> {
        let id = engine.id();
        if let Some(old) = self.engine(id) {
            return Err(BackendError::new(
                Status::BadParam,
                format!(
                    "duplicate engine id {id}: engine \"{}\" is already registered, cannot add \
                     \"{}\"",
                    old.name(),
                    engine.name()
                ),
            ));
        }
        self.engines.push(engine);
        self.engine_ids.push(id);
        Ok(())
    }

    /// The registered engines, in registration order.
    pub fn engines(&self) -> &[Arc<dyn Engine>] {
        &self.engines
    }

    /// The engine with id `engine_id`, if registered.
    pub fn engine(&self, engine_id: i64) -> Option<&Arc<dyn Engine>> {
        let i = self.engine_ids.iter().position(|&id| id == engine_id)?;
        self.engines.get(i)
    }

    /// The engine serving `engine_id`, as plan routing needs it.
    ///
    /// # Errors
    /// `INTERNAL_ERROR` "Invalid engine ID: N" (upstream text) when no engine has that id.
    pub fn engine_for(&self, engine_id: i64) -> BackendResult<&Arc<dyn Engine>> {
        self.engine(engine_id).ok_or_else(|| {
            BackendError::new(
                Status::InternalError,
                format!("Invalid engine ID: {engine_id}"),
            )
        })
    }

    /// Notes that this handle does not have the engine named `name`, with `note` saying why and
    /// what to do instead (e.g. "this handle is on the CPU: …"). The note only explains a plan
    /// load that names this engine ([`Self::engine_for_plan`]); nothing is registered.
    pub fn note_absent_engine(&mut self, name: &str, note: impl Into<String>) {
        let id = crate::engine::engine_id_from_name(name);
        self.absent.retain(|a| a.id != id);
        self.absent.push(AbsentEngine {
            name: name.to_string(),
            id,
            note: note.into(),
        });
    }

    /// The engine a saved plan names (its envelope's engine id), as plan loading needs it.
    ///
    /// # Errors
    /// `NOT_SUPPORTED` "Invalid engine ID: N: …" (upstream's text first) when no engine of this
    /// handle has that id. The message names the engine when the handle noted it as absent
    /// ([`Self::note_absent_engine`]: its name and the note), else says the plan comes from an
    /// engine this handle does not have; it then lists this handle's engines. Upstream's
    /// deserialization answers `INTERNAL_ERROR` here; a plan from an engine the handle lacks
    /// is a plan this handle does not support (upstream's status for an engine id or name the
    /// handle does not know, `hipdnnGetEngineNameById_ext` / `hipdnnGetEngineIdByName_ext`),
    /// not an internal fault.
    pub fn engine_for_plan(&self, engine_id: i64) -> BackendResult<&Arc<dyn Engine>> {
        self.engine(engine_id).ok_or_else(|| {
            let have = self
                .engines
                .iter()
                .map(|e| format!("\"{}\"", e.name()))
                .collect::<Vec<_>>()
                .join(", ");
            let have = if have.is_empty() {
                "no engines".to_string()
            } else {
                have
            };
            let message = match self.absent.iter().find(|a| a.id == engine_id) {
                Some(a) => format!(
                    "Invalid engine ID: {engine_id}: the plan was saved by engine \"{}\", which \
                     this handle does not have (it has {have}); {}",
                    a.name, a.note
                ),
                None => format!(
                    "Invalid engine ID: {engine_id}: the plan was saved by an engine this handle \
                     does not have (it has {have}); load it on a handle that registers that engine"
                ),
            };
            BackendError::new(Status::NotSupported, message)
        })
    }

    /// Id of the engine named `name` (upstream `hipdnnGetEngineIdByName_ext`).
    ///
    /// # Errors
    /// `NOT_SUPPORTED` when no registered engine has that name.
    pub fn engine_id_by_name(&self, name: &str) -> BackendResult<i64> {
        self.engines
            .iter()
            .find(|e| e.name() == name)
            .map(|e| e.id())
            .ok_or_else(|| {
                BackendError::new(Status::NotSupported, format!("no engine named \"{name}\""))
            })
    }

    /// Sets the stream (upstream `hipdnnSetStream`; an opaque `hipStream_t`, 0 = default).
    pub fn set_stream(&mut self, stream: u64) {
        self.stream = stream;
    }

    /// The stream passed to engines on execute.
    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// Where engine-override rules are read from (default: the file `HIPDNN_HEUR_CONFIG_PATH`
    /// names, read at each [`BackendHandle::engine_configs`]).
    pub fn set_override_source(&mut self, source: crate::heur_config::OverrideSource) {
        self.override_source = source;
    }

    /// See [`BackendHandle::set_override_source`].
    pub fn override_source(&self) -> &crate::heur_config::OverrideSource {
        &self.override_source
    }

    /// Sets the architecture of the device the engines run on (`sm_90`, `gfx942`, or
    /// [`crate::heur_config::CPU_ARCH`]); engine-override rules with a `device_arch` apply only
    /// when it is equal.
    pub fn set_device_arch(&mut self, arch: impl Into<String>) {
        self.device_arch = Some(arch.into());
    }

    /// See [`BackendHandle::set_device_arch`]; `None` until set.
    pub fn device_arch(&self) -> Option<&str> {
        self.device_arch.as_deref()
    }

    /// The engine heuristic (upstream `ENGINEHEUR` descriptor): engine configs for `graph`,
    /// best first. Engines whose [`Engine::check_applicable`] passes are listed, each once with
    /// default knobs; see [`HeuristicMode::Fallback`] for the order. The engine-override file
    /// ([`BackendHandle::set_override_source`], [`crate::heur_config`]) may then put a config
    /// first: the engine of the first matching rule with the rule's knobs (that engine's
    /// default config stays in the list after it, so a rule whose knobs no longer build falls
    /// back); the graph's preferred engine id, if any, comes before everything.
    ///
    /// # Errors
    /// `NOT_SUPPORTED` "no engine is applicable to the graph: …" naming each engine and its
    /// refusal when the list would be empty (upstream returns an empty result and the frontend
    /// fails later; we fail here with the reasons).
    pub fn engine_configs(
        &self,
        graph: &OperationGraph,
        mode: HeuristicMode,
    ) -> BackendResult<Vec<EngineConfig>> {
        let HeuristicMode::Fallback = mode;
        let mut configs = self.applicable_engine_configs(graph)?;
        crate::heur_config::apply(
            &self.override_source,
            self.device_arch.as_deref(),
            &self.engines,
            graph,
            &mut configs,
        );
        if let Some(pref) = graph.preferred_engine_id()
            && let Some(pos) = configs.iter().position(|c| c.engine_id == pref)
        {
            let c = configs.remove(pos);
            configs.insert(0, c);
        }
        Ok(configs)
    }

    /// The engines whose [`Engine::check_applicable`] passes for `graph`, in registration
    /// order, each with default knobs (for a graph with the override-shape flag, only engines
    /// that [`Engine::supports_shape_overrides`]): [`BackendHandle::engine_configs`] before the
    /// engine-override file and the preferred engine reorder it (autotuning's candidates).
    ///
    /// # Errors
    /// As [`BackendHandle::engine_configs`].
    pub fn applicable_engine_configs(
        &self,
        graph: &OperationGraph,
    ) -> BackendResult<Vec<EngineConfig>> {
        let mut configs: Vec<EngineConfig> = Vec::new();
        let mut refusals = Vec::new();
        for e in &self.engines {
            if graph.is_override_shape_enabled() && !e.supports_shape_overrides() {
                refusals.push(format!(
                    "{}: the graph has the override-shape flag and this engine does not execute \
                     shape overrides",
                    e.name()
                ));
                continue;
            }
            match e.check_applicable(graph) {
                Ok(()) => configs.push(EngineConfig {
                    engine_id: e.id(),
                    knob_choices: vec![],
                }),
                Err(err) => refusals.push(format!("{}: {}", e.name(), err.message)),
            }
        }
        if configs.is_empty() {
            let why = if refusals.is_empty() {
                "no engines registered".into()
            } else {
                refusals.join("; ")
            };
            return Err(BackendError::new(
                Status::NotSupported,
                format!("no engine is applicable to the graph: {why}"),
            ));
        }
        Ok(configs)
    }
}
