//! A real OIDC issuer for trusted-publishing tests: an HTTP server on 127.0.0.1 (an ephemeral
//! port) serving `/.well-known/openid-configuration` and its JWKS, with keys of its own made
//! at start — an RSA 2048 key (`rsa-1`, RS256) and a P-256 key (`ec-1`, ES256) — and a way to
//! mint ID tokens as a CI's identity provider does, or as an attacker would (`alg: none`, HS256
//! keyed with the public key, unknown `kid`, any claims).
//!
//! ```text
//! let issuer = OidcIssuer::start().await;
//! let token = issuer.token(Sign::Rs256, issuer.claims("ofc", "repo:acme/x:ref:refs/heads/main"));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::Pkcs1v15Sign;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// How a token is signed.
#[derive(Debug, Clone)]
pub enum Sign {
    /// RS256 with the issuer's RSA key (`kid` `rsa-1`).
    Rs256,
    /// ES256 with the issuer's P-256 key (`kid` `ec-1`).
    Es256,
    /// RS256 with the RSA key, but the header names this `kid`.
    Rs256Kid(String),
    /// `alg: none`, no signature.
    None,
    /// HS256 keyed with the issuer's RSA public key as published (its JWK's JSON): the
    /// key-confusion forgery.
    Hs256WithPublicKey,
}

struct Shared {
    issuer: String,
    jwks: Value,
    fetches: AtomicUsize,
}

/// The issuer, serving until dropped.
pub struct OidcIssuer {
    /// Its URL, `http://127.0.0.1:PORT` (the `iss` of its tokens).
    pub url: String,
    rsa: RsaPrivateKey,
    ec: EcdsaKeyPair,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for OidcIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcIssuer")
            .field("url", &self.url)
            .finish()
    }
}

impl Drop for OidcIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

/// Seconds since the epoch.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

async fn discovery(State(s): State<Arc<Shared>>) -> Json<Value> {
    s.fetches.fetch_add(1, Ordering::SeqCst);
    Json(json!({
        "issuer": s.issuer,
        "jwks_uri": format!("{}/.well-known/jwks", s.issuer),
        "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
    }))
}

async fn serve_jwks(State(s): State<Arc<Shared>>) -> Json<Value> {
    Json(s.jwks.clone())
}

impl OidcIssuer {
    /// Makes its keys and starts serving on 127.0.0.1.
    pub async fn start() -> Self {
        let rsa = tokio::task::spawn_blocking(|| {
            RsaPrivateKey::new(&mut rand_core::OsRng, 2048).expect("an RSA key")
        })
        .await
        .expect("RSA key generation");
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("a P-256 key");
        let ec = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("the P-256 key");
        let pt = ec.public_key().as_ref().to_vec();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the issuer");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let jwks = json!({"keys": [
            {"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256",
             "n": b64(&rsa.n().to_bytes_be()), "e": b64(&rsa.e().to_bytes_be())},
            {"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256",
             "x": b64(&pt[1..33]), "y": b64(&pt[33..65])},
        ]});
        let shared = Arc::new(Shared {
            issuer: url.clone(),
            jwks,
            fetches: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/.well-known/jwks", get(serve_jwks))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        OidcIssuer {
            url,
            rsa,
            ec,
            shared,
            task,
        }
    }

    /// How often its discovery document was fetched.
    pub fn discovery_fetches(&self) -> usize {
        self.shared.fetches.load(Ordering::SeqCst)
    }

    /// Its JWKS, as served.
    pub fn jwks(&self) -> &Value {
        &self.shared.jwks
    }

    /// A CI's claims: this issuer, `aud`, `sub`, issued now, valid 5 minutes, a fresh `jti`.
    pub fn claims(&self, aud: &str, sub: &str) -> Value {
        let now = now_secs();
        json!({
            "iss": self.url, "aud": aud, "sub": sub,
            "iat": now, "nbf": now, "exp": now + 300,
            "jti": uuid::Uuid::new_v4().to_string(),
            "repository": "acme/coder", "ref": "refs/heads/main",
        })
    }

    /// A token of `claims`, signed as `how`.
    pub fn token(&self, how: Sign, claims: Value) -> String {
        let (alg, kid) = match &how {
            Sign::Rs256 => ("RS256", "rsa-1".to_string()),
            Sign::Es256 => ("ES256", "ec-1".to_string()),
            Sign::Rs256Kid(k) => ("RS256", k.clone()),
            Sign::None => ("none", "rsa-1".to_string()),
            Sign::Hs256WithPublicKey => ("HS256", "rsa-1".to_string()),
        };
        let header = json!({"alg": alg, "typ": "JWT", "kid": kid});
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = match how {
            Sign::Rs256 | Sign::Rs256Kid(_) => {
                // PKCS#1 v1.5: the DigestInfo of SHA-256, then the hash.
                let mut t = vec![
                    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
                    0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
                ];
                t.extend_from_slice(&Sha256::digest(input.as_bytes()));
                self.rsa
                    .sign(Pkcs1v15Sign::new_unprefixed(), &t)
                    .expect("RS256 signature")
            }
            Sign::Es256 => self
                .ec
                .sign(&SystemRandom::new(), input.as_bytes())
                .expect("ES256 signature")
                .as_ref()
                .to_vec(),
            Sign::None => Vec::new(),
            Sign::Hs256WithPublicKey => {
                let public = self.shared.jwks["keys"][0].to_string();
                let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, public.as_bytes());
                ring::hmac::sign(&key, input.as_bytes()).as_ref().to_vec()
            }
        };
        format!("{input}.{}", b64(&sig))
    }
}
