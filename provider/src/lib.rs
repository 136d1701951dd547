//! `hipdnn-provider`: engines (CPU reference, kernel ingestor), kpack archives, ingestor payload,
//! HIP runtime layer, kernel sources.

pub mod gpu;
pub mod hip;
pub mod ingestor;
pub mod kpack;
pub mod reference;
