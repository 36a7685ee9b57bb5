//! The rules of an inline agent entry.

use std::collections::HashMap;

use super::{InlineAgent, InlineAgentType, switchboard};
use crate::agent_yaml::{check_env, check_http_url, check_temperature};
use crate::diagnostic::{Diagnostics, FieldPath};

pub(super) fn check_inline(
    a: &InlineAgent,
    p: &FieldPath,
    default_model: bool,
    furniture: &HashMap<&str, usize>,
    d: &mut Diagnostics,
) {
    if switchboard::check(a, p, d) {
        return;
    }
    for (field, value) in [
        ("name", &a.name),
        ("model", &a.model),
        ("command", &a.command),
        ("prompt", &a.prompt),
        ("prompt_file", &a.prompt_file),
    ] {
        if value.as_deref().is_some_and(|s| s.trim().is_empty()) {
            d.push(p.key(field), "must not be empty");
        }
    }
    if let Some(prompt) = a
        .prompt
        .as_deref()
        .filter(|p| super::template::is_template(p))
        && let Err(e) = super::template::Template::parse(prompt)
    {
        d.push(p.key("prompt"), e);
    }
    if a.api_key.is_some() && a.api_key_env.is_some() {
        d.push(
            p.key("api_key"),
            "give the key (`api_key`) or the variable that holds it (`api_key_env`), not both",
        );
    }
    if a.prompt.is_some() && a.prompt_file.is_some() {
        d.push(
            p.key("prompt_file"),
            format!(
                "agent `{}` has both `prompt` and `prompt_file`: keep one",
                a.id
            ),
        );
    }
    match a.agent_type() {
        InlineAgentType::Llm => {
            if a.model.is_none() && !default_model {
                d.push(
                    p.key("model"),
                    "an llm agent needs a `model` (or set `defaults.model`)",
                );
            }
        }
        InlineAgentType::Acp => {
            if a.command.is_none() {
                d.push(
                    p.key("command"),
                    "an acp agent needs the `command` that starts it",
                );
            }
        }
        // Checked by `switchboard::check`, which returned above.
        InlineAgentType::Switchboard => {}
    }
    if let Some(e) = &a.endpoint {
        check_http_url(e, &p.key("endpoint"), d);
    }
    if let Some(t) = a.temperature {
        check_temperature(t, &p.key("temperature"), d);
    }
    if a.memory.is_some_and(|m| !(1..=10_000).contains(&m.window)) {
        d.push(p.key("memory"), "must be between 1 and 10000 messages");
    }
    if a.context_window
        .is_some_and(|c| !(256..=10_000_000).contains(&c))
    {
        d.push(
            p.key("context_window"),
            "must be between 256 and 10000000 tokens",
        );
    }
    if let Some(name) = &a.api_key_env {
        let ok = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            d.push(
                p.key("api_key_env"),
                "must name an environment variable (letters, digits and `_`), not hold the key",
            );
        }
    }
    check_env(&a.env, &p.key("env"), d);
    for (k, f) in a.furniture.iter().enumerate() {
        if !furniture.contains_key(f.as_str()) {
            d.push(
                p.key("furniture").index(k),
                format!("no furniture is named `{f}`; add it to the top-level `furniture`"),
            );
        }
    }
}
