//! OIDC ID tokens as JSON Web Tokens (RFC 7519, compact JWS of RFC 7515): parsing, and the
//! signature checked with the issuer's JSON Web Key (RFC 7517) through `ring`.
//!
//! Only asymmetric algorithms are taken: `RS256`, `RS384`, `RS512` (RSA PKCS#1 v1.5, keys of
//! 2048 to 8192 bits) and `ES256`, `ES384`. `none` is refused (an unsigned token proves
//! nothing), and so is every `HS*`: a shared-secret MAC cannot prove which issuer made a
//! token, and a verifier that accepted one would take the issuer's *public* key as the secret
//! (the classic key-confusion forgery). The key must be of the algorithm's type (`RSA` for
//! `RS*`, `EC` on the right curve for `ES*`) and, when the key names an `alg` or a `use`, they
//! must be that algorithm and `sig`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;

use super::refusal::Refusal;

/// Longest ID token taken (GitHub's are about 1.2 KB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The JOSE header fields looked at.
#[derive(Debug, Deserialize)]
pub struct Header {
    /// Signature algorithm.
    pub alg: String,
    /// Key id.
    #[serde(default)]
    pub kid: Option<String>,
    /// Extensions the verifier must understand: none are, so any is refused.
    #[serde(default)]
    pub crit: Option<Value>,
}

/// A NumericDate (seconds since the epoch; fractions allowed by RFC 7519, truncated here).
fn numeric_date<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    Ok(v.filter(|x| x.is_finite()).map(|x| x as i64))
}

/// `aud`: one string or an array of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Audience {
    /// Whether `aud` names `want`.
    pub fn contains(&self, want: &str) -> bool {
        match self {
            Audience::One(a) => a == want,
            Audience::Many(v) => v.iter().any(|a| a == want),
        }
    }
    /// For messages.
    pub fn describe(&self) -> String {
        match self {
            Audience::One(a) => format!("`{a}`"),
            Audience::Many(v) => v
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The registered claims looked at.
#[derive(Debug, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: Option<String>,
    /// Subject.
    pub sub: Option<String>,
    /// Audience.
    pub aud: Option<Audience>,
    /// Expiry.
    #[serde(default, deserialize_with = "numeric_date")]
    pub exp: Option<i64>,
    /// Not before.
    #[serde(default, deserialize_with = "numeric_date")]
    pub nbf: Option<i64>,
    /// Issued at.
    #[serde(default, deserialize_with = "numeric_date")]
    pub iat: Option<i64>,
    /// Token id.
    #[serde(default)]
    pub jti: Option<String>,
}

/// A token split and decoded, its signature not yet checked.
#[derive(Debug)]
pub struct Unverified {
    /// Header.
    pub header: Header,
    /// Claims.
    pub claims: Claims,
    /// `base64url(header).base64url(payload)`: what was signed.
    signing_input: Vec<u8>,
    /// The signature bytes.
    signature: Vec<u8>,
}

fn malformed(why: impl Into<String>) -> Refusal {
    Refusal::Malformed(why.into())
}

/// Splits and decodes a compact JWS.
pub fn parse(token: &str) -> Result<Unverified, Refusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(malformed(format!(
            "the ID token is {} bytes, more than {MAX_TOKEN_BYTES}",
            token.len()
        )));
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [h, p, s] = parts[..] else {
        return Err(malformed(
            "the ID token is not a JWT (three base64url parts separated by dots)",
        ));
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| malformed(format!("the ID token's {what} is not base64url")))
    };
    let header: Header = serde_json::from_slice(&decode(h, "header")?)
        .map_err(|e| malformed(format!("the ID token's header: {e}")))?;
    let claims: Claims = serde_json::from_slice(&decode(p, "payload")?)
        .map_err(|e| malformed(format!("the ID token's claims: {e}")))?;
    let signature = decode(s, "signature")?;
    Ok(Unverified {
        header,
        claims,
        signing_input: format!("{h}.{p}").into_bytes(),
        signature,
    })
}

/// The algorithms taken, and why any other is refused.
pub fn check_alg(alg: &str) -> Result<(), Refusal> {
    match alg {
        "RS256" | "RS384" | "RS512" | "ES256" | "ES384" => Ok(()),
        a if a.eq_ignore_ascii_case("none") => Err(Refusal::Alg(format!(
            "alg `{a}` is refused: an ID token must be signed by its issuer \
             (RS256, RS384, RS512, ES256, ES384)"
        ))),
        a if a.starts_with("HS") => Err(Refusal::Alg(format!(
            "alg `{a}` is refused: a shared-secret MAC cannot prove the issuer made the token \
             (only RS256, RS384, RS512, ES256, ES384 are taken)"
        ))),
        a => Err(Refusal::Alg(format!(
            "alg `{a}` is not taken (only RS256, RS384, RS512, ES256, ES384)"
        ))),
    }
}

/// A JSON Web Key of an issuer's JWKS (the fields looked at).
#[derive(Debug, Clone, Deserialize)]
pub struct Jwk {
    /// `RSA` or `EC`.
    pub kty: String,
    /// Key id.
    #[serde(default)]
    pub kid: Option<String>,
    /// The one algorithm the key is for, when it says.
    #[serde(default)]
    pub alg: Option<String>,
    /// `sig` or `enc`, when it says.
    #[serde(default, rename = "use")]
    pub use_: Option<String>,
    /// RSA modulus.
    #[serde(default)]
    pub n: Option<String>,
    /// RSA exponent.
    #[serde(default)]
    pub e: Option<String>,
    /// EC curve.
    #[serde(default)]
    pub crv: Option<String>,
    /// EC x.
    #[serde(default)]
    pub x: Option<String>,
    /// EC y.
    #[serde(default)]
    pub y: Option<String>,
}

/// Checks the token's signature with `key` (see the module documentation for the rules).
pub fn verify(token: &Unverified, key: &Jwk) -> Result<(), Refusal> {
    let alg = token.header.alg.as_str();
    check_alg(alg)?;
    let kid = key.kid.as_deref().unwrap_or("-");
    if key.alg.as_deref().is_some_and(|a| a != alg) {
        return Err(Refusal::Key(format!(
            "the token says alg `{alg}` but the issuer's key `{kid}` is for `{}`",
            key.alg.as_deref().unwrap_or_default()
        )));
    }
    if key.use_.as_deref().is_some_and(|u| u != "sig") {
        return Err(Refusal::Key(format!(
            "the issuer's key `{kid}` is not a signing key (use `{}`)",
            key.use_.as_deref().unwrap_or_default()
        )));
    }
    let field = |v: &Option<String>, name: &str| -> Result<Vec<u8>, Refusal> {
        let v = v
            .as_deref()
            .ok_or_else(|| Refusal::Key(format!("the issuer's key `{kid}` has no `{name}`")))?;
        URL_SAFE_NO_PAD.decode(v).map_err(|_| {
            Refusal::Key(format!(
                "the issuer's key `{kid}`: `{name}` is not base64url"
            ))
        })
    };
    let ok = if alg.starts_with("RS") {
        if key.kty != "RSA" {
            return Err(Refusal::Key(format!(
                "alg `{alg}` needs an RSA key; the issuer's key `{kid}` is `{}`",
                key.kty
            )));
        }
        let params: &signature::RsaParameters = match alg {
            "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
            "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
            _ => &signature::RSA_PKCS1_2048_8192_SHA512,
        };
        let (n, e) = (field(&key.n, "n")?, field(&key.e, "e")?);
        RsaPublicKeyComponents { n: &n, e: &e }
            .verify(params, &token.signing_input, &token.signature)
            .is_ok()
    } else {
        let (curve, len, params): (&str, usize, &'static signature::EcdsaVerificationAlgorithm) =
            match alg {
                "ES256" => ("P-256", 32, &signature::ECDSA_P256_SHA256_FIXED),
                _ => ("P-384", 48, &signature::ECDSA_P384_SHA384_FIXED),
            };
        if key.kty != "EC" || key.crv.as_deref() != Some(curve) {
            return Err(Refusal::Key(format!(
                "alg `{alg}` needs an EC key on {curve}; the issuer's key `{kid}` is `{}` {}",
                key.kty,
                key.crv.as_deref().unwrap_or("")
            )));
        }
        let (x, y) = (field(&key.x, "x")?, field(&key.y, "y")?);
        if x.len() != len || y.len() != len {
            return Err(Refusal::Key(format!(
                "the issuer's key `{kid}` has coordinates of the wrong length for {curve}"
            )));
        }
        let mut point = Vec::with_capacity(1 + 2 * len);
        point.push(4);
        point.extend_from_slice(&x);
        point.extend_from_slice(&y);
        UnparsedPublicKey::new(params, &point)
            .verify(&token.signing_input, &token.signature)
            .is_ok()
    };
    if ok {
        Ok(())
    } else {
        Err(Refusal::Signature(format!(
            "the ID token's {alg} signature does not verify with the issuer's key `{kid}`"
        )))
    }
}
