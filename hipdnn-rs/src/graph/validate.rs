//! Graph checks (upstream `Graph::validate`): UIDs, topology, connectivity,
//! tensor rules and per-node required attributes. Checks run in upstream's order and stop
//! at the first failure; messages name the node (`conv_fprop 'ConvFprop_0'`), the tensor and
//! the attribute.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use super::error::{Error, Result};
use super::tensor::TensorId;
use super::types::*;
use super::{Graph, NodeId, Operation};
use hipdnn_backend::ops::conv::SpatialAttr;
use hipdnn_backend::ops::{gather, reduction, sdpa};

fn label(op: &Operation) -> String {
    format!("{} '{}'", op.method(), op.name())
}

impl Graph {
    /// Assigns a UID to every tensor that has none: in insertion order, counting up from 0 and
    /// skipping values already used (deterministic version of upstream's rule).
    pub fn assign_uids(&mut self) -> &mut Self {
        let used: HashSet<i64> = self.tensors.iter().filter_map(|t| t.uid).collect();
        let mut next = 0i64;
        for t in self.tensors.iter_mut().filter(|t| t.uid.is_none()) {
            while used.contains(&next) {
                next += 1;
            }
            t.uid = Some(next);
            next += 1;
        }
        self
    }

    /// UID of every tensor by arena index, after checking they are unique. A tensor without a
    /// UID gets the one [`Graph::assign_uids`] would give it (the graph is not changed), so an
    /// unbuilt graph validates and saves with the same UIDs a build assigns.
    pub(crate) fn checked_uids(&self) -> Result<Vec<i64>> {
        let used: HashSet<i64> = self.tensors.iter().filter_map(|t| t.uid).collect();
        let mut next = 0i64;
        let mut uids = Vec::with_capacity(self.tensors.len());
        let mut seen = HashSet::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            let uid = match t.uid {
                Some(uid) => uid,
                None => {
                    while used.contains(&next) {
                        next += 1;
                    }
                    next += 1;
                    next - 1
                }
            };
            if !seen.insert(uid) {
                return Err(Error::invalid(format!(
                    "Duplicate tensor UIDs found in the graph (UID {uid}, tensor #{i} '{}')",
                    t.name
                )));
            }
            uids.push(uid);
        }
        Ok(uids)
    }

    fn check_handles(&self) -> Result<()> {
        let n = self.tensors.len();
        for op in &self.nodes {
            let (ins, outs) = op.inputs_outputs();
            if let Some(t) = ins.iter().chain(&outs).find(|t| t.index() >= n) {
                return Err(Error::invalid(format!(
                    "{}: refers to tensor #{} which is not in this graph",
                    label(op),
                    t.index()
                )));
            }
        }
        Ok(())
    }

    /// Node order for writing: a stable topological sort (Kahn; among ready nodes, the lowest
    /// insertion index first).
    ///
    /// # Errors
    /// `InvalidValue` if a tensor is written by two nodes, a handle is foreign, or the nodes
    /// form a cycle.
    pub fn topological_order(&self) -> Result<Vec<NodeId>> {
        self.check_handles()?;
        let mut producer: HashMap<TensorId, usize> = HashMap::new();
        let io: Vec<(Vec<TensorId>, Vec<TensorId>)> =
            self.nodes.iter().map(Operation::inputs_outputs).collect();
        for (i, (_, outs)) in io.iter().enumerate() {
            for &t in outs {
                if let Some(p) = producer.insert(t, i) {
                    if p != i {
                        return Err(Error::invalid(format!(
                            "tensor '{}' is written by both {} and {}",
                            self.tensors[t.index()].name,
                            label(&self.nodes[p]),
                            label(&self.nodes[i])
                        )));
                    }
                }
            }
        }
        let mut indegree = vec![0usize; self.nodes.len()];
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, (ins, _)) in io.iter().enumerate() {
            let mut preds: Vec<usize> = ins
                .iter()
                .filter_map(|t| producer.get(t).copied())
                .collect();
            preds.sort_unstable();
            preds.dedup();
            for p in preds {
                indegree[i] += 1;
                consumers[p].push(i);
            }
        }
        let mut ready: BinaryHeap<Reverse<usize>> = (0..self.nodes.len())
            .filter(|&i| indegree[i] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(Reverse(i)) = ready.pop() {
            order.push(NodeId(i as u32));
            for &c in &consumers[i] {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.push(Reverse(c));
                }
            }
        }
        if order.len() != self.nodes.len() {
            let stuck = (0..self.nodes.len())
                .find(|&i| indegree[i] > 0)
                .unwrap_or(0);
            return Err(Error::invalid(format!(
                "the graph has a cycle (through {}); cannot sort it topologically",
                label(&self.nodes[stuck])
            )));
        }
        Ok(order)
    }

    fn check_connected(&self) -> Result<()> {
        if self.nodes.len() <= 1 {
            return Ok(());
        }
        // Union-find over nodes; nodes sharing any tensor are joined.
        let mut parent: Vec<usize> = (0..self.nodes.len()).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        let mut owner: HashMap<TensorId, usize> = HashMap::new();
        for (i, op) in self.nodes.iter().enumerate() {
            let (ins, outs) = op.inputs_outputs();
            for t in ins.into_iter().chain(outs) {
                if let Some(&j) = owner.get(&t) {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    parent[a] = b;
                } else {
                    owner.insert(t, i);
                }
            }
        }
        let root = find(&mut parent, 0);
        if let Some(i) = (1..self.nodes.len()).find(|&i| find(&mut parent, i) != root) {
            return Err(Error::invalid(format!(
                "the graph has more than one connected component ({} is not connected to {}); please split the graph",
                label(&self.nodes[i]),
                label(&self.nodes[0])
            )));
        }
        Ok(())
    }

    /// The data type `t` has after upstream's `fill_from_context`: its own type when set, else
    /// the graph's intermediate type for a virtual tensor and the io type otherwise.
    pub fn context_data_type(&self, t: &crate::TensorAttributes) -> DataType {
        match t.data_type {
            DataType::Unset if t.is_virtual => self.intermediate_data_type,
            DataType::Unset => self.io_data_type,
            dt => dt,
        }
    }

    /// Checks the graph (upstream `Graph::validate`), in this order:
    /// 1. a tensor without a UID counts with the one [`Graph::assign_uids`] would give it (as
    ///    `build` assigns; the graph is not changed);
    /// 2. UIDs are unique (`InvalidValue` "Duplicate tensor UIDs found in the graph");
    /// 3. handles belong to the graph, each tensor has at most one producer, no cycle
    ///    (`InvalidValue`);
    /// 4. the nodes form one connected component (`InvalidValue` "... please split the graph");
    /// 5. every tensor used by a node passes [`crate::TensorAttributes::validate`], an unset
    ///    data type counting as the graph's intermediate (virtual) or io type (upstream
    ///    `fill_from_context`);
    /// 6. per-node attributes: required tensors and settings present (`AttributeNotSet`),
    ///    geometry lists match the spatial rank and are positive, modes fit the inputs
    ///    (`InvalidValue`); a `hipdnn_rs.gather` custom op follows its rule
    ///    ([`hipdnn_backend::ops::gather`]; `InvalidValue`);
    /// 7. per-node shapes, the op table's rule for each op (`InvalidValue`
    ///    `"<op> '<node>': shape mismatch: <tensors with their dims>; rule: <rule>"`): pointwise inputs
    ///    broadcast to the output; matmul inner dims agree, batch dims broadcast, c is
    ///    (..batch, M, N); convolutions (all three directions) have one rank, channels that
    ///    group, y's N and K from x and w and the output extents of the geometry;
    ///    normalization parameters broadcast to x and y has x's dims; SDPA q, k, v agree in
    ///    batch, head dim, key/value heads and length and o is (B, H, S_q, D_v); a reduction's
    ///    y keeps x's rank with each dim kept or 1; a resample's y has the pooled extents;
    ///    a backward node's gradients have the dims of what they differentiate.
    ///
    /// Does not modify the graph.
    ///
    /// # Errors
    /// The first failing check, as above.
    pub fn validate(&self) -> Result<()> {
        self.checked_uids()?;
        self.topological_order()?;
        self.check_connected()?;
        let mut used = vec![false; self.tensors.len()];
        for op in &self.nodes {
            let (ins, outs) = op.inputs_outputs();
            for t in ins.into_iter().chain(outs) {
                used[t.index()] = true;
            }
        }
        for (i, t) in self.tensors.iter().enumerate() {
            if used[i] {
                // fill_from_context: an unset type takes the intermediate (virtual) or io type.
                let mut t = t.clone();
                t.data_type = self.context_data_type(&t);
                t.validate(&format!("#{i} '{}'", t.name))?;
            }
        }
        for op in &self.nodes {
            self.validate_node(op)?;
        }
        Ok(())
    }

    /// The `hipdnn_rs.gather` custom op's rule ([`gather`]): inputs (table, index), one output,
    /// no data; a float table of dims (V, H); an INT32 / INT64 index; y of the table's type
    /// and dims `index.dims ++ [H]`.
    fn validate_gather(&self, l: &str, a: &crate::CustomOpAttributes) -> Result<()> {
        let id = gather::GATHER_OP_ID;
        if a.inputs.len() != 2 || a.outputs.len() != 1 {
            return Err(Error::invalid(format!(
                "{l}: {id} takes two inputs (table, index) and one output, the node has {} and {}",
                a.inputs.len(),
                a.outputs.len()
            )));
        }
        if !a.data.is_empty() {
            return Err(Error::invalid(format!(
                "{l}: {id} takes no data, the node has {} bytes",
                a.data.len()
            )));
        }
        let t = |id: TensorId| &self.tensors[id.index()];
        let (table, index, y) = (t(a.inputs[0]), t(a.inputs[1]), t(a.outputs[0]));
        let tt = self.context_data_type(table);
        if !matches!(
            tt,
            DataType::Float | DataType::Half | DataType::BFloat16 | DataType::Double
        ) {
            return Err(Error::invalid(format!(
                "{l}: {id} table '{}' is {tt:?}; the table holds floating-point rows",
                table.name
            )));
        }
        let it = self.context_data_type(index);
        if !matches!(it, DataType::Int32 | DataType::Int64) {
            return Err(Error::invalid(format!(
                "{l}: {id} index '{}' is {it:?}, expected Int32 or Int64",
                index.name
            )));
        }
        let Some(want) = gather::output_dims(&index.dims, &table.dims) else {
            return Err(Error::invalid(format!(
                "{l}: {id} table '{}' has dims {:?}, expected (V, H) with every leading dim 1",
                table.name, table.dims
            )));
        };
        let yt = self.context_data_type(y);
        if y.dims != want || yt != tt {
            return Err(Error::invalid(format!(
                "{l}: {id} output '{}' is {yt:?} {:?}, expected the table's type {tt:?} and dims {want:?} (index dims, then H)",
                y.name, y.dims
            )));
        }
        Ok(())
    }

    fn dims(&self, t: Option<TensorId>) -> &[i64] {
        t.map_or(&[], |t| &self.tensors[t.index()].dims)
    }

    fn validate_node(&self, op: &Operation) -> Result<()> {
        let l = label(op);
        // Required tensors: writing them checks presence; reuse the wire writer's rule.
        let uids: Vec<i64> = self.tensors.iter().map(|t| t.uid.unwrap_or(0)).collect();
        let c = super::kinds::Wctx {
            uids: &uids,
            label: &l,
        };
        op.json_write(&c)?;
        let need = |ok: bool, attr: &str| -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(Error::not_set(format!(
                    "{l}: attribute '{attr}' is not set"
                )))
            }
        };
        match op {
            Operation::Pointwise(a) => {
                need(a.mode != PointwiseMode::Unset, "mode")?;
                let given = 1 + usize::from(a.in_1.is_some()) + usize::from(a.in_2.is_some());
                if given != a.mode.arity() {
                    return Err(Error::invalid(format!(
                        "{l}: mode {} takes {} input(s) but {given} are set",
                        a.mode.schema_name(),
                        a.mode.arity()
                    )));
                }
            }
            Operation::ConvFprop(a) => self.check_conv(
                &l,
                "x",
                self.dims(a.x),
                &a.pre_padding,
                &a.post_padding,
                &a.stride,
                &a.dilation,
                a.conv_mode,
            )?,
            Operation::ConvDgrad(a) => self.check_conv(
                &l,
                "dx",
                self.dims(a.dx),
                &a.pre_padding,
                &a.post_padding,
                &a.stride,
                &a.dilation,
                a.conv_mode,
            )?,
            Operation::ConvWgrad(a) => self.check_conv(
                &l,
                "x",
                self.dims(a.x),
                &a.pre_padding,
                &a.post_padding,
                &a.stride,
                &a.dilation,
                a.conv_mode,
            )?,
            Operation::Matmul(a) => {
                let (da, db) = (self.dims(a.a), self.dims(a.b));
                if da.len() < 2 || db.len() < 2 {
                    return Err(Error::invalid(format!(
                        "{l}: a and b need rank >= 2 (got {} and {})",
                        da.len(),
                        db.len()
                    )));
                }
            }
            Operation::Reduction(a) => need(reduction::is_operator(a.mode.to_wire()), "mode")?,
            Operation::ResampleFwd(a) => {
                need(a.resample_mode != ResampleMode::NotSet, "resample_mode")?;
                self.check_window(
                    &l,
                    "x",
                    self.dims(a.x),
                    &a.pre_padding,
                    &a.post_padding,
                    &a.stride,
                    &a.window,
                )?
            }
            Operation::ResampleBwd(a) => {
                need(a.resample_mode != ResampleMode::NotSet, "resample_mode")?;
                self.check_window(
                    &l,
                    "dx",
                    self.dims(a.dx),
                    &a.pre_padding,
                    &a.post_padding,
                    &a.stride,
                    &a.window,
                )?
            }
            Operation::Layernorm(a) => {
                need(a.forward_phase != NormFwdPhase::NotSet, "forward_phase")?
            }
            Operation::RmsNorm(a) => {
                need(a.forward_phase != NormFwdPhase::NotSet, "forward_phase")?
            }
            Operation::Batchnorm(a) => {
                let running = [
                    a.prev_running_mean.is_some(),
                    a.prev_running_variance.is_some(),
                    a.momentum.is_some(),
                ];
                if running.iter().any(|&b| b) && !running.iter().all(|&b| b) {
                    return Err(Error::not_set(format!(
                        "{l}: attributes 'prev_running_mean', 'prev_running_variance' and 'momentum' must be set together"
                    )));
                }
            }
            Operation::CustomOp(a) => {
                need(!a.custom_op_id.is_empty(), "custom_op_id")?;
                if !a.custom_op_id.contains('.') {
                    return Err(Error::invalid(format!(
                        "{l}: attribute 'custom_op_id' is '{}', expected '<plugin>.<operation>'",
                        a.custom_op_id
                    )));
                }
                if a.custom_op_id == gather::GATHER_OP_ID {
                    self.validate_gather(&l, a)?;
                }
            }
            Operation::Sdpa(a) => {
                for (n, t) in [("q", a.q), ("k", a.k), ("v", a.v)] {
                    let d = self.dims(t);
                    if d.len() != sdpa::RANK {
                        return Err(Error::invalid(format!(
                            "{l}: {n} must be 4-D (B, H, S, D), got {d:?}"
                        )));
                    }
                }
                if let Some(p) = a.dropout_probability {
                    if !sdpa::dropout_probability_ok(p) {
                        return Err(Error::invalid(format!(
                            "{l}: attribute 'dropout_probability' is {p}, must be in [0, 1)"
                        )));
                    }
                }
            }
            _ => {}
        }
        self.check_shapes(&l, op)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_conv(
        &self,
        l: &str,
        xname: &str,
        x: &[i64],
        pre: &[i64],
        post: &[i64],
        stride: &[i64],
        dil: &[i64],
        mode: ConvMode,
    ) -> Result<()> {
        if mode == ConvMode::Unset {
            return Err(Error::not_set(format!(
                "{l}: attribute 'conv_mode' is not set"
            )));
        }
        self.check_geometry(
            l,
            xname,
            x,
            &[
                ("pre_padding", pre),
                ("post_padding", post),
                ("stride", stride),
                ("dilation", dil),
            ],
        )?;
        for (attr, v) in [(SpatialAttr::Stride, stride), (SpatialAttr::Dilation, dil)] {
            if let Some(s) = attr.first_bad_entry(v) {
                return Err(Error::invalid(format!(
                    "{l}: attribute '{}' has entry {s}, must be > 0",
                    attr.name()
                )));
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn check_window(
        &self,
        l: &str,
        xname: &str,
        x: &[i64],
        pre: &[i64],
        post: &[i64],
        stride: &[i64],
        window: &[i64],
    ) -> Result<()> {
        self.check_geometry(
            l,
            xname,
            x,
            &[
                ("pre_padding", pre),
                ("post_padding", post),
                ("stride", stride),
                ("window", window),
            ],
        )?;
        for (attr, v) in [(SpatialAttr::Stride, stride), (SpatialAttr::Window, window)] {
            if let Some(s) = attr.first_bad_entry(v) {
                return Err(Error::invalid(format!(
                    "{l}: attribute '{}' has entry {s}, must be > 0",
                    attr.name()
                )));
            }
        }
        Ok(())
    }

    fn check_geometry(
        &self,
        l: &str,
        xname: &str,
        x: &[i64],
        lists: &[(&str, &[i64])],
    ) -> Result<()> {
        let spatial = x.len().saturating_sub(2);
        for (n, v) in lists {
            if v.is_empty() {
                return Err(Error::not_set(format!("{l}: attribute '{n}' is not set")));
            }
            if v.len() != spatial {
                return Err(Error::invalid(format!(
                    "{l}: attribute '{n}' has {} entries, {xname} has {spatial} spatial dims",
                    v.len()
                )));
            }
        }
        Ok(())
    }
}
