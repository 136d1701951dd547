//! Enumerations of the Graph schema (`graph.fbs` §6.1) as Rust enums.
//!
//! Each enum carries the **schema** numbering (not the frontend or C numbering; see reference
//! §5) and converts to and from the generated wire type and the flatc JSON name
//! (`"FLOAT"`, `"CROSS_CORRELATION"`, ...). Unknown wire values are rejected at load time.

use hipdnn_schema::graph as wire;

/// Conversions shared by every schema enum (used by the generic field codecs).
pub(crate) trait SchemaEnum: Copy + Default + PartialEq + std::fmt::Debug {
    /// The generated wire type (`i8` newtype).
    type Wire: Copy;
    /// Enum → wire value.
    fn to_wire(self) -> Self::Wire;
    /// Wire value → enum, `None` when the number names no enumerator.
    fn from_wire(w: Self::Wire) -> Option<Self>;
    /// The raw number of a wire value (for messages).
    fn wire_number(w: Self::Wire) -> i64;
    /// flatc JSON name of the enumerator.
    fn json_name(self) -> &'static str;
    /// Enumerator from its flatc JSON name or its number.
    fn from_json_name(s: &str) -> Option<Self>;
    /// Enumerator from its number.
    fn from_number(n: i64) -> Option<Self>;
}

macro_rules! schema_enum {
    (
        $(#[$m:meta])*
        $name:ident => $wire:ident {
            $( $(#[$vm:meta])* $var:ident = $val:literal => $wname:ident ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i8)]
        pub enum $name {
            $( $(#[$vm])* $var = $val, )*
        }

        impl $name {
            /// Every enumerator, in schema order.
            pub const ALL: &'static [$name] = &[$($name::$var),*];
            /// The schema (wire) number of this enumerator.
            pub fn schema_value(self) -> i8 {
                self as i8
            }
            /// The schema's spelling of this enumerator (as flatc prints it in JSON).
            pub fn schema_name(self) -> &'static str {
                match self { $($name::$var => stringify!($wname)),* }
            }
        }

        impl Default for $name {
            /// The schema default: the enumerator numbered 0.
            fn default() -> Self {
                $name::ALL[0]
            }
        }

        impl SchemaEnum for $name {
            type Wire = wire::$wire;
            fn to_wire(self) -> wire::$wire {
                wire::$wire(self as i8)
            }
            fn from_wire(w: wire::$wire) -> Option<Self> {
                Self::from_number(i64::from(w.0))
            }
            fn wire_number(w: wire::$wire) -> i64 {
                i64::from(w.0)
            }
            fn json_name(self) -> &'static str {
                self.schema_name()
            }
            fn from_json_name(s: &str) -> Option<Self> {
                match s {
                    $(stringify!($wname) => Some($name::$var),)*
                    _ => None,
                }
            }
            fn from_number(n: i64) -> Option<Self> {
                match n {
                    $($val => Some($name::$var),)*
                    _ => None,
                }
            }
        }
    };
}

schema_enum! {
    /// Element type of a tensor (`DataType : byte`, schema numbering; differs from the frontend
    /// numbering for INT4/FP6 and from the C numbering everywhere).
    ///
    /// ```
    /// use hipdnn::DataType;
    /// assert_eq!(DataType::default(), DataType::Unset);
    /// assert_eq!((DataType::Half.schema_name(), DataType::Half.schema_value()), ("HALF", 2));
    /// ```
    DataType => DataType {
        /// `UNSET` (0): not set; filled from the graph's io/intermediate type.
        Unset = 0 => UNSET,
        /// `FLOAT` (1): IEEE binary32.
        Float = 1 => FLOAT,
        /// `HALF` (2): IEEE binary16.
        Half = 2 => HALF,
        /// `BFLOAT16` (3).
        BFloat16 = 3 => BFLOAT16,
        /// `DOUBLE` (4): IEEE binary64.
        Double = 4 => DOUBLE,
        /// `UINT8` (5).
        Uint8 = 5 => UINT8,
        /// `INT32` (6).
        Int32 = 6 => INT32,
        /// `INT8` (7).
        Int8 = 7 => INT8,
        /// `FP8_E4M3` (8).
        Fp8E4m3 = 8 => FP8_E4M3,
        /// `FP8_E5M2` (9).
        Fp8E5m2 = 9 => FP8_E5M2,
        /// `FP8_E8M0` (10).
        Fp8E8m0 = 10 => FP8_E8M0,
        /// `FP4_E2M1` (11).
        Fp4E2m1 = 11 => FP4_E2M1,
        /// `FP6_E2M3` (12).
        Fp6E2m3 = 12 => FP6_E2M3,
        /// `FP6_E3M2` (13).
        Fp6E3m2 = 13 => FP6_E3M2,
        /// `INT4` (14).
        Int4 = 14 => INT4,
        /// `INT64` (15).
        Int64 = 15 => INT64,
        /// `BOOLEAN` (16).
        Boolean = 16 => BOOLEAN,
        /// `FP8_E4M3_FNUZ` (17).
        Fp8E4m3Fnuz = 17 => FP8_E4M3_FNUZ,
        /// `FP8_E5M2_FNUZ` (18).
        Fp8E5m2Fnuz = 18 => FP8_E5M2_FNUZ,
    }
}

impl DataType {
    /// True for the data types a [`crate::Buffer<T>`] holds directly (a Rust element type:
    /// f32, f64, f16, bf16, i32, i64, i8, u8, bool). The others (FP8, FP6, FP4, INT4) are bound
    /// as a `Buffer<u8>` of their bytes, which `Graph::execute` accepts for them.
    ///
    /// ```
    /// use hipdnn::DataType;
    /// assert!(DataType::Half.has_element_type());
    /// assert!(!DataType::Fp8E4m3.has_element_type());
    /// ```
    pub fn has_element_type(self) -> bool {
        matches!(
            self,
            DataType::Float
                | DataType::Double
                | DataType::Half
                | DataType::BFloat16
                | DataType::Int32
                | DataType::Int64
                | DataType::Int8
                | DataType::Uint8
                | DataType::Boolean
        )
    }
}

schema_enum! {
    /// Pointwise operation (`PointwiseMode : byte`).
    ///
    /// ```
    /// use hipdnn::{PointwiseAttributes, PointwiseMode};
    /// let relu = PointwiseAttributes::with_mode(PointwiseMode::ReluFwd);
    /// assert_eq!((relu.mode.arity(), PointwiseMode::Add.arity()), (1, 2));
    /// ```
    PointwiseMode => PointwiseMode {
        /// `UNSET` (0).
        Unset = 0 => UNSET,
        /// `ABS` (1), unary.
        Abs = 1 => ABS,
        /// `ADD` (2), binary.
        Add = 2 => ADD,
        /// `ADD_SQUARE` (3), binary.
        AddSquare = 3 => ADD_SQUARE,
        /// `BINARY_SELECT` (4), ternary.
        BinarySelect = 4 => BINARY_SELECT,
        /// `CEIL` (5), unary.
        Ceil = 5 => CEIL,
        /// `CMP_EQ` (6), binary.
        CmpEq = 6 => CMP_EQ,
        /// `CMP_GE` (7), binary.
        CmpGe = 7 => CMP_GE,
        /// `CMP_GT` (8), binary.
        CmpGt = 8 => CMP_GT,
        /// `CMP_LE` (9), binary.
        CmpLe = 9 => CMP_LE,
        /// `CMP_LT` (10), binary.
        CmpLt = 10 => CMP_LT,
        /// `CMP_NEQ` (11), binary.
        CmpNeq = 11 => CMP_NEQ,
        /// `DIV` (12), binary.
        Div = 12 => DIV,
        /// `ELU_BWD` (13), binary.
        EluBwd = 13 => ELU_BWD,
        /// `ELU_FWD` (14), unary.
        EluFwd = 14 => ELU_FWD,
        /// `ERF` (15), unary.
        Erf = 15 => ERF,
        /// `EXP` (16), unary.
        Exp = 16 => EXP,
        /// `FLOOR` (17), unary.
        Floor = 17 => FLOOR,
        /// `GELU_APPROX_TANH_BWD` (18), binary.
        GeluApproxTanhBwd = 18 => GELU_APPROX_TANH_BWD,
        /// `GELU_APPROX_TANH_FWD` (19), unary.
        GeluApproxTanhFwd = 19 => GELU_APPROX_TANH_FWD,
        /// `GELU_BWD` (20), binary.
        GeluBwd = 20 => GELU_BWD,
        /// `GELU_FWD` (21), unary.
        GeluFwd = 21 => GELU_FWD,
        /// `GEN_INDEX` (22), unary (uses `axis`).
        GenIndex = 22 => GEN_INDEX,
        /// `IDENTITY` (23), unary.
        Identity = 23 => IDENTITY,
        /// `LOG` (24), unary.
        Log = 24 => LOG,
        /// `LOGICAL_AND` (25), binary.
        LogicalAnd = 25 => LOGICAL_AND,
        /// `LOGICAL_NOT` (26), unary.
        LogicalNot = 26 => LOGICAL_NOT,
        /// `LOGICAL_OR` (27), binary.
        LogicalOr = 27 => LOGICAL_OR,
        /// `MAX_OP` (28), binary.
        MaxOp = 28 => MAX_OP,
        /// `MIN_OP` (29), binary.
        MinOp = 29 => MIN_OP,
        /// `MUL` (30), binary.
        Mul = 30 => MUL,
        /// `NEG` (31), unary.
        Neg = 31 => NEG,
        /// `RECIPROCAL` (32), unary.
        Reciprocal = 32 => RECIPROCAL,
        /// `RELU_BWD` (33), binary.
        ReluBwd = 33 => RELU_BWD,
        /// `RELU_FWD` (34), unary.
        ReluFwd = 34 => RELU_FWD,
        /// `RSQRT` (35), unary.
        Rsqrt = 35 => RSQRT,
        /// `SIGMOID_BWD` (36), binary.
        SigmoidBwd = 36 => SIGMOID_BWD,
        /// `SIGMOID_FWD` (37), unary.
        SigmoidFwd = 37 => SIGMOID_FWD,
        /// `SIN` (38), unary.
        Sin = 38 => SIN,
        /// `SOFTPLUS_BWD` (39), binary.
        SoftplusBwd = 39 => SOFTPLUS_BWD,
        /// `SOFTPLUS_FWD` (40), unary.
        SoftplusFwd = 40 => SOFTPLUS_FWD,
        /// `SQRT` (41), unary.
        Sqrt = 41 => SQRT,
        /// `SUB` (42), binary.
        Sub = 42 => SUB,
        /// `SWISH_BWD` (43), binary.
        SwishBwd = 43 => SWISH_BWD,
        /// `SWISH_FWD` (44), unary.
        SwishFwd = 44 => SWISH_FWD,
        /// `TAN` (45), unary.
        Tan = 45 => TAN,
        /// `TANH_BWD` (46), binary.
        TanhBwd = 46 => TANH_BWD,
        /// `TANH_FWD` (47), unary.
        TanhFwd = 47 => TANH_FWD,
    }
}

impl PointwiseMode {
    /// Number of inputs the mode takes: 3 for `BinarySelect`, 2 for the binary modes, 1 for
    /// the unary modes, 0 for `Unset` (the op table [`hipdnn_backend::ops::pointwise`]).
    pub fn arity(self) -> usize {
        hipdnn_backend::ops::pointwise::arity(self.to_wire())
            .map_or(0, hipdnn_backend::ops::pointwise::Arity::inputs)
    }
}

schema_enum! {
    /// Convolution mode (`ConvMode : byte`, schema numbering: reversed vs the frontend).
    ///
    /// ```
    /// use hipdnn::{ConvFpropAttributes, ConvMode};
    /// assert_eq!(ConvFpropAttributes::new().conv_mode, ConvMode::CrossCorrelation);
    /// ```
    ConvMode => ConvMode {
        /// `UNSET` (0).
        Unset = 0 => UNSET,
        /// `CONVOLUTION` (1): flipped kernel.
        Convolution = 1 => CONVOLUTION,
        /// `CROSS_CORRELATION` (2): the usual deep-learning "convolution"; upstream default.
        CrossCorrelation = 2 => CROSS_CORRELATION,
    }
}

schema_enum! {
    /// Forward phase of a normalization (`NormFwdPhase : byte`).
    ///
    /// ```
    /// use hipdnn::{LayernormAttributes, NormFwdPhase};
    /// let a = LayernormAttributes::new().forward_phase(NormFwdPhase::Training);
    /// assert_eq!(a.forward_phase.schema_name(), "TRAINING");
    /// ```
    NormFwdPhase => NormFwdPhase {
        /// `NOT_SET` (0).
        NotSet = 0 => NOT_SET,
        /// `INFERENCE` (1): no saved statistics.
        Inference = 1 => INFERENCE,
        /// `TRAINING` (2): saved statistics are outputs.
        Training = 2 => TRAINING,
    }
}

schema_enum! {
    /// Reduction operator (`ReductionMode : byte`).
    ///
    /// ```
    /// use hipdnn::{ReductionAttributes, ReductionMode};
    /// let mean = ReductionAttributes::new().mode(ReductionMode::Avg);
    /// assert_eq!(mean.mode.schema_name(), "AVG");
    /// ```
    ReductionMode => ReductionMode {
        /// `NOT_SET` (0).
        NotSet = 0 => NOT_SET,
        /// `ADD` (1).
        Add = 1 => ADD,
        /// `MUL` (2).
        Mul = 2 => MUL,
        /// `MIN_OP` (3).
        MinOp = 3 => MIN_OP,
        /// `MAX_OP` (4).
        MaxOp = 4 => MAX_OP,
        /// `AMAX` (5).
        Amax = 5 => AMAX,
        /// `AVG` (6).
        Avg = 6 => AVG,
        /// `NORM1` (7).
        Norm1 = 7 => NORM1,
        /// `NORM2` (8).
        Norm2 = 8 => NORM2,
        /// `MUL_NO_ZEROS` (9).
        MulNoZeros = 9 => MUL_NO_ZEROS,
    }
}

schema_enum! {
    /// Resampling (pooling) mode (`ResampleMode : byte`).
    ///
    /// ```
    /// use hipdnn::{ResampleFwdAttributes, ResampleMode};
    /// let max_pool = ResampleFwdAttributes::new().resample_mode(ResampleMode::MaxPool);
    /// assert_eq!(max_pool.resample_mode.schema_value(), 1);
    /// ```
    ResampleMode => ResampleMode {
        /// `NOT_SET` (0).
        NotSet = 0 => NOT_SET,
        /// `MAXPOOL` (1).
        MaxPool = 1 => MAXPOOL,
        /// `AVGPOOL_EXCLUDE_PADDING` (2).
        AvgPoolExcludePadding = 2 => AVGPOOL_EXCLUDE_PADDING,
        /// `AVGPOOL_INCLUDE_PADDING` (3).
        AvgPoolIncludePadding = 3 => AVGPOOL_INCLUDE_PADDING,
    }
}

schema_enum! {
    /// Padding value of a resample (`PaddingMode : byte`).
    ///
    /// ```
    /// use hipdnn::{PaddingMode, ResampleFwdAttributes};
    /// let a = ResampleFwdAttributes::new().padding_mode(PaddingMode::ZeroPad);
    /// assert_eq!(a.padding_mode.schema_name(), "ZERO_PAD");
    /// ```
    PaddingMode => PaddingMode {
        /// `PADDING_NOT_SET` (0).
        NotSet = 0 => PADDING_NOT_SET,
        /// `NEG_INF_PAD` (1).
        NegInfPad = 1 => NEG_INF_PAD,
        /// `ZERO_PAD` (2).
        ZeroPad = 2 => ZERO_PAD,
    }
}

schema_enum! {
    /// Diagonal alignment of an SDPA band mask (`DiagonalAlignment : byte`).
    ///
    /// ```
    /// use hipdnn::{DiagonalAlignment, SdpaAttributes};
    /// // Causal, aligned to the bottom-right corner (keys after the queries' end are hidden).
    /// let a = SdpaAttributes::new().diagonal_alignment(DiagonalAlignment::BottomRight).right_bound(0);
    /// assert_eq!(a.right_bound, Some(0));
    /// ```
    DiagonalAlignment => DiagonalAlignment {
        /// `TOP_LEFT` (0), the default.
        TopLeft = 0 => TOP_LEFT,
        /// `BOTTOM_RIGHT` (1).
        BottomRight = 1 => BOTTOM_RIGHT,
    }
}

schema_enum! {
    /// SDPA implementation choice (`AttentionImplementation : byte`).
    ///
    /// ```
    /// use hipdnn::{AttentionImplementation, SdpaAttributes};
    /// assert_eq!(SdpaAttributes::new().implementation, AttentionImplementation::Auto);
    /// ```
    AttentionImplementation => AttentionImplementation {
        /// `AUTO` (0), the default.
        Auto = 0 => AUTO,
        /// `COMPOSITE` (1).
        Composite = 1 => COMPOSITE,
        /// `UNIFIED` (2).
        Unified = 2 => UNIFIED,
    }
}

schema_enum! {
    /// Mixture-of-experts grouped matmul mode (`MoeGroupedMatmulMode : byte`).
    ///
    /// ```
    /// use hipdnn::{MoeGroupedMatmulAttributes, MoeGroupedMatmulMode};
    /// assert_eq!(MoeGroupedMatmulAttributes::new().mode, MoeGroupedMatmulMode::None);
    /// ```
    MoeGroupedMatmulMode => MoeGroupedMatmulMode {
        /// `NONE` (0), the default.
        None = 0 => NONE,
        /// `GATHER` (1).
        Gather = 1 => GATHER,
        /// `SCATTER` (2).
        Scatter = 2 => SCATTER,
    }
}

/// `EngineApiVersion { major, minor, patch }` (a 12-byte struct on the wire); a Graph without
/// it requires 1.0.0.
///
/// ```
/// use hipdnn::{EngineApiVersion, Graph};
/// let mut g = Graph::new();
/// assert_eq!(g.min_required_engine_api_version(), None); // absent: 1.0.0
/// let v = EngineApiVersion { major: 1, minor: 2, patch: 0 };
/// g.set_min_required_engine_api_version(Some(v));
/// assert!(v > EngineApiVersion { major: 1, minor: 0, patch: 0 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EngineApiVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}
