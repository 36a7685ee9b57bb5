//! The rules without a hub: subject patterns, URLs, algorithms and signatures (the exchange
//! itself is tested against a real issuer in hub-server's `trusted` tests).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};

use super::jwt::{self, Jwk};
use super::{
    BoxFuture, FetchError, Jwks, OidcFetch, Refusal, UrlRules, check_subject_pattern, check_url,
    subject_matches,
};

#[test]
fn subject_patterns_are_anchored_globs_with_star_only() {
    let cases = [
        (
            "repo:acme/x:ref:refs/heads/main",
            "repo:acme/x:ref:refs/heads/main",
            true,
        ),
        (
            "repo:acme/x:ref:refs/heads/main",
            "repo:acme/x:ref:refs/heads/main2",
            false,
        ),
        (
            "repo:acme/x:ref:refs/heads/main",
            "xrepo:acme/x:ref:refs/heads/main",
            false,
        ),
        ("repo:acme/x:*", "repo:acme/x:ref:refs/tags/v1", true),
        ("repo:acme/x:*", "repo:acme/xy:ref:refs/tags/v1", false),
        (
            "repo:acme/*:ref:refs/heads/main",
            "repo:acme/a/b:ref:refs/heads/main",
            true,
        ),
        (
            "repo:acme/*:ref:refs/heads/main",
            "repo:acme/a:ref:refs/heads/dev",
            false,
        ),
        ("repo:a*b*c", "repo:abc", true),
        ("repo:a*b*c", "repo:aXbYbZc", true),
        ("repo:a*b*c", "repo:aXbYcZ", false),
        ("repo:?", "repo:x", false),
        ("repo:[ab]", "repo:a", false),
        ("repo:[ab]", "repo:[ab]", true),
    ];
    for (p, s, want) in cases {
        assert_eq!(subject_matches(p, s), want, "{p} ~ {s}");
    }
    assert!(check_subject_pattern("repo:acme/x:*").is_ok());
    assert!(check_subject_pattern("*").is_err());
    assert!(check_subject_pattern("*:ref:refs/heads/main").is_err());
    assert!(check_subject_pattern("").is_err());
    assert!(check_subject_pattern("repo:a\nb").is_err());
}

#[test]
fn issuers_are_https_and_loopback_http_only_when_allowed() {
    let strict = UrlRules::default();
    let lax = UrlRules {
        allow_http_loopback: true,
        allow_private: true,
    };
    assert!(check_url("https://token.actions.githubusercontent.com", strict).is_ok());
    assert!(check_url("http://127.0.0.1:4000", lax).is_ok());
    let e = check_url("http://127.0.0.1:4000", strict).unwrap_err();
    assert!(e.contains("oidc_allow_http_loopback"), "{e}");
    assert!(check_url("http://example.com", lax).is_err());
    assert!(check_url("http://localhost:1", lax).is_err());
    assert!(check_url("https://x.example/?a=1", strict).is_err());
    assert!(check_url("https://u@x.example", strict).is_err());
    assert!(check_url("ftp://x.example", strict).is_err());
    assert!(check_url("https://x.example/a b", strict).is_err());
}

#[test]
fn issuers_naming_an_address_answer_to_the_outbound_address_policy() {
    let strict = UrlRules::default();
    for s in [
        "https://127.0.0.1:8443",
        "https://10.0.0.7",
        "https://169.254.169.254/latest",
        "https://[::1]:8443",
        "https://[::ffff:192.168.0.1]",
        "https://[fd00::5]",
    ] {
        let e = check_url(s, strict).unwrap_err();
        assert!(
            e.contains(&format!("`{s}`"))
                && e.contains("outbound address policy")
                && e.contains("outbound_allow_private"),
            "{s}: {e}"
        );
    }
    let private = UrlRules {
        allow_http_loopback: false,
        allow_private: true,
    };
    assert!(check_url("https://127.0.0.1:8443", private).is_ok());
    assert!(check_url("https://8.8.8.8", strict).is_ok());
    // Names pass here: their addresses are the fetcher's to check, at each connection.
    assert!(check_url("https://localhost:8443", strict).is_ok());
}

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

fn es256() -> (EcdsaKeyPair, Jwk) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let kp =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let pt = kp.public_key().as_ref();
    let jwk = Jwk {
        kty: "EC".into(),
        kid: Some("k1".into()),
        alg: None,
        use_: Some("sig".into()),
        n: None,
        e: None,
        crv: Some("P-256".into()),
        x: Some(b64(&pt[1..33])),
        y: Some(b64(&pt[33..65])),
    };
    (kp, jwk)
}

fn token(alg: &str, kp: &EcdsaKeyPair) -> String {
    let h = b64(format!(r#"{{"alg":"{alg}","kid":"k1"}}"#).as_bytes());
    let p = b64(br#"{"iss":"https://i.example","sub":"s","aud":"ofc","exp":2,"iat":1}"#);
    let input = format!("{h}.{p}");
    let sig = kp.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
    format!("{input}.{}", b64(sig.as_ref()))
}

#[test]
fn signatures_verify_only_with_the_right_key_and_algorithm() {
    let (kp, jwk) = es256();
    let t = jwt::parse(&token("ES256", &kp)).unwrap();
    jwt::verify(&t, &jwk).unwrap();
    // Another key of the same type: the signature fails.
    let (_, other) = es256();
    assert!(matches!(
        jwt::verify(&t, &other),
        Err(Refusal::Signature(_))
    ));
    // A key bound to another algorithm, or of another type.
    let mut bound = jwk.clone();
    bound.alg = Some("ES384".into());
    assert!(matches!(jwt::verify(&t, &bound), Err(Refusal::Key(_))));
    let t = jwt::parse(&token("RS256", &kp)).unwrap();
    assert!(matches!(jwt::verify(&t, &jwk), Err(Refusal::Key(_))));
    for alg in ["none", "HS256", "HS512", "PS256", "EdDSA"] {
        let t = jwt::parse(&token(alg, &kp)).unwrap();
        let r = jwt::verify(&t, &jwk).unwrap_err();
        assert!(matches!(r, Refusal::Alg(_)), "{alg}: {r:?}");
    }
    assert!(matches!(jwt::parse("a.b"), Err(Refusal::Malformed(_))));
    assert!(matches!(jwt::parse("a.b.c.d"), Err(Refusal::Malformed(_))));
}

/// Serves one discovery document naming `jwks_uri`, and records the URLs asked for (the HTTP
/// client and its resolver are hub-server's, tested there against real servers; this is the
/// key cache's own check of a `jwks_uri` naming an address).
#[derive(Debug, Default)]
struct Documents {
    jwks_uri: String,
    asked: std::sync::Mutex<Vec<String>>,
}

impl OidcFetch for Documents {
    fn get<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            self.asked.lock().unwrap().push(url.to_string());
            if url.ends_with("/.well-known/openid-configuration") {
                let d = serde_json::json!({"issuer": ISSUER, "jwks_uri": self.jwks_uri});
                Ok(d.to_string().into_bytes())
            } else {
                Ok(br#"{"keys": []}"#.to_vec())
            }
        })
    }
}

const ISSUER: &str = "https://ci.example";

#[tokio::test]
async fn a_jwks_uri_naming_a_private_address_is_refused_without_fetching_it() {
    for (jwks_uri, says) in [
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::ffff:10.0.0.1]/keys", "private"),
        ("https://127.0.0.1:8443/keys", "loopback"),
    ] {
        let docs = std::sync::Arc::new(Documents {
            jwks_uri: jwks_uri.into(),
            ..Documents::default()
        });
        let jwks = Jwks::new(docs.clone(), UrlRules::default());
        let e = jwks.key(ISSUER, "k1").await.unwrap_err();
        assert_eq!(e.check(), "issuer_address", "{e:?}");
        assert!(
            e.message().contains("the issuer's jwks_uri")
                && e.message().contains(says)
                && e.message().contains("outbound address policy"),
            "{e:?}"
        );
        let asked = docs.asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            [format!("{ISSUER}/.well-known/openid-configuration")]
        );
        // Allowed, the keys are fetched (and the kid is not among them).
        let docs = std::sync::Arc::new(Documents {
            jwks_uri: jwks_uri.into(),
            ..Documents::default()
        });
        let lax = UrlRules {
            allow_http_loopback: false,
            allow_private: true,
        };
        let e = Jwks::new(docs.clone(), lax)
            .key(ISSUER, "k1")
            .await
            .unwrap_err();
        assert_eq!(e.check(), "kid", "{e:?}");
        assert_eq!(docs.asked.lock().unwrap().len(), 2);
    }
}
