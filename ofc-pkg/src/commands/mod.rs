//! One module per verb.

pub mod audit;
pub mod auth;
pub mod check;
pub mod completions;
pub mod deprecate;
pub mod floor;
pub mod floors;
pub mod gc;
pub mod info;
pub mod init;
pub mod key;
pub mod keygen;
pub mod list;
pub mod login;
pub mod logout;
pub mod publish;
pub mod pull;
pub mod rm;
pub mod run;
pub mod search;
pub mod sessions;
pub mod trust;
pub mod unpublish;
pub mod validate;
pub mod verify;
pub mod yank;
