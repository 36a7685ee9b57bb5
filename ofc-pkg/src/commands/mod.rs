//! One module per verb.

pub mod validate;
