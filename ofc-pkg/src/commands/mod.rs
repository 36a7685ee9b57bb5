//! One module per verb.

pub mod floor;
pub mod gc;
pub mod init;
pub mod keygen;
pub mod list;
pub mod publish;
pub mod rm;
pub mod validate;
pub mod verify;
