//! The authorization matrix: every case states the exact status and code; a success where a
//! refusal is expected is an escalation and fails the test.

use hub_core::auth::{Scope, TOKEN_PREFIX, generate_token, hash_token};
use hub_core::store::{Actor, now_ms};
use index_schema::envelope::SecretKey;
use ofc_test_kit::{Backend, TestHub, remote_manifest};
use reqwest::Method;
use serde_json::json;

#[derive(Debug, Clone)]
enum Action {
    PublishNew(&'static str),
    PublishUpdate,
    PublishSignedBy(SecretKey),
    Yank,
    Deprecate,
    AddKey,
    RevokeKey,
    SetMember(&'static str),
    DeleteAgent,
    DeleteVersion,
    Audit,
    CreateToken(Vec<&'static str>, Vec<&'static str>),
    RevokeToken(i64),
    CreateNamespace(&'static str),
    Me,
}

struct Matrix {
    app: TestHub,
    version: std::sync::atomic::AtomicU32,
}

impl Matrix {
    async fn run(&self, action: &Action, token: Option<&str>) -> (u16, String) {
        let app = &self.app;
        let alice = &app.user;
        let next = || {
            let n = self
                .version
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            format!("1.0.{n}")
        };
        let (s, body) = match action {
            Action::PublishNew(agent) => {
                let m = remote_manifest(&format!("alice/{agent}"), "1.0.0");
                app.publish(token.unwrap_or(""), &alice.key, &m, None).await
            }
            Action::PublishUpdate => {
                let m = remote_manifest("alice/code", &next());
                app.publish(token.unwrap_or(""), &alice.key, &m, None).await
            }
            Action::PublishSignedBy(key) => {
                let m = remote_manifest("alice/code", &next());
                app.publish(token.unwrap_or(""), key, &m, None).await
            }
            other => {
                let (m, path, body) = match other {
                    Action::Yank => (
                        Method::PUT,
                        "/api/v1/agents/alice/code/versions/1.0.0/yank".to_string(),
                        Some(json!({"reason": "x"})),
                    ),
                    Action::Deprecate => (
                        Method::PUT,
                        "/api/v1/agents/alice/code/versions/1.0.0/deprecation".to_string(),
                        Some(json!({"message": "x"})),
                    ),
                    Action::AddKey => (
                        Method::POST,
                        "/api/v1/namespaces/alice/keys".to_string(),
                        Some(
                            json!({"public_key": SecretKey::from_seed(&[77; 32]).public_key().to_string()}),
                        ),
                    ),
                    Action::RevokeKey => (
                        Method::DELETE,
                        format!("/api/v1/namespaces/alice/keys/{}", alice.key.key_id()),
                        None,
                    ),
                    Action::SetMember(user) => (
                        Method::PUT,
                        format!("/api/v1/namespaces/alice/members/{user}"),
                        Some(json!({"role": "owner"})),
                    ),
                    Action::DeleteAgent => (
                        Method::DELETE,
                        "/api/v1/agents/alice/code".to_string(),
                        None,
                    ),
                    Action::DeleteVersion => (
                        Method::DELETE,
                        "/api/v1/agents/alice/code/versions/1.0.0".to_string(),
                        None,
                    ),
                    Action::Audit => (Method::GET, "/api/v1/audit".to_string(), None),
                    Action::CreateToken(scopes, ns) => (
                        Method::POST,
                        "/api/v1/tokens".to_string(),
                        Some(json!({"name": "t", "scopes": scopes, "namespaces": ns})),
                    ),
                    Action::RevokeToken(id) => {
                        (Method::DELETE, format!("/api/v1/tokens/{id}"), None)
                    }
                    Action::CreateNamespace(n) => (
                        Method::POST,
                        "/api/v1/namespaces".to_string(),
                        Some(json!({"name": n})),
                    ),
                    Action::Me => (Method::GET, "/api/v1/me".to_string(), None),
                    _ => unreachable!(),
                };
                app.call(m, &path, token, body).await
            }
        };
        (s, body["code"].as_str().unwrap_or("").to_string())
    }
}

#[tokio::test]
async fn authorization_matrix_has_no_escalation() {
    let app = TestHub::in_process(Backend::Sqlite).await;
    let alice = app.user.clone();
    let bob = app.new_user("bob", false).await;
    let carol = app.new_user("carol", false).await;
    let dave = app.new_user("dave", false).await;
    let root = app.new_user("root-admin", true).await;
    hub_core::admin::set_member(app.store(), "alice", "carol", "publisher")
        .await
        .unwrap();
    hub_core::admin::set_member(app.store(), "alice", "dave", "maintainer")
        .await
        .unwrap();
    assert_eq!(
        app.publish(
            &alice.token,
            &alice.key,
            &remote_manifest("alice/code", "1.0.0"),
            None
        )
        .await
        .0,
        201
    );

    let all = ofc_test_kit::user_scopes();
    let t_no_new = app.token_without("alice", Scope::PublishNew).await;
    let t_no_update = app.token_without("alice", Scope::PublishUpdate).await;
    let t_no_yank = app.token_without("alice", Scope::Yank).await;
    let t_no_keys = app.token_without("alice", Scope::ManageKeys).await;
    let t_no_members = app.token_without("alice", Scope::ManageMembers).await;
    let t_bob_only = app.token("alice", &all, &["bob"], None).await;
    let t_prefix = app.token("alice", &all, &["alice-*"], None).await;
    let t_alice_only = app.token("alice", &all, &["alice"], None).await;
    let t_yank_only = app.token("alice", &[Scope::Yank], &["*"], None).await;
    let t_root_plain = app.token("root-admin", &all, &["*"], None).await;
    // Expired and revoked tokens.
    let alice_id = app.store().user_by_name("alice").await.unwrap().unwrap().id;
    let expired = generate_token(TOKEN_PREFIX).expose().to_string();
    app.store()
        .create_token(
            &Actor::operator(),
            alice_id,
            "old",
            &hash_token(&expired),
            "publish-new,publish-update,yank",
            "*",
            Some(now_ms() - 1000),
        )
        .await
        .unwrap();
    let revoked = generate_token(TOKEN_PREFIX).expose().to_string();
    let row = app
        .store()
        .create_token(
            &Actor::operator(),
            alice_id,
            "gone",
            &hash_token(&revoked),
            "publish-new,publish-update,yank",
            "*",
            None,
        )
        .await
        .unwrap();
    app.store()
        .revoke_token(&Actor::operator(), None, row.id)
        .await
        .unwrap();
    let bob_token_id = app
        .store()
        .list_tokens(app.store().user_by_name("bob").await.unwrap().unwrap().id)
        .await
        .unwrap()[0]
        .id;
    // A disabled user.
    let eve = app.new_user("eve", false).await;
    hub_core::admin::set_member(app.store(), "alice", "eve", "owner")
        .await
        .unwrap();
    app.store()
        .update_user(&Actor::operator(), "eve", None, None, Some(true))
        .await
        .unwrap();
    // A second alice key, revoked.
    let old_key = SecretKey::from_seed(&[55; 32]);
    let ns = app.store().namespace("alice").await.unwrap().unwrap();
    app.store()
        .add_key(
            &Actor::operator(),
            &ns,
            &old_key.key_id().to_string(),
            &old_key.public_key().to_string(),
            alice_id,
        )
        .await
        .unwrap();
    app.store()
        .revoke_key(&Actor::operator(), &ns, &old_key.key_id().to_string(), None)
        .await
        .unwrap();

    use Action::*;
    let cases: Vec<(&str, Action, Option<&str>, u16, &str)> = vec![
        ("no token", PublishNew("a1"), None, 401, "unauthenticated"),
        (
            "garbage token",
            PublishNew("a1"),
            Some("ofc_nope"),
            401,
            "invalid_token",
        ),
        (
            "expired token",
            PublishNew("a1"),
            Some(&expired),
            401,
            "token_expired",
        ),
        (
            "revoked token",
            PublishNew("a1"),
            Some(&revoked),
            401,
            "token_revoked",
        ),
        (
            "disabled user",
            PublishUpdate,
            Some(&eve.token),
            401,
            "user_disabled",
        ),
        (
            "no publish-new scope",
            PublishNew("a1"),
            Some(&t_no_new),
            403,
            "forbidden_scope",
        ),
        (
            "no publish-update scope",
            PublishUpdate,
            Some(&t_no_update),
            403,
            "forbidden_scope",
        ),
        (
            "token for another namespace",
            PublishNew("a1"),
            Some(&t_bob_only),
            403,
            "forbidden_namespace",
        ),
        (
            "token prefix does not match",
            PublishUpdate,
            Some(&t_prefix),
            403,
            "forbidden_namespace",
        ),
        (
            "non-member publishes new",
            PublishNew("a1"),
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "non-member publishes update",
            PublishUpdate,
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "publisher role cannot create agents",
            PublishNew("a1"),
            Some(&carol.token),
            403,
            "forbidden_role",
        ),
        (
            "key of another namespace",
            PublishSignedBy(bob.key.clone()),
            Some(&alice.token),
            403,
            "untrusted_key",
        ),
        (
            "revoked key",
            PublishSignedBy(old_key.clone()),
            Some(&alice.token),
            403,
            "key_revoked",
        ),
        (
            "unknown key",
            PublishSignedBy(SecretKey::from_seed(&[3; 32])),
            Some(&alice.token),
            403,
            "untrusted_key",
        ),
        (
            "yank by non-owner non-member",
            Yank,
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "yank by publisher role",
            Yank,
            Some(&carol.token),
            403,
            "forbidden_role",
        ),
        (
            "yank without yank scope",
            Yank,
            Some(&t_no_yank),
            403,
            "forbidden_scope",
        ),
        (
            "yank with wrong namespace pattern",
            Yank,
            Some(&t_prefix),
            403,
            "forbidden_namespace",
        ),
        (
            "deprecate by non-member",
            Deprecate,
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "add key by maintainer",
            AddKey,
            Some(&dave.token),
            403,
            "forbidden_role",
        ),
        (
            "add key by non-member",
            AddKey,
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "add key without manage-keys",
            AddKey,
            Some(&t_no_keys),
            403,
            "forbidden_scope",
        ),
        (
            "revoke key by publisher role",
            RevokeKey,
            Some(&carol.token),
            403,
            "forbidden_role",
        ),
        (
            "revoke key by non-member",
            RevokeKey,
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "make self owner by non-member",
            SetMember("bob"),
            Some(&bob.token),
            403,
            "not_member",
        ),
        (
            "make self owner by maintainer",
            SetMember("dave"),
            Some(&dave.token),
            403,
            "forbidden_role",
        ),
        (
            "set member without manage-members",
            SetMember("bob"),
            Some(&t_no_members),
            403,
            "forbidden_scope",
        ),
        (
            "delete agent by owner",
            DeleteAgent,
            Some(&alice.token),
            403,
            "admin_only",
        ),
        (
            "delete version by owner",
            DeleteVersion,
            Some(&alice.token),
            403,
            "admin_only",
        ),
        (
            "delete by admin without admin scope",
            DeleteAgent,
            Some(&t_root_plain),
            403,
            "admin_only",
        ),
        (
            "audit by non-admin",
            Audit,
            Some(&alice.token),
            403,
            "admin_only",
        ),
        (
            "mint admin token as non-admin",
            CreateToken(vec!["admin"], vec!["*"]),
            Some(&alice.token),
            403,
            "forbidden_scope",
        ),
        (
            "mint wider scope",
            CreateToken(vec!["publish-new"], vec!["*"]),
            Some(&t_yank_only),
            403,
            "forbidden_scope",
        ),
        (
            "mint wider namespace",
            CreateToken(vec!["yank"], vec!["*"]),
            Some(&t_alice_only),
            403,
            "forbidden_namespace",
        ),
        (
            "mint wider prefix",
            CreateToken(vec!["yank"], vec!["alice*"]),
            Some(&t_prefix),
            403,
            "forbidden_namespace",
        ),
        (
            "revoke someone else's token",
            RevokeToken(bob_token_id),
            Some(&alice.token),
            404,
            "token_not_found",
        ),
        (
            "create namespace outside token patterns",
            CreateNamespace("zed"),
            Some(&t_alice_only),
            403,
            "forbidden_namespace",
        ),
        (
            "create reserved namespace",
            CreateNamespace("admin"),
            Some(&alice.token),
            400,
            "invalid_name",
        ),
        (
            "create taken namespace, other case",
            CreateNamespace("BOB"),
            Some(&alice.token),
            409,
            "namespace_exists",
        ),
        // Allowed cases: the matrix also proves the rules are not simply "refuse everything".
        (
            "maintainer publishes new",
            PublishNew("by-dave"),
            Some(&dave.token),
            201,
            "",
        ),
        (
            "publisher role publishes update",
            PublishUpdate,
            Some(&carol.token),
            201,
            "",
        ),
        ("maintainer yanks", Yank, Some(&dave.token), 204, ""),
        (
            "narrower token minted",
            CreateToken(vec!["yank"], vec!["alice"]),
            Some(&t_alice_only),
            201,
            "",
        ),
        ("me with a plain token", Me, Some(&bob.token), 200, ""),
        (
            "admin deletes with admin scope",
            DeleteAgent,
            Some(&root.token),
            204,
            "",
        ),
    ];
    assert!(cases.len() >= 30);
    let m = Matrix {
        app,
        version: std::sync::atomic::AtomicU32::new(1),
    };
    let mut failures = Vec::new();
    for (what, action, token, status, code) in &cases {
        let (s, c) = m.run(action, *token).await;
        if (s, c.as_str()) != (*status, *code) {
            failures.push(format!("{what}: expected {status} {code:?}, got {s} {c:?}"));
        }
    }
    ofc_test_kit::assert_no_failures(&failures, cases.len());
    // Nobody who was refused changed membership.
    let members = m.app.store().members(ns.id).await.unwrap();
    let owners: Vec<&str> = members
        .iter()
        .filter(|x| x.role == "owner")
        .map(|x| x.user.as_str())
        .collect();
    assert_eq!(owners, vec!["alice", "eve"]);
    m.app.stop().await;
}
