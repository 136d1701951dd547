//! The C ABI's numbers, named once: attribute types (`hipdnnBackendAttributeType_t`,
//! [`ty`]), descriptor types (`hipdnnBackendDescriptorType_t`, [`dt`]) and the table of
//! attribute names (`hipdnnBackendAttributeName_t`, [`ATTRIBUTES`]), one constant per header
//! name (`HIPDNN_ATTR_TENSOR_UNIQUE_ID` is [`TENSOR_UNIQUE_ID`]).
//!
//! Each attribute row gives its number, its value [`Kind`], the descriptor types that take it,
//! whether it can be set and/or read ([`Access`]) and whether those descriptors require it at
//! finalize. The operation descriptors are driven by the table ([`crate::ops`] reads kind,
//! access and required attributes from it); the other descriptors
//! match on the named constants ([`crate::desc`]). Every header name is a row, also those
//! hipdnn-rs does not implement ([`Kind::Unsupported`], refused with NOT_SUPPORTED); a test
//! pins the table against `capi/include/hipdnn_backend.h` both ways.
//!
//! This module imports nothing from the crate.

/// Attribute type numbers (`hipdnnBackendAttributeType_t`) used here.
pub mod ty {
    macro_rules! types {
        ($($id:ident = $num:literal;)*) => {
            $(
                #[doc = concat!("`HIPDNN_TYPE_", stringify!($id), "`.")]
                pub const $id: i32 = $num;
            )*
            /// `(header name, number)` of every constant above.
            pub const ALL: &[(&str, i32)] = &[$((concat!("HIPDNN_TYPE_", stringify!($id)), $num)),*];
        };
    }
    types! {
        HANDLE = 0;
        DATA_TYPE = 1;
        BOOLEAN = 2;
        INT64 = 3;
        FLOAT = 4;
        DOUBLE = 5;
        VOID_PTR = 6;
        HEUR_MODE = 7;
        KNOB_TYPE = 8;
        NUMERICAL_NOTE = 10;
        BACKEND_DESCRIPTOR = 13;
        BEHAVIOR_NOTE = 16;
        CHAR = 19;
        NORM_FWD_PHASE = 22;
        CONVOLUTION_MODE = 24;
        POINTWISE_MODE = 25;
        DIAGONAL_ALIGNMENT_EXT = 26;
        ATTENTION_IMPLEMENTATION_EXT = 27;
        REDUCTION_OPERATOR_TYPE = 28;
        RESAMPLE_MODE = 29;
        PADDING_MODE = 30;
        OPERATION_TYPE_EXT = 10001;
    }
}

/// Descriptor type numbers (`hipdnnBackendDescriptorType_t`) used here.
pub mod dt {
    macro_rules! types {
        ($($id:ident = $name:literal $num:literal;)*) => {
            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $id: i32 = $num;
            )*
            /// `(header name, number)` of every constant above.
            pub const ALL: &[(&str, i32)] = &[$(($name, $num)),*];
        };
    }
    types! {
        ENGINE = "HIPDNN_BACKEND_ENGINE_DESCRIPTOR" 1;
        ENGINECFG = "HIPDNN_BACKEND_ENGINECFG_DESCRIPTOR" 2;
        ENGINEHEUR = "HIPDNN_BACKEND_ENGINEHEUR_DESCRIPTOR" 3;
        EXECUTION_PLAN = "HIPDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR" 4;
        KNOB_CHOICE = "HIPDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR" 6;
        KNOB_INFO = "HIPDNN_BACKEND_KNOB_INFO_DESCRIPTOR" 7;
        OPERATIONGRAPH = "HIPDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR" 10;
        VARIANT_PACK = "HIPDNN_BACKEND_VARIANT_PACK_DESCRIPTOR" 11;
        TENSOR = "HIPDNN_BACKEND_TENSOR_DESCRIPTOR" 14;
        CONV_FWD = "HIPDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR" 15;
        CONV_BWD_FILTER = "HIPDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR" 16;
        BN_INFERENCE = "HIPDNN_BACKEND_OPERATION_BATCHNORM_INFERENCE_DESCRIPTOR_EXT" 17;
        POINTWISE = "HIPDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR" 18;
        CONV_BWD_DATA = "HIPDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR" 19;
        BN_BACKWARD = "HIPDNN_BACKEND_OPERATION_BATCHNORM_BACKWARD_DESCRIPTOR_EXT" 20;
        BN_INFERENCE_VARIANCE = "HIPDNN_BACKEND_OPERATION_BATCHNORM_INFERENCE_VARIANCE_DESCRIPTOR_EXT" 21;
        MATMUL = "HIPDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR" 22;
        RMSNORM = "HIPDNN_BACKEND_OPERATION_RMSNORM_DESCRIPTOR_EXT" 23;
        SDPA_FWD = "HIPDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR" 24;
        LAYERNORM = "HIPDNN_BACKEND_OPERATION_LAYERNORM_DESCRIPTOR_EXT" 25;
        BATCHNORM = "HIPDNN_BACKEND_OPERATION_BATCHNORM_DESCRIPTOR_EXT" 27;
        REDUCTION = "HIPDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR" 31;
        RESAMPLE_FWD = "HIPDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR" 32;
        RMSNORM_BACKWARD = "HIPDNN_BACKEND_OPERATION_RMSNORM_BACKWARD_DESCRIPTOR_EXT" 33;
        LAYERNORM_BACKWARD = "HIPDNN_BACKEND_OPERATION_LAYERNORM_BACKWARD_DESCRIPTOR_EXT" 35;
    }

    /// The operation descriptor types implemented here.
    pub const OPS: [i32; 16] = [
        CONV_FWD,
        CONV_BWD_FILTER,
        BN_INFERENCE,
        POINTWISE,
        CONV_BWD_DATA,
        BN_BACKWARD,
        BN_INFERENCE_VARIANCE,
        MATMUL,
        RMSNORM,
        SDPA_FWD,
        LAYERNORM,
        BATCHNORM,
        REDUCTION,
        RESAMPLE_FWD,
        RMSNORM_BACKWARD,
        LAYERNORM_BACKWARD,
    ];
}

/// The value an attribute carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Not implemented by hipdnn-rs: refused with NOT_SUPPORTED.
    Unsupported,
    /// One BACKEND_DESCRIPTOR: a finalized TENSOR.
    Tensor,
    /// BACKEND_DESCRIPTOR array of finalized TENSORs.
    Tensors,
    /// One BACKEND_DESCRIPTOR of another type.
    Descriptor,
    /// BACKEND_DESCRIPTOR array of another type.
    Descriptors,
    /// One INT64.
    Int,
    /// INT64 array.
    I64s,
    /// One FLOAT (or DOUBLE).
    Float,
    /// One BOOLEAN.
    Bool,
    /// One DATA_TYPE.
    Data,
    /// One C value enum of this attribute type.
    Enum(i32),
    /// An array of a C value enum of this attribute type.
    Enums(i32),
    /// CHAR text (NUL-terminated on the way out).
    Text,
    /// CHAR bytes (raw).
    Bytes,
    /// One HANDLE.
    Handle,
    /// One VOID_PTR.
    VoidPtr,
    /// VOID_PTR array.
    VoidPtrs,
}

impl Kind {
    /// The attribute type (`hipdnnBackendAttributeType_t`) it is passed as (FLOAT for
    /// [`Kind::Float`], which also accepts DOUBLE); `None` for [`Kind::Unsupported`].
    pub fn attribute_type(self) -> Option<i32> {
        Some(match self {
            Kind::Unsupported => return None,
            Kind::Tensor | Kind::Tensors | Kind::Descriptor | Kind::Descriptors => {
                ty::BACKEND_DESCRIPTOR
            }
            Kind::Int | Kind::I64s => ty::INT64,
            Kind::Float => ty::FLOAT,
            Kind::Bool => ty::BOOLEAN,
            Kind::Data => ty::DATA_TYPE,
            Kind::Enum(t) | Kind::Enums(t) => t,
            Kind::Text | Kind::Bytes => ty::CHAR,
            Kind::Handle => ty::HANDLE,
            Kind::VoidPtr | Kind::VoidPtrs => ty::VOID_PTR,
        })
    }
}

/// Which of SetAttribute and GetAttribute an attribute takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Neither (not implemented).
    None,
    /// SetAttribute only.
    Set,
    /// GetAttribute only (a value the library produces).
    Get,
    /// Both.
    SetGet,
}

impl Access {
    /// True when SetAttribute takes it.
    pub fn settable(self) -> bool {
        matches!(self, Access::Set | Access::SetGet)
    }

    /// True when GetAttribute answers it.
    pub fn gettable(self) -> bool {
        matches!(self, Access::Get | Access::SetGet)
    }
}

/// One row of [`ATTRIBUTES`].
#[derive(Debug, Clone, Copy)]
pub struct Attribute {
    /// The header's name (`HIPDNN_ATTR_…`).
    pub name: &'static str,
    /// Its number.
    pub number: i32,
    /// The value it carries.
    pub kind: Kind,
    /// The descriptor types that take it.
    pub on: &'static [i32],
    /// Set and/or get.
    pub access: Access,
    /// True when each descriptor type of `on` requires it at finalize.
    pub required: bool,
}

macro_rules! attributes {
    ($($id:ident = $num:literal => $kind:ident $(($arg:path))? [$($on:ident),*] $access:ident $($req:ident)?;)*) => {
        $(
            #[doc = concat!("`HIPDNN_ATTR_", stringify!($id), "`.")]
            pub const $id: i32 = $num;
        )*
        /// Every attribute name of the header, in its order (ascending numbers).
        pub static ATTRIBUTES: &[Attribute] = &[$(
            Attribute {
                name: concat!("HIPDNN_ATTR_", stringify!($id)),
                number: $num,
                kind: Kind::$kind $(($arg))?,
                on: &[$(dt::$on),*],
                access: attributes!(@access $access),
                required: attributes!(@required $($req)?),
            },
        )*];
    };
    (@access none) => { Access::None };
    (@access set) => { Access::Set };
    (@access get) => { Access::Get };
    (@access set_get) => { Access::SetGet };
    (@required) => { false };
    (@required required) => { true };
}

attributes! {
    ENGINEHEUR_MODE = 100 => Enum(ty::HEUR_MODE) [ENGINEHEUR] set_get;
    ENGINEHEUR_OPERATION_GRAPH = 101 => Descriptor [ENGINEHEUR] set;
    ENGINEHEUR_RESULTS = 102 => Descriptors [ENGINEHEUR] get;
    ENGINEHEUR_SM_COUNT_TARGET = 103 => Unsupported [] none;
    ENGINEHEUR_DEVICEPROP = 104 => Unsupported [] none;
    ENGINEHEUR_FIND_FIRST_EXT = 105 => Unsupported [] none;
    ENGINEHEUR_POLICY_ORDER_EXT = 106 => Unsupported [] none;
    ENGINECFG_ENGINE = 200 => Descriptor [ENGINECFG] set_get;
    ENGINECFG_INTERMEDIATE_INFO = 201 => Unsupported [] none;
    ENGINECFG_KNOB_CHOICES = 202 => Descriptors [ENGINECFG] set;
    ENGINECFG_WORKSPACE_SIZE = 203 => Unsupported [] none;
    EXECUTION_PLAN_HANDLE = 300 => Handle [EXECUTION_PLAN] set;
    EXECUTION_PLAN_ENGINE_CONFIG = 301 => Descriptor [EXECUTION_PLAN] set_get;
    EXECUTION_PLAN_WORKSPACE_SIZE = 302 => Int [EXECUTION_PLAN] get;
    EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS = 303 => Unsupported [] none;
    EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS = 304 => Unsupported [] none;
    EXECUTION_PLAN_JSON_REPRESENTATION = 305 => Unsupported [] none;
    EXECUTION_PLAN_KERNEL_CACHE = 306 => Unsupported [] none;
    EXECUTION_PLAN_DEVICEPROP = 307 => Unsupported [] none;
    EXECUTION_PLAN_TENSOR_UIDS_EXT = 308 => I64s [EXECUTION_PLAN] get;
    EXECUTION_PLAN_ENGINE_GLOBAL_INDEX_EXT = 309 => Int [EXECUTION_PLAN] get;
    EXECUTION_PLAN_IS_OVERRIDE_SHAPE_ENABLED_EXT = 310 => Bool [EXECUTION_PLAN] get;
    INTERMEDIATE_INFO_UNIQUE_ID = 400 => Unsupported [] none;
    INTERMEDIATE_INFO_SIZE = 401 => Unsupported [] none;
    INTERMEDIATE_INFO_DEPENDENT_DATA_UIDS = 402 => Unsupported [] none;
    INTERMEDIATE_INFO_DEPENDENT_ATTRIBUTES = 403 => Unsupported [] none;
    KNOB_CHOICE_KNOB_TYPE = 500 => Enum(ty::KNOB_TYPE) [KNOB_CHOICE] set_get;
    KNOB_CHOICE_KNOB_VALUE = 501 => Int [KNOB_CHOICE] set_get;
    OPERATIONGRAPH_HANDLE = 600 => Handle [OPERATIONGRAPH] set_get;
    OPERATIONGRAPH_OPS = 601 => Descriptors [OPERATIONGRAPH] set_get;
    OPERATIONGRAPH_ENGINE_GLOBAL_COUNT = 602 => Int [OPERATIONGRAPH] get;
    OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED = 603 => Unsupported [] none;
    OPERATIONGRAPH_COMPUTE_DATA_TYPE_EXT = 604 => Data [OPERATIONGRAPH] set;
    OPERATIONGRAPH_INTERMEDIATE_DATA_TYPE_EXT = 605 => Data [OPERATIONGRAPH] set;
    OPERATIONGRAPH_IO_DATA_TYPE_EXT = 606 => Data [OPERATIONGRAPH] set;
    OPERATIONGRAPH_PREFERRED_ENGINE_ID_EXT = 607 => Int [OPERATIONGRAPH] set;
    OPERATIONGRAPH_NAME_EXT = 608 => Text [OPERATIONGRAPH] set_get;
    OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED_EXT = 609 => Bool [OPERATIONGRAPH] set_get;
    VARIANT_PACK_UNIQUE_IDS = 700 => I64s [VARIANT_PACK] set_get;
    VARIANT_PACK_DATA_POINTERS = 701 => VoidPtrs [VARIANT_PACK] set_get;
    VARIANT_PACK_INTERMEDIATES = 702 => Unsupported [] none;
    VARIANT_PACK_WORKSPACE = 703 => VoidPtr [VARIANT_PACK] set_get;
    VARIANT_PACK_OVERRIDE_UNIQUE_IDS_EXT = 704 => I64s [VARIANT_PACK] set_get;
    VARIANT_PACK_OVERRIDE_SHAPES_EXT = 705 => I64s [VARIANT_PACK] set_get;
    VARIANT_PACK_OVERRIDE_STRIDES_EXT = 706 => I64s [VARIANT_PACK] set_get;
    VARIANT_PACK_OVERRIDE_LENGTHS_EXT = 707 => I64s [VARIANT_PACK] set_get;
    LAYOUT_INFO_TENSOR_UID = 800 => Unsupported [] none;
    LAYOUT_INFO_TYPES = 801 => Unsupported [] none;
    KNOB_INFO_TYPE = 900 => Enum(ty::KNOB_TYPE) [KNOB_INFO] get;
    KNOB_INFO_MAXIMUM_VALUE = 901 => Int [KNOB_INFO] get;
    KNOB_INFO_MINIMUM_VALUE = 902 => Int [KNOB_INFO] get;
    KNOB_INFO_STRIDE = 903 => Int [KNOB_INFO] get;
    KNOB_INFO_DESCRIPTION = 904 => Text [KNOB_INFO] get;
    KNOB_INFO_DEFAULT_VALUE = 905 => Int [KNOB_INFO] get;
    KNOB_INFO_DEPRECATED = 906 => Unsupported [] none;
    KNOB_INFO_VALID_VALUES_INT = 907 => Unsupported [] none;
    KNOB_INFO_VALID_VALUES_STRING = 908 => Unsupported [] none;
    KNOB_INFO_STRING_MAX_LENGTH = 909 => Unsupported [] none;
    KNOB_INFO_DEFAULT_VALUE_TYPE = 910 => Unsupported [] none;
    ENGINE_OPERATION_GRAPH = 1000 => Descriptor [ENGINE] set_get;
    ENGINE_GLOBAL_INDEX = 1001 => Int [ENGINE] set_get;
    ENGINE_KNOB_INFO = 1002 => Descriptors [ENGINE] get;
    ENGINE_NUMERICAL_NOTE = 1003 => Enums(ty::NUMERICAL_NOTE) [ENGINE] get;
    ENGINE_LAYOUT_INFO = 1004 => Unsupported [] none;
    ENGINE_BEHAVIOR_NOTE = 1005 => Enums(ty::BEHAVIOR_NOTE) [ENGINE] get;
    ENGINE_CU_COUNT_TARGET_EXT = 1006 => Unsupported [] none;
    ENGINE_DEVICEPROP = 1007 => Unsupported [] none;
    ENGINE_NAME_EXT = 1008 => Text [ENGINE] get;
    KERNEL_CACHE_IS_ENGINECFG_KERNEL_CACHED = 1100 => Unsupported [] none;
    DEVICEPROP_DEVICE_ID = 1200 => Unsupported [] none;
    DEVICEPROP_HANDLE = 1201 => Unsupported [] none;
    DEVICEPROP_JSON_REPRESENTATION = 1202 => Unsupported [] none;
    TENSOR_UNIQUE_ID = 1300 => Int [TENSOR] set_get;
    TENSOR_NAME_EXT = 1301 => Text [TENSOR] set_get;
    TENSOR_DATA_TYPE = 1302 => Data [TENSOR] set_get;
    TENSOR_DIMENSIONS = 1303 => I64s [TENSOR] set_get;
    TENSOR_STRIDES = 1304 => I64s [TENSOR] set_get;
    TENSOR_IS_VIRTUAL = 1305 => Bool [TENSOR] set_get;
    TENSOR_VALUE_EXT = 1306 => Bytes [TENSOR] set_get;
    TENSOR_CONSTANT_VALUE = 1306 => Bytes [TENSOR] set_get;
    TENSOR_IS_BY_VALUE = 1307 => Bool [TENSOR] get;
    TENSOR_IS_RUNTIME_PASS_BY_VALUE_EXT = 1308 => Bool [TENSOR] set_get;
    TENSOR_BYTE_ALIGNMENT = 1309 => Int [TENSOR] set_get;
    TENSOR_RAGGED_OFFSET_DESC = 1310 => Unsupported [] none;
    TENSOR_RAGGED_OFFSET_MULTIPLIER = 1311 => Unsupported [] none;
    OPERATION_CONVOLUTION_FORWARD_W = 1400 => Tensor [CONV_FWD] set_get required;
    OPERATION_CONVOLUTION_FORWARD_X = 1401 => Tensor [CONV_FWD] set_get required;
    OPERATION_CONVOLUTION_FORWARD_Y = 1402 => Tensor [CONV_FWD] set_get required;
    CONVOLUTION_COMP_TYPE = 1500 => Data [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    CONVOLUTION_CONV_MODE = 1501 => Enum(ty::CONVOLUTION_MODE) [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    CONVOLUTION_DILATIONS = 1502 => I64s [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    CONVOLUTION_FILTER_STRIDES = 1503 => I64s [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    CONVOLUTION_POST_PADDINGS = 1504 => I64s [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    CONVOLUTION_PRE_PADDINGS = 1505 => I64s [CONV_FWD, CONV_BWD_FILTER, CONV_BWD_DATA] set_get;
    OPERATION_CONVOLUTION_BWD_FILTER_X = 1600 => Tensor [CONV_BWD_FILTER] set_get required;
    OPERATION_CONVOLUTION_BWD_FILTER_DY = 1601 => Tensor [CONV_BWD_FILTER] set_get required;
    OPERATION_CONVOLUTION_BWD_FILTER_DW = 1602 => Tensor [CONV_BWD_FILTER] set_get required;
    OPERATION_CONVOLUTION_BWD_DATA_DY = 1700 => Tensor [CONV_BWD_DATA] set_get required;
    OPERATION_CONVOLUTION_BWD_DATA_W = 1701 => Tensor [CONV_BWD_DATA] set_get required;
    OPERATION_CONVOLUTION_BWD_DATA_DX = 1702 => Tensor [CONV_BWD_DATA] set_get required;
    OPERATION_BATCHNORM_INFERENCE_X_EXT = 1800 => Tensor [BN_INFERENCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_MEAN_EXT = 1801 => Tensor [BN_INFERENCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_INV_VARIANCE_EXT = 1802 => Tensor [BN_INFERENCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_SCALE_EXT = 1803 => Tensor [BN_INFERENCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_BIAS_EXT = 1804 => Tensor [BN_INFERENCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_Y_EXT = 1805 => Tensor [BN_INFERENCE] set_get required;
    BATCHNORM_INF_COMP_TYPE_EXT = 1806 => Data [BN_INFERENCE] set_get;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_X_EXT = 1900 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_MEAN_EXT = 1901 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_VARIANCE_EXT = 1902 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_SCALE_EXT = 1903 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_BIAS_EXT = 1904 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_Y_EXT = 1905 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    OPERATION_BATCHNORM_INFERENCE_VARIANCE_EPSILON_EXT = 1906 => Tensor [BN_INFERENCE_VARIANCE] set_get required;
    BATCHNORM_INF_VAR_COMP_TYPE_EXT = 1907 => Data [BN_INFERENCE_VARIANCE] set_get;
    OPERATION_BATCHNORM_BACKWARD_DY_EXT = 2000 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_X_EXT = 2001 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_SCALE_EXT = 2002 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_DX_EXT = 2003 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_DSCALE_EXT = 2004 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_DBIAS_EXT = 2005 => Tensor [BN_BACKWARD] set_get required;
    OPERATION_BATCHNORM_BACKWARD_MEAN_EXT = 2006 => Tensor [BN_BACKWARD] set_get;
    OPERATION_BATCHNORM_BACKWARD_INV_VARIANCE_EXT = 2007 => Tensor [BN_BACKWARD] set_get;
    BATCHNORM_BACKWARD_COMP_TYPE_EXT = 2100 => Data [BN_BACKWARD] set_get;
    OPERATION_BATCHNORM_BACKWARD_PEER_STATS_EXT = 2101 => Tensors [BN_BACKWARD] set_get;
    OPERATION_POINTWISE_IN_0_EXT = 2200 => Tensor [POINTWISE] set_get required;
    OPERATION_POINTWISE_OUT_0_EXT = 2201 => Tensor [POINTWISE] set_get required;
    OPERATION_POINTWISE_IN_1_EXT = 2202 => Tensor [POINTWISE] set_get;
    OPERATION_POINTWISE_IN_2_EXT = 2203 => Tensor [POINTWISE] set_get;
    POINTWISE_MODE = 2300 => Enum(ty::POINTWISE_MODE) [POINTWISE] set_get required;
    POINTWISE_RELU_LOWER_CLIP = 2301 => Float [POINTWISE] set_get;
    POINTWISE_RELU_UPPER_CLIP = 2302 => Float [POINTWISE] set_get;
    POINTWISE_RELU_LOWER_CLIP_SLOPE = 2303 => Float [POINTWISE] set_get;
    POINTWISE_SWISH_BETA = 2304 => Float [POINTWISE] set_get;
    POINTWISE_ELU_ALPHA = 2305 => Float [POINTWISE] set_get;
    POINTWISE_SOFTPLUS_BETA = 2306 => Float [POINTWISE] set_get;
    POINTWISE_MATH_PREC = 2307 => Data [POINTWISE] set_get;
    POINTWISE_AXIS = 2308 => Int [POINTWISE] set_get;
    OPERATION_RMSNORM_X_EXT = 2400 => Tensor [RMSNORM] set_get required;
    OPERATION_RMSNORM_SCALE_EXT = 2401 => Tensor [RMSNORM] set_get required;
    OPERATION_RMSNORM_EPSILON_EXT = 2402 => Tensor [RMSNORM] set_get required;
    OPERATION_RMSNORM_Y_EXT = 2403 => Tensor [RMSNORM] set_get required;
    OPERATION_RMSNORM_BIAS_EXT = 2404 => Tensor [RMSNORM] set_get;
    OPERATION_RMSNORM_INV_RMS_EXT = 2405 => Tensor [RMSNORM] set_get;
    OPERATION_RMSNORM_FWD_PHASE_EXT = 2406 => Enum(ty::NORM_FWD_PHASE) [RMSNORM] set_get;
    RMSNORM_COMP_TYPE_EXT = 2407 => Data [RMSNORM] set_get;
    OPERATION_MATMUL_ADESC = 2500 => Tensor [MATMUL] set_get required;
    OPERATION_MATMUL_BDESC = 2501 => Tensor [MATMUL] set_get required;
    OPERATION_MATMUL_CDESC = 2502 => Tensor [MATMUL] set_get required;
    MATMUL_COMP_TYPE = 2503 => Data [MATMUL] set_get;
    OPERATION_SDPA_FWD_QDESC = 2600 => Tensor [SDPA_FWD] set_get required;
    OPERATION_SDPA_FWD_KDESC = 2601 => Tensor [SDPA_FWD] set_get required;
    OPERATION_SDPA_FWD_VDESC = 2602 => Tensor [SDPA_FWD] set_get required;
    OPERATION_SDPA_FWD_ODESC = 2603 => Tensor [SDPA_FWD] set_get required;
    OPERATION_SDPA_FWD_ATTN_MASK_EXT = 2604 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SCALEDESC = 2605 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SEQ_LEN_QDESC = 2606 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SEQ_LEN_KVDESC = 2607 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SEED_EXT = 2608 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_OFFSET_EXT = 2609 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DROPOUT_MASK_EXT = 2610 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DROPOUT_SCALE_EXT = 2611 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_PAGE_TABLE_KDESC = 2612 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_PAGE_TABLE_VDESC = 2613 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_BLOCK_MASK_DESC = 2614 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SINK_TOKEN_EXT = 2615 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DESCALE_Q_EXT = 2616 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DESCALE_K_EXT = 2617 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DESCALE_V_EXT = 2618 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_DESCALE_S_EXT = 2619 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SCALE_S_EXT = 2620 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SCALE_O_EXT = 2621 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_STATSDESC = 2622 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_MAX_EXT = 2623 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_SUM_EXP_EXT = 2624 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_RNG_DUMP_EXT = 2625 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_AMAX_S_EXT = 2626 => Tensor [SDPA_FWD] set_get;
    OPERATION_SDPA_FWD_AMAX_O_EXT = 2627 => Tensor [SDPA_FWD] set_get;
    SDPA_FWD_GENERATE_STATS_EXT = 2628 => Bool [SDPA_FWD] set_get;
    SDPA_FWD_ALIBI_MASK_EXT = 2629 => Bool [SDPA_FWD] set_get;
    SDPA_FWD_PADDING_MASK_EXT = 2630 => Bool [SDPA_FWD] set_get;
    SDPA_FWD_CAUSAL_MASK_EXT = 2631 => Bool [SDPA_FWD] set_get;
    SDPA_FWD_CAUSAL_MASK_BOTTOM_RIGHT_EXT = 2632 => Bool [SDPA_FWD] set_get;
    SDPA_FWD_DROPOUT_PROBABILITY_EXT = 2633 => Float [SDPA_FWD] set_get;
    SDPA_FWD_ATTN_SCALE_VALUE_EXT = 2634 => Float [SDPA_FWD] set_get;
    SDPA_FWD_LEFT_BOUND_EXT = 2635 => Int [SDPA_FWD] set_get;
    SDPA_FWD_RIGHT_BOUND_EXT = 2636 => Int [SDPA_FWD] set_get;
    SDPA_FWD_MAX_SEQ_LEN_KV_EXT = 2637 => Int [SDPA_FWD] set_get;
    SDPA_FWD_DIAGONAL_ALIGNMENT_EXT = 2638 => Enum(ty::DIAGONAL_ALIGNMENT_EXT) [SDPA_FWD] set_get;
    SDPA_FWD_MMA_CORE_MODE_EXT = 2639 => Data [SDPA_FWD] set_get;
    SDPA_FWD_IMPLEMENTATION_EXT = 2640 => Enum(ty::ATTENTION_IMPLEMENTATION_EXT) [SDPA_FWD] set_get;
    SDPA_FWD_COMP_TYPE_EXT = 2641 => Data [SDPA_FWD] set_get;
    OPERATION_LAYERNORM_X_EXT = 2700 => Tensor [LAYERNORM] set_get required;
    OPERATION_LAYERNORM_SCALE_EXT = 2701 => Tensor [LAYERNORM] set_get required;
    OPERATION_LAYERNORM_BIAS_EXT = 2702 => Tensor [LAYERNORM] set_get required;
    OPERATION_LAYERNORM_EPSILON_EXT = 2703 => Tensor [LAYERNORM] set_get required;
    OPERATION_LAYERNORM_Y_EXT = 2704 => Tensor [LAYERNORM] set_get required;
    OPERATION_LAYERNORM_MEAN_EXT = 2705 => Tensor [LAYERNORM] set_get;
    OPERATION_LAYERNORM_INV_VARIANCE_EXT = 2706 => Tensor [LAYERNORM] set_get;
    OPERATION_LAYERNORM_FWD_PHASE_EXT = 2707 => Enum(ty::NORM_FWD_PHASE) [LAYERNORM] set_get;
    LAYERNORM_COMP_TYPE_EXT = 2708 => Data [LAYERNORM] set_get;
    OPERATION_LAYERNORM_NORMALIZED_DIM_COUNT_EXT = 2709 => Int [LAYERNORM] set_get;
    OPERATION_BLOCK_SCALE_QUANTIZE_XDESC = 2800 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_YDESC = 2801 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_SCALE_DESC = 2802 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE = 2803 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_AXIS_EXT = 2804 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_TRANSPOSE_EXT = 2805 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_QUANTIZE_MATH_PREC = 2806 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_XDESC = 2807 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_SCALE_DESC = 2808 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_YDESC = 2809 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_BLOCK_SIZE = 2810 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_NEG_SCALE = 2811 => Unsupported [] none;
    OPERATION_BLOCK_SCALE_DEQUANTIZE_MATH_PREC = 2812 => Unsupported [] none;
    OPERATION_BATCHNORM_X_EXT = 2900 => Tensor [BATCHNORM] set_get required;
    OPERATION_BATCHNORM_SCALE_EXT = 2901 => Tensor [BATCHNORM] set_get required;
    OPERATION_BATCHNORM_BIAS_EXT = 2902 => Tensor [BATCHNORM] set_get required;
    OPERATION_BATCHNORM_EPSILON_EXT = 2903 => Tensor [BATCHNORM] set_get required;
    OPERATION_BATCHNORM_Y_EXT = 2904 => Tensor [BATCHNORM] set_get required;
    OPERATION_BATCHNORM_PREV_RUNNING_MEAN_EXT = 2905 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_PREV_RUNNING_VARIANCE_EXT = 2906 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_MOMENTUM_EXT = 2907 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_MEAN_EXT = 2908 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_INV_VARIANCE_EXT = 2909 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_NEXT_RUNNING_MEAN_EXT = 2910 => Tensor [BATCHNORM] set_get;
    OPERATION_BATCHNORM_NEXT_RUNNING_VARIANCE_EXT = 2911 => Tensor [BATCHNORM] set_get;
    BATCHNORM_COMP_TYPE_EXT = 2912 => Data [BATCHNORM] set_get;
    OPERATION_BATCHNORM_PEER_STATS_EXT = 2913 => Tensors [BATCHNORM] set_get;
    OPERATION_CUSTOM_OP_INPUTS_EXT = 3000 => Unsupported [] none;
    OPERATION_CUSTOM_OP_OUTPUTS_EXT = 3001 => Unsupported [] none;
    OPERATION_CUSTOM_OP_ID_EXT = 3002 => Unsupported [] none;
    OPERATION_CUSTOM_OP_DATA_EXT = 3003 => Unsupported [] none;
    CUSTOM_OP_COMP_TYPE_EXT = 3004 => Unsupported [] none;
    OPERATION_SDPA_BWD_Q_EXT = 3100 => Unsupported [] none;
    OPERATION_SDPA_BWD_K_EXT = 3101 => Unsupported [] none;
    OPERATION_SDPA_BWD_V_EXT = 3102 => Unsupported [] none;
    OPERATION_SDPA_BWD_O_EXT = 3103 => Unsupported [] none;
    OPERATION_SDPA_BWD_DO_EXT = 3104 => Unsupported [] none;
    OPERATION_SDPA_BWD_STATS_EXT = 3105 => Unsupported [] none;
    OPERATION_SDPA_BWD_DQ_EXT = 3106 => Unsupported [] none;
    OPERATION_SDPA_BWD_DK_EXT = 3107 => Unsupported [] none;
    OPERATION_SDPA_BWD_DV_EXT = 3108 => Unsupported [] none;
    OPERATION_SDPA_BWD_SCALE_EXT = 3109 => Unsupported [] none;
    OPERATION_SDPA_BWD_ATTN_MASK_EXT = 3110 => Unsupported [] none;
    OPERATION_SDPA_BWD_SEQ_LEN_Q_EXT = 3111 => Unsupported [] none;
    OPERATION_SDPA_BWD_SEQ_LEN_KV_EXT = 3112 => Unsupported [] none;
    OPERATION_SDPA_BWD_SEED_EXT = 3113 => Unsupported [] none;
    OPERATION_SDPA_BWD_OFFSET_EXT = 3114 => Unsupported [] none;
    OPERATION_SDPA_BWD_DROPOUT_MASK_EXT = 3115 => Unsupported [] none;
    OPERATION_SDPA_BWD_DROPOUT_SCALE_EXT = 3116 => Unsupported [] none;
    OPERATION_SDPA_BWD_DROPOUT_SCALE_INV_EXT = 3117 => Unsupported [] none;
    OPERATION_SDPA_BWD_DBIAS_EXT = 3118 => Unsupported [] none;
    SDPA_BWD_ALIBI_MASK_EXT = 3119 => Unsupported [] none;
    SDPA_BWD_PADDING_MASK_EXT = 3120 => Unsupported [] none;
    SDPA_BWD_CAUSAL_MASK_EXT = 3121 => Unsupported [] none;
    SDPA_BWD_CAUSAL_MASK_BOTTOM_RIGHT_EXT = 3122 => Unsupported [] none;
    SDPA_BWD_DROPOUT_PROBABILITY_EXT = 3123 => Unsupported [] none;
    SDPA_BWD_ATTN_SCALE_VALUE_EXT = 3124 => Unsupported [] none;
    SDPA_BWD_LEFT_BOUND_EXT = 3125 => Unsupported [] none;
    SDPA_BWD_RIGHT_BOUND_EXT = 3126 => Unsupported [] none;
    SDPA_BWD_DIAGONAL_ALIGNMENT_EXT = 3127 => Unsupported [] none;
    SDPA_BWD_COMP_TYPE_EXT = 3128 => Unsupported [] none;
    OPERATION_REDUCTION_XDESC = 3200 => Tensor [REDUCTION] set_get required;
    OPERATION_REDUCTION_YDESC = 3201 => Tensor [REDUCTION] set_get required;
    REDUCTION_OPERATOR = 3202 => Enum(ty::REDUCTION_OPERATOR_TYPE) [REDUCTION] set_get required;
    REDUCTION_COMP_TYPE = 3203 => Data [REDUCTION] set_get;
    REDUCTION_IS_DETERMINISTIC = 3204 => Bool [REDUCTION] set_get;
    OPERATION_RESAMPLE_FWD_XDESC = 3300 => Tensor [RESAMPLE_FWD] set_get required;
    OPERATION_RESAMPLE_FWD_YDESC = 3301 => Tensor [RESAMPLE_FWD] set_get required;
    OPERATION_RESAMPLE_FWD_IDXDESC = 3302 => Tensor [RESAMPLE_FWD] set_get;
    RESAMPLE_MODE = 3400 => Enum(ty::RESAMPLE_MODE) [RESAMPLE_FWD] set_get required;
    RESAMPLE_PRE_PADDINGS = 3401 => I64s [RESAMPLE_FWD] set_get;
    RESAMPLE_POST_PADDINGS = 3402 => I64s [RESAMPLE_FWD] set_get;
    RESAMPLE_STRIDES = 3403 => I64s [RESAMPLE_FWD] set_get;
    RESAMPLE_WINDOW_DIMS = 3404 => I64s [RESAMPLE_FWD] set_get;
    RESAMPLE_PADDING_MODE = 3405 => Enum(ty::PADDING_MODE) [RESAMPLE_FWD] set_get;
    RESAMPLE_GENERATE_INDEX_EXT = 3406 => Bool [RESAMPLE_FWD] set_get;
    RESAMPLE_COMP_TYPE = 3407 => Data [RESAMPLE_FWD] set_get;
    OPERATION_RESAMPLE_BWD_DYDESC = 3408 => Unsupported [] none;
    OPERATION_RESAMPLE_BWD_DXDESC = 3409 => Unsupported [] none;
    OPERATION_RESAMPLE_BWD_IDXDESC = 3410 => Unsupported [] none;
    OPERATION_RMSNORM_BACKWARD_DY_EXT = 3500 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_X_EXT = 3501 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_SCALE_EXT = 3502 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_INV_RMS_EXT = 3503 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_DX_EXT = 3504 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_DSCALE_EXT = 3505 => Tensor [RMSNORM_BACKWARD] set_get required;
    OPERATION_RMSNORM_BACKWARD_DBIAS_EXT = 3506 => Tensor [RMSNORM_BACKWARD] set_get;
    RMSNORM_BACKWARD_COMP_TYPE_EXT = 3507 => Data [RMSNORM_BACKWARD] set_get;
    OPERATION_LAYERNORM_BACKWARD_DY_EXT = 3600 => Tensor [LAYERNORM_BACKWARD] set_get required;
    OPERATION_LAYERNORM_BACKWARD_X_EXT = 3601 => Tensor [LAYERNORM_BACKWARD] set_get required;
    OPERATION_LAYERNORM_BACKWARD_SCALE_EXT = 3602 => Tensor [LAYERNORM_BACKWARD] set_get required;
    OPERATION_LAYERNORM_BACKWARD_MEAN_EXT = 3603 => Tensor [LAYERNORM_BACKWARD] set_get;
    OPERATION_LAYERNORM_BACKWARD_INV_VARIANCE_EXT = 3604 => Tensor [LAYERNORM_BACKWARD] set_get;
    OPERATION_LAYERNORM_BACKWARD_EPSILON_EXT = 3605 => Tensor [LAYERNORM_BACKWARD] set_get;
    OPERATION_LAYERNORM_BACKWARD_DX_EXT = 3606 => Tensor [LAYERNORM_BACKWARD] set_get required;
    OPERATION_LAYERNORM_BACKWARD_DSCALE_EXT = 3607 => Tensor [LAYERNORM_BACKWARD] set_get required;
    OPERATION_LAYERNORM_BACKWARD_DBIAS_EXT = 3608 => Tensor [LAYERNORM_BACKWARD] set_get required;
    LAYERNORM_BACKWARD_NORMALIZED_DIM_COUNT_EXT = 3609 => Int [LAYERNORM_BACKWARD] set_get;
    LAYERNORM_BACKWARD_COMP_TYPE_EXT = 3610 => Data [LAYERNORM_BACKWARD] set_get;
    OPERATION_MOE_GROUPED_MATMUL_TOKEN_DESC = 3700 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_WEIGHT_DESC = 3701 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_FIRST_TOKEN_OFFSET_DESC = 3702 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_TOKEN_INDEX_DESC = 3703 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_TOKEN_KS_DESC = 3704 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_OUTPUT_DESC = 3705 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_MODE = 3706 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_TOP_K = 3707 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_MATH_PREC = 3708 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_BWD_DOUTPUT_DESC = 3800 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_BWD_TOKEN_DESC = 3801 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_BWD_FIRST_TOKEN_OFFSET_DESC = 3802 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_BWD_DWEIGHT_DESC = 3803 => Unsupported [] none;
    OPERATION_MOE_GROUPED_MATMUL_BWD_MATH_PREC = 3804 => Unsupported [] none;
    KNOB_INFO_SERIALIZED_VALUE = 60000 => Unsupported [] none;
    KNOB_CHOICE_SERIALIZED_VALUE = 60100 => Unsupported [] none;
    OPERATION_TYPE_EXT = 60200 => Enum(ty::OPERATION_TYPE_EXT) [CONV_FWD, CONV_BWD_FILTER, BN_INFERENCE, POINTWISE, CONV_BWD_DATA, BN_BACKWARD, BN_INFERENCE_VARIANCE, MATMUL, RMSNORM, SDPA_FWD, LAYERNORM, BATCHNORM, REDUCTION, RESAMPLE_FWD, RMSNORM_BACKWARD, LAYERNORM_BACKWARD] get;
    OPERATION_NAME_EXT = 60300 => Text [CONV_FWD, CONV_BWD_FILTER, BN_INFERENCE, POINTWISE, CONV_BWD_DATA, BN_BACKWARD, BN_INFERENCE_VARIANCE, MATMUL, RMSNORM, SDPA_FWD, LAYERNORM, BATCHNORM, REDUCTION, RESAMPLE_FWD, RMSNORM_BACKWARD, LAYERNORM_BACKWARD] set_get;
    PROFILING_HANDLE_EXT = 60400 => Unsupported [] none;
    PROFILING_START_EXT = 60401 => Unsupported [] none;
    PROFILING_STOP_EXT = 60402 => Unsupported [] none;
    PROFILING_ELAPSED_MS_EXT = 60403 => Unsupported [] none;
    PROFILING_DEVICE_SYNC_EXT = 60404 => Unsupported [] none;
}

/// The row of attribute `number` on descriptor type `dtype`, if that descriptor takes it.
pub fn attribute_on(dtype: i32, number: i32) -> Option<&'static Attribute> {
    ATTRIBUTES
        .iter()
        .find(|a| a.number == number && a.on.contains(&dtype))
}

/// The attributes descriptor type `dtype` requires at finalize, in ascending order.
pub fn required_on(dtype: i32) -> impl Iterator<Item = i32> {
    ATTRIBUTES
        .iter()
        .filter(move |a| a.required && a.on.contains(&dtype))
        .map(|a| a.number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const HEADER: &str = include_str!("../include/hipdnn_backend.h");

    /// `(name, number)` of every enumerator of the header's `typedef enum { … } name;`.
    fn header_enum(name: &str) -> Vec<(String, i32)> {
        let end = HEADER
            .find(&format!("}} {name};"))
            .unwrap_or_else(|| panic!("{name} not in the header"));
        let start = HEADER[..end].rfind('{').expect("enum body");
        HEADER[start + 1..end]
            .split(',')
            .filter_map(|item| {
                let (n, v) = item.split_once('=')?;
                Some((n.trim().to_string(), v.trim().parse().expect("a number")))
            })
            .collect()
    }

    #[test]
    fn the_attribute_table_is_the_headers_attribute_enum_both_ways() {
        let header = header_enum("hipdnnBackendAttributeName_t");
        assert!(header.len() > 300, "{} names parsed", header.len());
        let table: Vec<(String, i32)> = ATTRIBUTES
            .iter()
            .map(|a| (a.name.to_string(), a.number))
            .collect();
        // Same pairs, same order, each once (the header spells 1306 twice: an alias).
        assert_eq!(table, header);
        let names: BTreeSet<&str> = ATTRIBUTES.iter().map(|a| a.name).collect();
        assert_eq!(names.len(), ATTRIBUTES.len());
    }

    #[test]
    fn attribute_and_descriptor_type_constants_match_the_header() {
        let types = header_enum("hipdnnBackendAttributeType_t");
        for (name, n) in ty::ALL {
            assert!(types.contains(&(name.to_string(), *n)), "{name} = {n}");
        }
        let dts = header_enum("hipdnnBackendDescriptorType_t");
        for (name, n) in dt::ALL {
            assert!(dts.contains(&(name.to_string(), *n)), "{name} = {n}");
        }
    }

    #[test]
    fn rows_are_consistent() {
        for a in ATTRIBUTES {
            let unsupported = a.kind == Kind::Unsupported;
            assert_eq!(unsupported, a.on.is_empty(), "{}", a.name);
            assert_eq!(unsupported, a.access == Access::None, "{}", a.name);
            assert!(!a.required || a.access.settable(), "{}", a.name);
            for d in a.on {
                assert!(dt::ALL.iter().any(|(_, n)| n == d), "{}", a.name);
            }
        }
        assert!(ATTRIBUTES.windows(2).all(|w| w[0].number <= w[1].number));
    }

    /// No source file of the crate but this one spells an attribute number as a literal.
    #[test]
    fn no_bare_attribute_numbers_in_capi_src() {
        let numbers: BTreeSet<i64> = ATTRIBUTES.iter().map(|a| i64::from(a.number)).collect();
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|f| f == "abi.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for word in code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
                    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                    let digits = digits.trim_end_matches(['i', 'u']);
                    let Ok(n) = digits.replace('_', "").parse::<i64>() else {
                        continue;
                    };
                    assert!(
                        !numbers.contains(&n) || word.starts_with("0x"),
                        "{}:{}: bare attribute number {n}: {line}",
                        p.display(),
                        i + 1
                    );
                }
            }
        }
    }
}
