//! `ofc keygen [--name NAME] [--force]`: creates an ed25519 signing key. The secret stays in its
//! 0600 file; only the public key and its id are printed.

use anyhow::Result;
use serde_json::json;

use crate::config::Paths;
use crate::keys;
use crate::output::{ExitStatus, Output};

/// Arguments of `ofc keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// The key's name; keys live in `<config>/keys/<NAME>.key`.
    #[arg(long, value_name = "NAME", default_value = crate::keys::DEFAULT_KEY)]
    pub name: String,

    /// Replace an existing key with the same name.
    #[arg(long)]
    pub force: bool,
}

/// Runs the verb.
pub fn run(args: &KeygenArgs, out: &mut Output) -> Result<ExitStatus> {
    let paths = Paths::from_env()?;
    let key = keys::generate(&paths, &args.name, args.force)?;
    if out.json {
        out.json_value(&json!({
            "name": args.name,
            "publicKey": key.public.to_string(),
            "keyId": key.public.key_id().to_string(),
            "secretKeyFile": key.secret_file.display().to_string(),
            "publicKeyFile": key.public_file.display().to_string(),
        }));
    } else {
        out.data(&format!("public key: {}", key.public));
        out.data(&format!("key id:     {}", key.public.key_id()));
        out.status(&format!(
            "created key `{}`; the secret is in {} (keep it private)",
            args.name,
            key.secret_file.display()
        ));
    }
    Ok(ExitStatus::Success)
}
