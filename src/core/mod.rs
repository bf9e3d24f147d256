//! The transport-free core: registry, typed tools, policy, resources, prompts, sealing.

pub mod seal;
pub mod store;
