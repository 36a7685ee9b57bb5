//! One module per verb.

pub mod floor;
pub mod validate;
