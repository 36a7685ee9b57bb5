//! Edge cases of the OFC wire types: passes, absent optional fields, unknown fields and values,
//! errors that name the field, secrets kept out of `Debug`.

// Inside `mod wire` so that `cargo test -p index-schema wire` selects these tests.
mod wire {
    use index_schema::source::{deserialize_value, parse_json};
    use index_schema::wire::*;
    use proptest::prelude::*;
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn parse<T: DeserializeOwned>(v: Value) -> T {
        deserialize_value(&v).unwrap_or_else(|d| panic!("{v}: {d}"))
    }

    /// The field path and message of the error `v` gives as a `T`.
    fn error<T: DeserializeOwned + std::fmt::Debug>(v: Value) -> (String, String) {
        let d = deserialize_value::<T>(&v).expect_err("should not parse");
        (d.0[0].path.to_string(), d.0[0].message.clone())
    }

    fn to_json<T: Serialize>(t: &T) -> Value {
        serde_json::to_value(t).unwrap()
    }

    fn message(ts: &str) -> Value {
        json!({"id": "msg-1", "from": "@user", "content": "hi", "timestamp": ts})
    }

    // --- passes ---

    #[test]
    fn pass_object_is_a_pass_with_or_without_reason() {
        let r: RespondResponse = parse(json!({"pass": true}));
        assert!(r.is_pass());
        assert_eq!(r.content(), None);
        assert_eq!(to_json(&r), json!({"pass": true}));
        let r: RespondResponse = parse(json!({"pass": true, "reason": "nothing to add"}));
        assert_eq!(r, RespondResponse::pass(Some("nothing to add".to_string())));
    }

    #[test]
    fn pass_marker_content_is_a_pass_and_round_trips_as_content() {
        for content in ["[PASS]", " [PASS]\n"] {
            let v = json!({"content": content});
            let r: RespondResponse = parse(v.clone());
            assert!(r.is_pass(), "{content:?}");
            assert_eq!(r.content(), None);
            assert!(matches!(r, RespondResponse::Reply(_)));
            assert_eq!(to_json(&r), v);
        }
    }

    #[test]
    fn content_that_only_mentions_pass_is_a_reply() {
        for content in ["[PASS] but one remark", "I would [PASS]", "[pass]", "PASS"] {
            let r: RespondResponse = parse(json!({"content": content}));
            assert!(!r.is_pass(), "{content:?}");
            assert_eq!(r.content(), Some(content));
        }
    }

    #[test]
    fn pass_false_with_content_is_a_reply_and_pass_true_wins_over_content() {
        let r: RespondResponse = parse(json!({"pass": false, "content": "here"}));
        assert_eq!(r, RespondResponse::reply("here"));
        let r: RespondResponse = parse(json!({"pass": true, "content": "ignored"}));
        assert_eq!(r, RespondResponse::Pass { reason: None });
    }

    #[test]
    fn response_without_content_or_pass_is_refused() {
        let (path, msg) = error::<RespondResponse>(json!({"tool_calls": []}));
        assert_eq!(path, "(document)");
        assert!(msg.contains("missing field `content`"), "{msg}");
        let (_, msg) = error::<RespondResponse>(json!({"pass": false}));
        assert!(msg.contains("`content`"), "{msg}");
    }

    #[test]
    fn respond_response_errors_name_the_field() {
        assert_eq!(error::<RespondResponse>(json!({"pass": "yes"})).0, "pass");
        assert_eq!(error::<RespondResponse>(json!({"content": 7})).0, "content");
        assert_eq!(
            error::<RespondResponse>(json!({
                "content": "x",
                "tool_calls": [{"name": "bash", "arguments": "head -5 sales.csv"}]
            }))
            .0,
            "tool_calls[0].arguments"
        );
        assert_eq!(
            error::<RespondResponse>(json!({"content": "x", "tool_calls": [{"arguments": {}}]})).1,
            "missing field `name`"
        );
    }

    #[test]
    fn reply_with_empty_tool_lists_is_written_without_them() {
        let r: RespondResponse =
            parse(json!({"content": "x", "tool_calls": [], "tool_results": []}));
        assert_eq!(to_json(&r), json!({"content": "x"}));
        let r: RespondResponse = parse(json!({"content": "x", "tool_calls": [{"name": "ls"}]}));
        assert_eq!(
            to_json(&r),
            json!({"content": "x", "tool_calls": [{"name": "ls", "arguments": {}}]})
        );
    }

    // --- absent optional fields ---

    #[test]
    fn should_wake_optional_fields() {
        let r: ShouldWakeResponse = parse(json!({"wake": false}));
        assert_eq!(r, ShouldWakeResponse::sleep());
        assert_eq!(to_json(&r), json!({"wake": false}));
        assert_eq!(
            to_json(&ShouldWakeResponse::wake("mine")),
            json!({"wake": true, "reason": "mine"})
        );
        assert_eq!(
            error::<ShouldWakeResponse>(json!({})).1,
            "missing field `wake`"
        );

        let req: ShouldWakeRequest = parse(json!({
            "floor_id": "floor-1",
            "last_message": message("2024-01-15T10:30:00Z"),
            "context": {"recent_speakers": [], "mentioned_you": true}
        }));
        assert_eq!(req.context.your_last_message_id, None);
        assert!(
            !to_json(&req)["context"]
                .as_object()
                .unwrap()
                .contains_key("your_last_message_id")
        );
        // A floor that sends no context at all is still understood.
        let req: ShouldWakeRequest = parse(json!({
            "floor_id": "floor-1",
            "last_message": message("2024-01-15T10:30:00Z")
        }));
        assert_eq!(req.context, WakeContext::default());
    }

    #[test]
    fn respond_request_minimal_and_signed() {
        let v = json!({"floor_id": "floor-1", "messages": [message("2024-01-15T10:30:00Z")]});
        let r: RespondRequest = parse(v.clone());
        assert_eq!(
            (&r.wake_reason, &r.initiator, &r.user_id, &r.context),
            (&None, &None, &None, &None)
        );
        assert_eq!(to_json(&r), v);

        let r: RespondRequest = parse(json!({
            "floor_id": "floor-1", "messages": [], "wake_reason": "should_wake",
            "context": {"server": "https://f", "server_pubkey": "k",
                        "timestamp": "2024-01-15T10:30:00+00:00", "nonce": "n"}
        }));
        assert_eq!(r.wake_reason, Some(WakeReason::ShouldWake));
        assert_eq!(r.context.unwrap().timestamp.unix_seconds(), 1_705_314_600);
    }

    #[test]
    fn next_agent_may_be_null_or_absent_and_is_written_as_null() {
        for v in [
            json!({"message_id": "m"}),
            json!({"message_id": "m", "next_agent": null}),
        ] {
            let r: PostMessageResponse = parse(v);
            assert_eq!(r.next_agent, None);
            assert_eq!(to_json(&r), json!({"message_id": "m", "next_agent": null}));
        }
    }

    #[test]
    fn grant_responses_have_the_spec_shapes() {
        assert_eq!(
            to_json(&McpGrantResponse::accept("thanks")),
            json!({"accepted": true, "message": "thanks"})
        );
        assert_eq!(
            to_json(&McpGrantResponse::decline("not needed")),
            json!({"accepted": false, "reason": "not needed"})
        );
    }

    #[test]
    fn user_grants_without_permissions_differ_from_empty_permissions() {
        let g: GrantedMcp = parse(json!({"name": "e", "url": "mcp://localhost:3000/editor"}));
        assert_eq!(g.permissions, None);
        let g: GrantedMcp = parse(json!({"name": "e", "url": "mcp://x", "permissions": []}));
        assert_eq!(g.permissions, Some(vec![]));
        assert_eq!(to_json(&g)["permissions"], json!([]));
    }

    #[test]
    fn create_floor_without_config() {
        let r: CreateFloorRequest = parse(json!({"name": "n"}));
        assert_eq!(r.config, None);
        assert_eq!(to_json(&r), json!({"name": "n"}));
        let r: CreateFloorRequest = parse(json!({"name": "n", "config": {"history_limit": 5}}));
        assert_eq!(
            to_json(&r),
            json!({"name": "n", "config": {"history_limit": 5}})
        );
    }

    #[test]
    fn agent_info_may_be_empty() {
        let i: AgentInfo = parse(json!({}));
        assert_eq!(i, AgentInfo::default());
        assert_eq!(to_json(&i), json!({}));
    }

    // --- unknown fields and values ---

    #[test]
    fn unknown_fields_are_accepted() {
        let req: ShouldWakeRequest = parse(json!({
            "floor_id": "floor-1",
            "last_message": {
                "id": "m", "from": "@user", "content": "hi",
                "timestamp": "2024-01-15T10:30:00Z", "attachments": []
            },
            "context": {"recent_speakers": ["@user"], "mentioned_you": false, "mood": "calm"},
            "protocol_version": "0.2"
        }));
        assert_eq!(req.last_message.from, "@user");
        // Dropped on the way out: only info-like objects keep what they do not know.
        assert!(to_json(&req).get("protocol_version").is_none());
        let r: RespondResponse = parse(json!({"content": "x", "model": "qwen3", "usage": {}}));
        assert_eq!(r, RespondResponse::reply("x"));
    }

    #[test]
    fn info_and_metadata_keep_unknown_fields() {
        let v = json!({
            "id": "@code",
            "version": "1.2.0",
            "pricing": {"currency": "EUR", "per_token": 0.00001},
            "activation": "sometimes"
        });
        let i: AgentInfo = parse(v.clone());
        assert_eq!(i.extra["version"], "1.2.0");
        let pricing = i.pricing.as_ref().unwrap();
        assert_eq!(pricing.per_hour, None);
        assert_eq!(pricing.extra["per_token"], 0.00001);
        assert_eq!(
            i.activation,
            Some(Activation::Other("sometimes".to_string()))
        );
        assert_eq!(to_json(&i), v);

        let m: AgentMetadata = parse(json!({"tagline": "t", "homepage": "https://x"}));
        assert_eq!(m.extra["homepage"], "https://x");
    }

    #[test]
    fn open_vocabularies_map_known_values_and_keep_others() {
        assert_eq!(Activation::from("always"), Activation::Always);
        assert_eq!(Permission::from("execute"), Permission::Execute);
        assert_eq!(AccessStatus::from("approved"), AccessStatus::Approved);
        assert_eq!(
            WakeReason::from("mentioned_with_question"),
            WakeReason::MentionedWithQuestion
        );
        let p: Vec<Permission> = parse(json!(["read", "admin"]));
        assert_eq!(
            p,
            vec![Permission::Read, Permission::Other("admin".to_string())]
        );
        assert_eq!(to_json(&p), json!(["read", "admin"]));
        assert_eq!(RegistryStatus::Active.to_string(), "active");
        assert_eq!(
            error::<Permission>(json!(3)).1,
            "wrong type: integer `3`, expected a string"
        );
    }

    // --- errors name the field ---

    #[test]
    fn bad_types_name_the_field() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"floor_id": "f", "last_message": message("2024-01-15T10:30:00Z"),
                   "context": {"mentioned_you": "no"}}),
                "context.mentioned_you",
            ),
            (
                json!({"floor_id": 123, "last_message": message("2024-01-15T10:30:00Z")}),
                "floor_id",
            ),
            (
                json!({"floor_id": "f", "last_message": message("2024-01-15T10:30:00Z"),
                   "context": {"recent_speakers": ["@user", 1]}}),
                "context.recent_speakers[1]",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(error::<ShouldWakeRequest>(v).0, want);
        }
        assert_eq!(
            error::<CreateFloorRequest>(json!({"name": "n", "config": {"max_agents": -1}})).0,
            "config.max_agents"
        );
        assert_eq!(
            error::<RegistryAgent>(json!({
                "id": "@c", "endpoint": "e", "status": "active",
                "stats": {"floors_active": 1, "avg_rating": "high", "total_hours": 2}
            }))
            .0,
            "stats.avg_rating"
        );
        assert_eq!(
            error::<McpGrantRequest>(json!({
                "floor_id": "f", "granted_by": "@floor-manager",
                "mcp": {"name": "s", "url": "u", "permissions": "all"}
            }))
            .0,
            "mcp.permissions"
        );
        assert_eq!(
            error::<RegisterAgentRequest>(json!({"id": "@c", "endpoint": "e"})).1,
            "missing field `public_key`"
        );
    }

    #[test]
    fn bad_timestamp_names_the_field_and_its_position() {
        let (path, msg) = error::<RespondRequest>(json!({
            "floor_id": "f",
            "messages": [message("2024-01-15T10:30:00Z"), message("yesterday")]
        }));
        assert_eq!(path, "messages[1].timestamp");
        assert!(
            msg.contains("RFC 3339") && msg.contains("yesterday"),
            "{msg}"
        );

        let text = "{\n  \"floor_id\": \"f\",\n  \"last_message\": {\n    \"id\": \"m\", \"from\": \"@u\", \"content\": \"\",\n    \"timestamp\": \"2024-02-30T00:00:00Z\"\n  }\n}";
        let err = parse_json(text)
            .unwrap()
            .deserialize::<ShouldWakeRequest>()
            .unwrap_err();
        let d = &err.0[0];
        assert_eq!(d.path.to_string(), "last_message.timestamp");
        assert_eq!(d.position.map(|p| p.line), Some(5));
        assert!(d.message.contains("day out of range"), "{}", d.message);
    }

    // --- secrets, helpers ---

    #[test]
    fn tokens_are_redacted_in_debug_but_serialized() {
        let r: CreateFloorResponse =
            parse(json!({"floor_id": "f", "join_token": "secret-token-xyz"}));
        assert!(!format!("{r:?}").contains("secret-token-xyz"));
        assert_eq!(r.join_token.expose(), "secret-token-xyz");
        assert_eq!(to_json(&r)["join_token"], "secret-token-xyz");
        let r: RegisterAgentResponse = parse(json!({
            "agent_id": "@c", "agent_token": "ofc_agent_xyz...", "status": "active", "registry": "r"
        }));
        assert!(!format!("{r:#?}").contains("ofc_agent_xyz"));
    }

    #[test]
    fn agent_urls_join_endpoint_and_path() {
        assert_eq!(
            agent_url("https://code-agent.example.com/ofc", AgentCall::Info),
            "https://code-agent.example.com/ofc/info"
        );
        assert_eq!(
            agent_url("https://code-agent.example.com/ofc/", AgentCall::ShouldWake),
            "https://code-agent.example.com/ofc/should-wake"
        );
        assert_eq!(
            agent_url("http://127.0.0.1:8080", AgentCall::McpGrant),
            "http://127.0.0.1:8080/ofc/mcp/grant"
        );
        assert_eq!(
            agent_url("http://h/agents/code", AgentCall::McpProvides),
            "http://h/agents/code/ofc/mcp/provides"
        );
    }

    #[test]
    fn metadata_patch_replaces_only_present_fields() {
        let mut m: AgentMetadata = parse(json!({
            "name": "Code Assistant", "tagline": "old", "capabilities": ["bash"], "color": "blue"
        }));
        let patch: UpdateAgentRequest =
            parse(json!({"metadata": {"tagline": "Updated tagline!", "color": null, "x": 1}}));
        m.apply_patch(&patch.metadata);
        assert_eq!(
            to_json(&m),
            json!({"name": "Code Assistant", "tagline": "Updated tagline!",
               "capabilities": ["bash"], "x": 1})
        );
        m.apply_patch(&parse(json!({"capabilities": []})));
        assert_eq!(m.capabilities, Some(vec![]));
    }

    #[test]
    fn search_query_capabilities_split_on_commas() {
        let q: SearchQuery = parse(json!({"q": "data analysis", "capabilities": "python, sql,,"}));
        assert_eq!(q.capability_list(), ["python", "sql"]);
        assert!(SearchQuery::default().capability_list().is_empty());
    }

    #[test]
    fn total_hours_are_whole_when_whole() {
        let s: AgentStats = parse(json!({"floors_active": 1, "total_hours": 5420.0}));
        assert_eq!(
            to_json(&s),
            json!({"floors_active": 1, "total_hours": 5420})
        );
        let s: AgentStats = parse(json!({"floors_active": 1, "total_hours": 12.5}));
        assert_eq!(to_json(&s)["total_hours"], json!(12.5));
    }

    #[test]
    fn floor_state_and_message_list_round_trip() {
        let v = json!({
            "floor_id": "floor-123",
            "agents": [{"agent_id": "@code", "endpoint": "https://c/ofc",
                        "info": {"tagline": "code"}}, {"agent_id": "@data"}],
            "workstations": [{"name": "sandbox", "url": "mcp://x", "capabilities": ["bash"]}],
            "config": {"max_agents": 10}
        });
        let s: FloorState = parse(v.clone());
        assert_eq!(to_json(&s), v);
        let v = json!({"messages": [message("2024-01-15T10:30:05Z")]});
        assert_eq!(to_json(&parse::<MessageList>(v.clone())), v);
        let q: MessagesQuery = parse(json!({"since": "msg-1", "limit": 50}));
        assert_eq!(q.limit, Some(50));
    }

    #[test]
    fn messages_keep_tool_activity_and_older_messages_still_parse() {
        // The draft's message (no tool fields) parses and is written back unchanged.
        let plain = message("2024-01-15T10:30:05Z");
        let m: Message = parse(plain.clone());
        assert!(m.tool_calls.is_empty() && m.tool_results.is_empty());
        assert_eq!(to_json(&m), plain);
        // A message with tool activity keeps it, in order, results of any JSON type.
        let v = json!({"id": "msg-2", "from": "@data", "content": "done",
            "timestamp": "2024-01-15T10:30:06Z",
            "tool_calls": [{"name": "bash", "arguments": {"cmd": "ls"}},
                           {"name": "board__add", "arguments": {"title": "t"}}],
            "tool_results": ["a.csv\n", {"id": 1}]});
        let m: Message = parse(v.clone());
        assert_eq!(m.tool_calls[1].name, "board__add");
        assert_eq!(m.tool_results[1], json!({"id": 1}));
        assert_eq!(to_json(&m), v);
        let (path, _) = error::<Message>(json!({"id": "m", "from": "@a", "content": "",
            "timestamp": "2024-01-15T10:30:06Z", "tool_calls": [{"arguments": {}}]}));
        assert!(path.starts_with("tool_calls[0]"), "{path}");
    }

    proptest! {
        #[test]
        fn any_reply_content_round_trips(content in ".*", reason in proptest::option::of(".*")) {
            let reply = RespondResponse::reply(content.clone());
            let back: RespondResponse = deserialize_value(&to_json(&reply)).unwrap();
            prop_assert_eq!(&back, &reply);
            prop_assert_eq!(back.is_pass(), content.trim() == PASS_MARKER);
            let pass = RespondResponse::pass(reason);
            let back: RespondResponse = deserialize_value(&to_json(&pass)).unwrap();
            prop_assert_eq!(back, pass);
        }

        #[test]
        fn timestamps_round_trip_through_unix_seconds(secs in -62_167_219_200i64..253_402_300_800) {
            let t = Timestamp::from_unix_seconds(secs).unwrap();
            let back: Timestamp = serde_json::from_value(to_json(&t)).unwrap();
            prop_assert_eq!(back.unix_seconds(), secs);
            prop_assert_eq!(back, t);
        }
    }

    #[test]
    fn errors_inside_objects_with_extra_fields_still_name_the_field() {
        assert_eq!(
            error::<AgentInfo>(json!({"capabilities": 3})).0,
            "capabilities"
        );
        assert_eq!(
            error::<AddAgentResponse>(json!({
                "agent_id": "@c", "endpoint": "e", "status": "added",
                "info": {"provides_mcp": {"url": 1}}
            }))
            .0,
            "info.provides_mcp.url"
        );
        assert_eq!(
            error::<RegisterAgentRequest>(json!({
                "id": "@c", "endpoint": "e", "public_key": "k",
                "metadata": {"examples": ["ok", false]}
            }))
            .0,
            "metadata.examples[1]"
        );
    }
}
