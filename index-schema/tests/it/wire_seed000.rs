//! Acceptance: every JSON example of the OFC protocol spec (seed 000) parses into its wire type
//! and serializes back to equivalent JSON (`serde_json::Value` equality, key order irrelevant).
//!
//! The examples are the spec's ```` ```json ```` fences, numbered from 1 in the order they
//! appear. [`TABLE`] lists every one of them with its normalization and the documents it yields;
//! the normalized documents are committed under `tests/fixtures/wire/seed000/NN-name.json`, so
//! the round-trip test reads only them. A byte-identical copy of the seed is committed as
//! `tests/fixtures/seed000.txt`; the test always re-extracts its fences and fails if a fence was
//! added, removed or changed without the table and the fixtures following. When the shared seed
//! is present too (`shared/seeds/` next to the workspace), it must be byte-identical to that
//! copy, so a revised seed cannot go unnoticed. `OFC_BLESS=1` rewrites the fixtures from the
//! copy.
//!
//! Normalizations (only where the table says so, and the test checks each one is needed):
//! - [`Norm::Http`]: the fence shows an HTTP exchange, not a body. The request line
//!   (`POST /registry/agents`), the `Headers:` line and its indented header lines, and a `Body:`
//!   label are removed; the request line and header names are checked against the table and
//!   [`index_schema::wire::headers`]. A `Response:` line splits the rest into a request and a
//!   response document. What remains may be empty (a request without a body).
//! - [`Norm::ObjectPlaceholder`]: `{ ... }` ("some object") becomes `{}`.
//! - [`Norm::ArrayPlaceholder`]: `[...]` ("some list") becomes `[]`.
//!
//! Strings that merely contain `...` (`"ofc_agent_xyz..."`, a PEM stub) are data and stay.

// Inside `mod wire` so that `cargo test -p index-schema wire` selects these tests.
mod wire {
    use std::fs;
    use std::path::PathBuf;

    use index_schema::source::deserialize_value;
    use index_schema::wire::*;
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    /// The committed copy of seed 000 that the fences are extracted from.
    const SEED: &str = "tests/fixtures/seed000.txt";
    /// The shared seed it is a copy of, when the workspace sits next to `shared/`.
    const SHARED_SEED: &str = "../../shared/seeds/000_c56f44dee1337881.txt";
    const FIXTURES: &str = "tests/fixtures/wire/seed000";

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Norm {
        Http,
        ObjectPlaceholder,
        ArrayPlaceholder,
    }

    type Check = fn(&Value) -> Result<(), String>;

    struct Block {
        /// For `Norm::Http` fences: the request line and the header names, in order.
        http: Option<(&'static str, &'static [&'static str])>,
        norms: &'static [Norm],
        /// Fixture stem and check of each document the fence yields, in order.
        docs: &'static [(&'static str, Check)],
    }

    /// A fence that is one pure JSON document.
    macro_rules! one {
        ($name:literal, $check:expr) => {
            Block {
                http: None,
                norms: &[],
                docs: &[($name, $check)],
            }
        };
    }

    /// Parses `v` into `T` (reporting the failing field), serializes it back and compares.
    fn rt<T: DeserializeOwned + Serialize>(v: &Value) -> Result<T, String> {
        let t: T = deserialize_value(v).map_err(|d| format!("does not parse: {d}"))?;
        let back = serde_json::to_value(&t).map_err(|e| format!("does not serialize: {e}"))?;
        if back != *v {
            return Err(format!(
                "serializes differently:\nexpected {v:#}\n     got {back:#}"
            ));
        }
        Ok(t)
    }

    fn ensure(ok: bool, what: &str) -> Result<(), String> {
        if ok { Ok(()) } else { Err(what.to_string()) }
    }

    /// Every ```` ```json ```` fence of the seed, in order; index 0 is fence 01.
    const TABLE: &[Block] = &[
        one!("01-should-wake-request", |v| rt::<ShouldWakeRequest>(v)
            .map(drop)),
        one!("02-should-wake-response-wake", |v| {
            ensure(rt::<ShouldWakeResponse>(v)?.wake, "wake should be true")
        }),
        one!("03-should-wake-response-sleep", |v| {
            ensure(!rt::<ShouldWakeResponse>(v)?.wake, "wake should be false")
        }),
        one!("04-respond-request", |v| rt::<RespondRequest>(v).map(drop)),
        one!("05-respond-response-normal", |v| {
            let r = rt::<RespondResponse>(v)?;
            ensure(
                matches!(&r, RespondResponse::Reply(a) if a.tool_calls.len() == 1) && !r.is_pass(),
                "should be a reply with one tool call",
            )
        }),
        one!("06-respond-response-pass", |v| {
            let r = rt::<RespondResponse>(v)?;
            ensure(
                matches!(r, RespondResponse::Pass { reason: Some(_) }),
                "should be a pass with a reason",
            )
        }),
        one!("07-info-response", |v| {
            let i = rt::<AgentInfo>(v)?;
            ensure(
                i.activation == Some(Activation::Mention) && i.extra.is_empty(),
                "activation should be known and nothing left unknown",
            )
        }),
        one!("08-mcp-grant-request", |v| rt::<McpGrantRequest>(v)
            .map(drop)),
        one!("09-mcp-grant-response-accepted", |v| {
            ensure(rt::<McpGrantResponse>(v)?.accepted, "should be accepted")
        }),
        one!("10-mcp-grant-response-declined", |v| {
            ensure(!rt::<McpGrantResponse>(v)?.accepted, "should be declined")
        }),
        one!("11-mcp-provides-response", |v| {
            rt::<McpProvidesResponse>(v).map(drop)
        }),
        one!("12-create-floor-request", |v| rt::<CreateFloorRequest>(v)
            .map(drop)),
        one!("13-create-floor-response", |v| {
            rt::<CreateFloorResponse>(v).map(drop)
        }),
        one!("14-add-agent-request", |v| rt::<AddAgentRequest>(v)
            .map(drop)),
        one!("15-add-agent-response", |v| {
            ensure(
                rt::<AddAgentResponse>(v)?.status == AddAgentStatus::Added,
                "status should be `added`",
            )
        }),
        one!("16-post-message-request", |v| rt::<PostMessageRequest>(v)
            .map(drop)),
        one!("17-post-message-response", |v| {
            rt::<PostMessageResponse>(v).map(drop)
        }),
        one!("18-mcp-granted-response", |v| {
            rt::<McpGrantedResponse>(v).map(drop)
        }),
        one!("19-mcp-access-request", |v| rt::<McpAccessRequest>(v)
            .map(drop)),
        one!("20-mcp-access-response", |v| {
            ensure(
                rt::<McpAccessResponse>(v)?.status == AccessStatus::Pending,
                "status should be `pending`",
            )
        }),
        one!("21-floor-mcp-servers", |v| rt::<FloorMcpServers>(v)
            .map(drop)),
        one!("22-user-mcp-grants", |v| rt::<UserMcpGrants>(v).map(drop)),
        one!("23-info-provides-mcp", |v| rt::<AgentInfo>(v).map(drop)),
        one!("24-info-pricing", |v| rt::<AgentInfo>(v).map(drop)),
        one!("25-register-agent-request", |v| {
            rt::<RegisterAgentRequest>(v).map(drop)
        }),
        one!("26-register-agent-response", |v| {
            rt::<RegisterAgentResponse>(v).map(drop)
        }),
        Block {
            http: None,
            norms: &[Norm::ObjectPlaceholder],
            docs: &[("27-registry-agent", |v| rt::<RegistryAgent>(v).map(drop))],
        },
        one!("28-update-agent-request", |v| rt::<UpdateAgentRequest>(v)
            .map(drop)),
        one!("29-search-response", |v| rt::<SearchResponse>(v).map(drop)),
        Block {
            http: Some(("POST /registry/agents", &["Authorization"])),
            norms: &[Norm::Http],
            docs: &[
                ("30-register-agent-request-with-owner", |v| {
                    let r = rt::<RegisterAgentRequest>(v)?;
                    ensure(r.owner.is_some(), "owner should be present")
                }),
                ("30-register-agent-response", |v| {
                    rt::<RegisterAgentResponse>(v).map(drop)
                }),
            ],
        },
        Block {
            http: Some((
                "POST /ofc/respond",
                &[
                    "Authorization",
                    "X-OFC-Floor-ID",
                    "X-OFC-Server",
                    "X-OFC-Signature",
                ],
            )),
            norms: &[Norm::Http, Norm::ArrayPlaceholder],
            docs: &[("31-respond-request-signed", |v| {
                let r = rt::<RespondRequest>(v)?;
                ensure(
                    r.context.is_some() && r.user_id.is_some(),
                    "signed context and user_id should be present",
                )
            })],
        },
        // "Floor Server Authentication": headers only, no body.
        Block {
            http: Some((
                "POST /floors/123/mcp/sandbox/execute",
                &["Authorization", "X-OFC-Agent-ID", "X-OFC-Signature"],
            )),
            norms: &[Norm::Http],
            docs: &[],
        },
    ];

    fn manifest_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    fn fixture_path(stem: &str) -> PathBuf {
        manifest_dir().join(FIXTURES).join(format!("{stem}.json"))
    }

    /// The text of every ```` ```json ```` fence, in order.
    fn json_fences(seed: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur: Option<Vec<&str>> = None;
        for line in seed.lines() {
            match &mut cur {
                None if line.trim_end() == "```json" => cur = Some(Vec::new()),
                None => {}
                Some(_) if line.trim_end() == "```" => {
                    out.push(cur.take().unwrap_or_default().join("\n"))
                }
                Some(lines) => lines.push(line),
            }
        }
        assert!(cur.is_none(), "the seed ends inside a ```json fence");
        out
    }

    #[derive(Debug, Default)]
    struct Normalized {
        request_line: Option<String>,
        header_names: Vec<String>,
        docs: Vec<String>,
    }

    fn normalize(fence: &str, norms: &[Norm]) -> Result<Normalized, String> {
        let mut out = Normalized::default();
        let bodies: Vec<String> = if norms.contains(&Norm::Http) {
            let mut lines = fence.lines().peekable();
            let request = lines.next().unwrap_or_default();
            let method = request.split(' ').next().unwrap_or_default();
            if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method) {
                return Err(format!("expected an HTTP request line, found `{request}`"));
            }
            out.request_line = Some(request.to_string());
            while lines.peek().is_some_and(|l| l.trim().is_empty()) {
                lines.next();
            }
            if lines.peek().map(|l| l.trim_end()) == Some("Headers:") {
                lines.next();
                while let Some(l) =
                    lines.next_if(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
                {
                    let (name, _) = l
                        .trim()
                        .split_once(':')
                        .ok_or_else(|| format!("header line without `:`: `{l}`"))?;
                    out.header_names.push(name.to_string());
                }
            }
            while lines.peek().is_some_and(|l| l.trim().is_empty()) {
                lines.next();
            }
            if lines.peek().map(|l| l.trim_end()) == Some("Body:") {
                lines.next();
            }
            let rest: Vec<&str> = lines.collect();
            rest.split(|l| l.trim_end() == "Response:")
                .map(|part| part.join("\n").trim().to_string())
                .filter(|d| !d.is_empty())
                .collect()
        } else {
            vec![fence.trim().to_string()]
        };
        let mut docs = bodies;
        for (norm, from, to) in [
            (Norm::ObjectPlaceholder, "{ ... }", "{}"),
            (Norm::ArrayPlaceholder, "[...]", "[]"),
        ] {
            let present = docs.iter().any(|d| d.contains(from));
            match (norms.contains(&norm), present) {
                (true, false) => return Err(format!("{norm:?} listed but no `{from}` found")),
                (false, true) => return Err(format!("`{from}` found but {norm:?} not listed")),
                _ => {}
            }
            docs = docs.into_iter().map(|d| d.replace(from, to)).collect();
        }
        out.docs = docs;
        Ok(out)
    }

    #[test]
    fn seed_fences_match_the_table_and_the_fixtures() {
        let seed_path = manifest_dir().join(SEED);
        let seed = fs::read_to_string(&seed_path)
            .unwrap_or_else(|e| panic!("{}: {e}", seed_path.display()));
        // Without `shared/` (a fresh clone) the committed copy is all there is; with it, the
        // copy must not have fallen behind. Any error but absence fails the test.
        let shared_path = manifest_dir().join(SHARED_SEED);
        match fs::read(&shared_path) {
            Ok(shared) => assert!(
                shared == seed.as_bytes(),
                "{} differs from its committed copy {}: refresh the copy with\n  \
                 cp {} {}\nthen, if its ```json fences changed, update TABLE and rewrite the \
                 fixtures with `OFC_BLESS=1 cargo nextest run -p index-schema --test wire_seed000`",
                shared_path.display(),
                seed_path.display(),
                shared_path.display(),
                seed_path.display(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{}: {e}", shared_path.display()),
        }
        let fences = json_fences(&seed);
        assert_eq!(
            fences.len(),
            TABLE.len(),
            "the seed has {} ```json fences but the table lists {}: update TABLE and the fixtures",
            fences.len(),
            TABLE.len()
        );
        let bless = std::env::var_os("OFC_BLESS").is_some();
        let mut failures = Vec::new();
        for (i, (fence, block)) in fences.iter().zip(TABLE).enumerate() {
            let n = i + 1;
            let norm = match normalize(fence, block.norms) {
                Ok(norm) => norm,
                Err(e) => {
                    failures.push(format!("fence {n:02}: {e}"));
                    continue;
                }
            };
            match block.http {
                Some((line, names)) => {
                    if norm.request_line.as_deref() != Some(line) || norm.header_names != names {
                        failures.push(format!(
                            "fence {n:02}: request {:?} {:?}, table says {line:?} {names:?}",
                            norm.request_line, norm.header_names
                        ));
                    }
                    for h in &norm.header_names {
                        if !headers::ALL.iter().any(|k| k.eq_ignore_ascii_case(h)) {
                            failures.push(format!(
                                "fence {n:02}: header `{h}` unknown to `wire::headers`"
                            ));
                        }
                    }
                }
                None => assert!(norm.request_line.is_none()),
            }
            if norm.docs.len() != block.docs.len() {
                failures.push(format!(
                    "fence {n:02}: yields {} documents, table lists {}",
                    norm.docs.len(),
                    block.docs.len()
                ));
                continue;
            }
            for (doc, (stem, _)) in norm.docs.iter().zip(block.docs) {
                assert!(
                    stem.starts_with(&format!("{n:02}-")),
                    "{stem} is not fence {n:02}"
                );
                let path = fixture_path(stem);
                let want = format!("{doc}\n");
                if bless {
                    fs::create_dir_all(path.parent().unwrap()).unwrap();
                    fs::write(&path, &want).unwrap();
                }
                match fs::read_to_string(&path) {
                    Ok(have) if have == want => {}
                    Ok(_) => failures.push(format!(
                        "fence {n:02}: {} differs from the seed (OFC_BLESS=1 rewrites it)",
                        path.display()
                    )),
                    Err(e) => failures.push(format!("fence {n:02}: {}: {e}", path.display())),
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn every_seed_example_round_trips() {
        let mut failures = Vec::new();
        let mut count = 0;
        for (stem, check) in TABLE.iter().flat_map(|b| b.docs) {
            let path = fixture_path(stem);
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let value: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{stem}: not JSON: {e}"));
                    continue;
                }
            };
            if let Err(e) = check(&value) {
                failures.push(format!("{stem}: {e}"));
            }
            count += 1;
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert_eq!(
            count, 32,
            "31 fences with a body, one of them holding two documents"
        );
    }

    #[test]
    fn fixture_directory_holds_exactly_the_table() {
        let dir = manifest_dir().join(FIXTURES);
        let mut on_disk: Vec<String> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = TABLE
            .iter()
            .flat_map(|b| b.docs)
            .map(|(stem, _)| format!("{stem}.json"))
            .collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    #[test]
    fn harness_finds_fences_and_refuses_unlisted_placeholders() {
        let seed = "text\n```json\n{\"a\": 1}\n```\n```yaml\na: 1\n```\n```json\n{ ... }\n```\n";
        let fences = json_fences(seed);
        assert_eq!(fences, ["{\"a\": 1}", "{ ... }"]);
        assert!(
            normalize(&fences[1], &[])
                .unwrap_err()
                .contains("not listed")
        );
        assert!(
            normalize(&fences[0], &[Norm::ObjectPlaceholder])
                .unwrap_err()
                .contains("no `{ ... }`")
        );
        assert_eq!(
            normalize(&fences[1], &[Norm::ObjectPlaceholder])
                .unwrap()
                .docs,
            ["{}"]
        );
        let http = "GET /x\n\nHeaders:\n  A: b\n  X-OFC-Server: s\n\nBody:\n{\"a\": [...]}\n\nResponse:\n{}";
        let n = normalize(http, &[Norm::Http, Norm::ArrayPlaceholder]).unwrap();
        assert_eq!(n.request_line.as_deref(), Some("GET /x"));
        assert_eq!(n.header_names, ["A", "X-OFC-Server"]);
        assert_eq!(n.docs, ["{\"a\": []}", "{}"]);
        assert!(normalize("{}", &[Norm::Http]).is_err());
    }
}
