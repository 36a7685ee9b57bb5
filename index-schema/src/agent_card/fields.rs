//! The value rules of AgentCard fields, as fast-agent's card loader applies them (learned from
//! fast-agent-mcp 0.10.48; see the module docs of `agent_card`). Each check reports problems under
//! the field path of the value it looks at.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath};

/// What a field's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A string that is not blank.
    Str,
    /// Any string, blank included.
    AnyStr,
    /// `true` or `false` (YAML 1.1 spellings such as `yes` are booleans already).
    Bool,
    /// An integer (not a boolean), any sign.
    Int,
    /// An integer or a number with a fraction (not a boolean).
    Number,
    /// A list of non-blank strings; `true` when it must not be empty.
    StrList(bool),
    /// A non-blank string or a list of them (`messages`).
    Paths,
    /// A mapping of non-blank name to a list of non-blank strings (`tools`, `resources`,
    /// `prompts`).
    FilterMap,
    /// Any mapping.
    Mapping,
    /// Any value at all (fast-agent passes these through unchecked: `model`, `skills`, …).
    Any,
    /// A mapping of non-blank header name to string.
    Headers,
    /// `lifecycle_hooks`: a mapping whose keys are hook types.
    LifecycleHooks,
    /// `function_tools`: a string, or a list of entrypoints and entrypoint objects.
    FunctionTools,
    /// `commands`: slash commands a card adds.
    Commands,
    /// `tool_input_schema`: the input schema of the agent exposed as a tool.
    ToolInputSchema,
    /// `request_params`: model request parameters.
    RequestParams,
    /// `mcp_connect`: MCP servers the card connects to itself.
    McpConnect,
    /// `auth` of an `a2a` card or an `mcp_connect` entry.
    Auth,
    /// One of these strings, spelled exactly.
    OneOf(&'static [&'static str]),
}

/// Lifecycle hook types fast-agent knows.
pub(super) const LIFECYCLE_HOOK_TYPES: [&str; 2] = ["on_shutdown", "on_start"];
/// Keys an `mcp_connect` entry may have.
const MCP_CONNECT_KEYS: [&str; 10] = [
    "access_token",
    "auth",
    "connector_id",
    "defer_loading",
    "description",
    "headers",
    "management",
    "name",
    "protocol_mode",
    "target",
];
/// Provider-managed connectors (`mcp_connect[].connector_id`) fast-agent accepts.
const CONNECTOR_IDS: [&str; 8] = [
    "connector_dropbox",
    "connector_gmail",
    "connector_googlecalendar",
    "connector_googledrive",
    "connector_microsoftteams",
    "connector_outlookcalendar",
    "connector_outlookemail",
    "connector_sharepoint",
];

/// `s`, cut to `max` characters with `…`.
pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// The strings of a string or a list (other items left out).
pub(super) fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn non_blank(v: &Value) -> Option<&str> {
    v.as_str().map(str::trim).filter(|s| !s.is_empty())
}

fn one_of(choices: &[&str]) -> String {
    choices
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `v` against `kind`, reporting under `path`.
pub(super) fn check(kind: Kind, v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    match kind {
        Kind::Str => match v {
            Value::String(s) if s.trim().is_empty() => d.push(path.clone(), "must not be empty"),
            Value::String(_) => {}
            other => d.push(
                path.clone(),
                format!("must be a non-empty string, not {}", kind_of(other)),
            ),
        },
        Kind::AnyStr => {
            if !v.is_string() {
                d.push(
                    path.clone(),
                    format!("must be a string, not {}", kind_of(v)),
                );
            }
        }
        Kind::Bool => {
            if !v.is_boolean() {
                d.push(
                    path.clone(),
                    format!("must be true or false, not {}", kind_of(v)),
                );
            }
        }
        Kind::Int => {
            if v.as_i64().is_none() && v.as_u64().is_none() {
                d.push(
                    path.clone(),
                    format!("must be an integer, not {}", kind_of(v)),
                );
            }
        }
        Kind::Number => {
            if !v.is_number() {
                d.push(
                    path.clone(),
                    format!("must be a number, not {}", kind_of(v)),
                );
            }
        }
        Kind::StrList(required) => match v {
            Value::Array(items) => {
                if required && items.is_empty() {
                    d.push(path.clone(), "must name at least one agent");
                }
                for (i, item) in items.iter().enumerate() {
                    if non_blank(item).is_none() {
                        d.push(path.index(i), "must be a non-empty string");
                    }
                }
            }
            other => d.push(
                path.clone(),
                format!("must be a list of strings, not {}", kind_of(other)),
            ),
        },
        Kind::Paths => match v {
            Value::String(s) if s.trim().is_empty() => {
                d.push(path.clone(), "must not be empty (a file path)")
            }
            Value::String(_) => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if non_blank(item).is_none() {
                        d.push(path.index(i), "must be a non-empty string (a file path)");
                    }
                }
            }
            other => d.push(
                path.clone(),
                format!(
                    "must be a file path or a list of them, not {}",
                    kind_of(other)
                ),
            ),
        },
        Kind::FilterMap => match v {
            Value::Object(m) => {
                for (k, items) in m {
                    let p = path.key(k.clone());
                    if k.trim().is_empty() {
                        d.push(p, "server names must not be empty");
                        continue;
                    }
                    match items {
                        Value::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                if non_blank(item).is_none() {
                                    d.push(p.index(i), "must be a non-empty string");
                                }
                            }
                        }
                        other => d.push(
                            p,
                            format!(
                                "must be a list of names or patterns, not {}",
                                kind_of(other)
                            ),
                        ),
                    }
                }
            }
            other => d.push(
                path.clone(),
                format!(
                    "must be a mapping of server name to a list of names, not {}",
                    kind_of(other)
                ),
            ),
        },
        Kind::Mapping => {
            if !v.is_object() {
                d.push(
                    path.clone(),
                    format!("must be a mapping, not {}", kind_of(v)),
                );
            }
        }
        Kind::Any => {}
        Kind::Headers => headers(v, path, d),
        Kind::LifecycleHooks => match v {
            Value::Object(m) => {
                for k in m.keys() {
                    if !LIFECYCLE_HOOK_TYPES.contains(&k.as_str()) {
                        d.push(
                            path.key(k.clone()),
                            format!(
                                "unknown lifecycle hook type `{k}`; expected one of {}",
                                one_of(&LIFECYCLE_HOOK_TYPES)
                            ),
                        );
                    }
                }
            }
            other => d.push(
                path.clone(),
                format!(
                    "must be a mapping of hook type to `file.py:function`, not {}",
                    kind_of(other)
                ),
            ),
        },
        Kind::FunctionTools => function_tools(v, path, d),
        Kind::Commands => commands(v, path, d),
        Kind::ToolInputSchema => tool_input_schema(v, path, d),
        Kind::RequestParams => request_params(v, path, d),
        Kind::McpConnect => mcp_connect(v, path, d),
        Kind::Auth => auth(v, path, d),
        Kind::OneOf(choices) => match v.as_str() {
            Some(s) if choices.contains(&s) => {}
            _ => d.push(
                path.clone(),
                format!("must be one of {}, not {}", one_of(choices), describe(v)),
            ),
        },
    }
}

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("`{short}…`")
            } else {
                format!("`{s}`")
            }
        }
        other => kind_of(other).to_string(),
    }
}

fn headers(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    match v {
        Value::Object(m) => {
            for (k, value) in m {
                if k.trim().is_empty() {
                    d.push(path.key(k.clone()), "header names must not be empty");
                } else if !value.is_string() {
                    d.push(
                        path.key(k.clone()),
                        format!("must be a string, not {}", kind_of(value)),
                    );
                }
            }
        }
        other => d.push(
            path.clone(),
            format!(
                "must be a mapping of header name to value, not {}",
                kind_of(other)
            ),
        ),
    }
}

fn function_tools(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    const KEYS: [&str; 4] = ["code_arg", "entrypoint", "language", "variant"];
    match v {
        // A single entrypoint is taken as written.
        Value::String(_) => {}
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let p = path.index(i);
                match item {
                    Value::String(s) if s.trim().is_empty() => {
                        d.push(p, "must be a non-empty `file.py:function` entrypoint")
                    }
                    Value::String(_) => {}
                    Value::Object(m) => {
                        for k in m.keys().filter(|k| !KEYS.contains(&k.as_str())) {
                            d.push(
                                p.key(k.clone()),
                                format!(
                                    "unknown function tool key `{k}`; expected one of {}",
                                    one_of(&KEYS)
                                ),
                            );
                        }
                        match m.get("entrypoint") {
                            Some(e) if non_blank(e).is_some() => {}
                            _ => d.push(
                                p.key("entrypoint"),
                                "is required: a non-empty `file.py:function` entrypoint",
                            ),
                        }
                        match m.get("variant") {
                            None | Some(Value::Null) => {}
                            Some(Value::String(s)) if s == "code" => {}
                            Some(other) => d.push(
                                p.key("variant"),
                                format!("must be `code`, not {}", describe(other)),
                            ),
                        }
                        for k in ["code_arg", "language"] {
                            if let Some(val) = m.get(k).filter(|v| !v.is_null() && !v.is_string()) {
                                d.push(p.key(k), format!("must be a string, not {}", kind_of(val)));
                            }
                        }
                    }
                    other => d.push(
                        p,
                        format!(
                            "must be an entrypoint string or an object with `entrypoint`, not {}",
                            kind_of(other)
                        ),
                    ),
                }
            }
        }
        other => d.push(
            path.clone(),
            format!(
                "must be an entrypoint or a list of entrypoints, not {}",
                kind_of(other)
            ),
        ),
    }
}

fn commands(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    let Value::Object(m) = v else {
        d.push(
            path.clone(),
            format!(
                "must be a mapping of command name to its definition, not {}",
                kind_of(v)
            ),
        );
        return;
    };
    let mut seen: Vec<String> = Vec::new();
    for (name, def) in m {
        let p = path.key(name.clone());
        let normalized = name.trim().to_lowercase();
        let normalized = normalized.trim_start_matches('/');
        if normalized.is_empty() {
            d.push(p, "command names must not be empty");
            continue;
        }
        if seen.iter().any(|s| s == normalized) {
            d.push(
                p,
                format!("command `/{normalized}` is defined twice (names ignore case and `/`)"),
            );
            continue;
        }
        seen.push(normalized.to_string());
        let Value::Object(def) = def else {
            d.push(
                p,
                format!(
                    "must be a mapping with `description` and `handler`, not {}",
                    kind_of(def)
                ),
            );
            continue;
        };
        for k in ["description", "handler"] {
            if def.get(k).and_then(non_blank).is_none() {
                d.push(p.key(k), "is required and must be a non-empty string");
            }
        }
        for k in ["input_hint", "key", "completer"] {
            if let Some(val) = def.get(k).filter(|v| !v.is_null() && !v.is_string()) {
                d.push(p.key(k), format!("must be a string, not {}", kind_of(val)));
            }
        }
    }
}

fn tool_input_schema(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    let Value::Object(m) = v else {
        d.push(
            path.clone(),
            format!("must be a JSON Schema mapping, not {}", kind_of(v)),
        );
        return;
    };
    if m.get("type").and_then(Value::as_str) != Some("object") {
        d.push(path.key("type"), "must be `object`");
    }
    let mut properties: Vec<String> = Vec::new();
    match m.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(props)) => {
            for (k, schema) in props {
                if k.trim().is_empty() {
                    d.push(
                        path.key("properties").key(k.clone()),
                        "property names must not be empty",
                    );
                    continue;
                }
                properties.push(k.trim().to_string());
                if !schema.is_object() {
                    d.push(
                        path.key("properties").key(k.clone()),
                        format!("must be a schema mapping, not {}", kind_of(schema)),
                    );
                }
            }
        }
        Some(other) => d.push(
            path.key("properties"),
            format!("must be a mapping, not {}", kind_of(other)),
        ),
    }
    match m.get("required") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match non_blank(item) {
                    None => d.push(
                        path.key("required").index(i),
                        "must be a non-empty property name",
                    ),
                    Some(name) if !properties.iter().any(|p| p == name) => d.push(
                        path.key("required").index(i),
                        format!("names `{name}`, which is not in `properties`"),
                    ),
                    Some(_) => {}
                }
            }
        }
        Some(other) => d.push(
            path.key("required"),
            format!("must be a list of property names, not {}", kind_of(other)),
        ),
    }
    if let Some(ap) = m.get("additionalProperties")
        && !(ap.is_null() || ap.is_boolean() || ap.is_object())
    {
        d.push(
            path.key("additionalProperties"),
            format!("must be true, false or a schema, not {}", kind_of(ap)),
        );
    }
}

/// A value pydantic reads as an integer in lax mode.
fn lax_int(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Value::String(s) => {
            let t = s.trim().replace('_', "");
            let t = t.strip_prefix(['-', '+']).unwrap_or(&t);
            !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())
        }
        Value::Bool(_) => true,
        _ => false,
    }
}

/// A value pydantic reads as a float in lax mode.
fn lax_float(v: &Value) -> bool {
    match v {
        Value::Number(_) | Value::Bool(_) => true,
        Value::String(s) => s.trim().parse::<f64>().is_ok(),
        _ => false,
    }
}

/// A value pydantic reads as a boolean in lax mode.
fn lax_bool(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|i| i == 0 || i == 1),
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "0" | "1" | "true" | "false" | "t" | "f" | "yes" | "no" | "y" | "n" | "on" | "off"
        ),
        _ => false,
    }
}

/// The request parameters fast-agent reads by type; others are kept as written.
fn request_params(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    let Value::Object(m) = v else {
        d.push(
            path.clone(),
            format!("must be a mapping, not {}", kind_of(v)),
        );
        return;
    };
    for (k, val) in m {
        if val.is_null() {
            continue;
        }
        let p = path.key(k.clone());
        let (ok, what) = match k.as_str() {
            "maxTokens" | "max_tokens" | "maxIterations" | "max_iterations" | "topK" | "top_k" => {
                (lax_int(val), "an integer")
            }
            "temperature" | "topP" | "top_p" | "minP" | "min_p" | "presencePenalty"
            | "presence_penalty" | "frequencyPenalty" | "frequency_penalty"
            | "repetitionPenalty" | "repetition_penalty" | "streamingTimeout"
            | "streaming_timeout" => (lax_float(val), "a number"),
            "useHistory"
            | "use_history"
            | "parallelToolCalls"
            | "parallel_tool_calls"
            | "emitLoopProgress"
            | "emit_loop_progress" => (lax_bool(val), "true or false"),
            "model" | "systemPrompt" | "system_prompt" => (val.is_string(), "a string"),
            "stopSequences" | "stop_sequences" => (
                val.as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string)),
                "a list of strings",
            ),
            "metadata" | "templateVars" | "template_vars" | "mcpMetadata" | "mcp_metadata"
            | "structuredSchema" | "structured_schema" => (val.is_object(), "a mapping"),
            _ => (true, ""),
        };
        if !ok {
            d.push(p, format!("must be {what}, not {}", kind_of(val)));
        }
    }
}

fn auth(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    let Value::Object(m) = v else {
        d.push(
            path.clone(),
            format!("must be a mapping, not {}", kind_of(v)),
        );
        return;
    };
    for (k, val) in m {
        let p = path.key(k.clone());
        match k.as_str() {
            "oauth" if !lax_bool(val) => d.push(p, "must be true or false"),
            "redirect_port" if val.is_boolean() || !lax_int(val) => {
                d.push(p, "must be an integer port")
            }
            "redirect_path" if !val.is_string() => d.push(p, "must be a string"),
            "persist" if !matches!(val.as_str(), Some("keyring" | "memory")) => {
                d.push(p, "must be `keyring` or `memory`")
            }
            "forward" if !(val.is_null() || val.as_str() == Some("huggingface")) => {
                d.push(p, "must be `huggingface`")
            }
            "client_metadata_url" if !val.is_null() => match val.as_str() {
                Some(s) => match url::Url::parse(s) {
                    Ok(u) if u.scheme() == "https" && !matches!(u.path(), "" | "/") => {}
                    _ => d.push(p, "must be an https:// URL with a path"),
                },
                None => d.push(p, "must be a string"),
            },
            _ => {}
        }
    }
}

/// `mcp_connect`: a list of entries, or a mapping of server name to entry.
fn mcp_connect(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    let entries: Vec<(FieldPath, Option<String>, &Value)> = match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, e)| (path.index(i), None, e))
            .collect(),
        Value::Object(m) => {
            let mut seen: Vec<&str> = Vec::new();
            let mut out = Vec::new();
            for (k, e) in m {
                let name = k.trim();
                if name.is_empty() {
                    d.push(path.key(k.clone()), "server names must not be empty");
                    continue;
                }
                if seen.contains(&name) {
                    d.push(
                        path.key(k.clone()),
                        format!("server name `{name}` is used twice (names are trimmed)"),
                    );
                }
                seen.push(name);
                out.push((path.key(k.clone()), Some(name.to_string()), e));
            }
            out
        }
        other => {
            d.push(
                path.clone(),
                format!(
                    "must be a list of entries or a mapping of server name to entry, not {}",
                    kind_of(other)
                ),
            );
            return;
        }
    };
    for (p, key_name, entry) in entries {
        let Value::Object(e) = entry else {
            d.push(
                p,
                format!(
                    "must be a mapping with `target` (or `connector_id`), not {}",
                    kind_of(entry)
                ),
            );
            continue;
        };
        mcp_connect_entry(e, &p, key_name.as_deref(), d);
    }
}

fn mcp_connect_entry(
    e: &Map<String, Value>,
    p: &FieldPath,
    key_name: Option<&str>,
    d: &mut Diagnostics,
) {
    let before = d.0.len();
    for k in e.keys().filter(|k| !MCP_CONNECT_KEYS.contains(&k.as_str())) {
        d.push(
            p.key(k.clone()),
            format!(
                "unknown `mcp_connect` key `{k}`; expected one of {}",
                one_of(&MCP_CONNECT_KEYS)
            ),
        );
    }
    let get = |k: &str| e.get(k).filter(|v| !v.is_null());
    let non_blank_field = |k: &str, d: &mut Diagnostics| -> Option<String> {
        let v = get(k)?;
        match non_blank(v) {
            Some(s) => Some(s.to_string()),
            None => {
                d.push(p.key(k), "must be a non-empty string");
                None
            }
        }
    };
    let target = non_blank_field("target", d);
    let name = non_blank_field("name", d);
    let connector = non_blank_field("connector_id", d);
    if let (Some(key), Some(n)) = (key_name, name.as_deref())
        && key != n
    {
        d.push(
            p.key("name"),
            format!("must match the mapping key `{key}` when given"),
        );
    }
    let has_name = key_name.is_some() || name.is_some();
    match (&target, &connector) {
        (None, None) if get("target").is_none() && get("connector_id").is_none() => d.push(
            p.key("target"),
            "is required (a URL, a package or a command) unless `connector_id` is set",
        ),
        (Some(_), Some(_)) => d.push(p.clone(), "set exactly one of `target` and `connector_id`"),
        _ => {}
    }
    if connector.is_some() && !has_name {
        d.push(p.key("name"), "is required when `connector_id` is set");
    }
    for k in ["description", "access_token"] {
        if let Some(v) = get(k).filter(|v| !v.is_string()) {
            d.push(p.key(k), format!("must be a string, not {}", kind_of(v)));
        }
    }
    let management = get("management");
    if let Some(m) = management
        && !matches!(m.as_str().map(str::trim), Some("client" | "provider"))
    {
        d.push(
            p.key("management"),
            format!("must be `client` or `provider`, not {}", describe(m)),
        );
    }
    if let Some(h) = get("headers") {
        headers(h, &p.key("headers"), d);
    }
    if let Some(v) = get("defer_loading").filter(|v| !v.is_boolean()) {
        d.push(
            p.key("defer_loading"),
            format!("must be true or false, not {}", kind_of(v)),
        );
    }
    if let Some(a) = get("auth").filter(|a| !a.is_object()) {
        d.push(
            p.key("auth"),
            format!("must be a mapping, not {}", kind_of(a)),
        );
    }
    if let Some(m) = get("protocol_mode")
        && !matches!(m.as_str(), Some("auto" | "modern" | "legacy"))
    {
        d.push(
            p.key("protocol_mode"),
            format!("must be `auto`, `modern` or `legacy`, not {}", describe(m)),
        );
    }
    if d.0.len() != before {
        return;
    }
    // A target is taken as written (fast-agent resolves it when it connects); a provider-managed
    // connector is checked as fast-agent builds its server settings when it loads the card.
    let Some(c) = &connector else {
        return;
    };
    let provider = management.and_then(Value::as_str).map(str::trim) == Some("provider");
    if !CONNECTOR_IDS.contains(&c.as_str()) {
        d.push(
            p.key("connector_id"),
            format!(
                "unknown connector `{c}`; expected one of {}",
                one_of(&CONNECTOR_IDS)
            ),
        );
    } else if !provider {
        d.push(
            p.key("connector_id"),
            "needs `management: provider` (connectors are provider-managed)",
        );
    } else if get("access_token").is_none() {
        d.push(
            p.key("access_token"),
            "is required for a provider-managed connector",
        );
    } else {
        for k in ["headers", "auth"] {
            if get(k).is_some() {
                d.push(p.key(k), "is not supported on a provider-managed connector");
            }
        }
    }
}
