//! Passwords: Argon2id PHC strings.

use rand::RngCore;

/// Hashes a password (Argon2id, PHC string).
pub fn hash_password(password: &str) -> Result<String, String> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// The hash of a random password nobody knows, checked when a log-in names no account so
/// that it takes as long as one that does.
pub fn dummy_password_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut secret = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut secret);
        hash_password(&hex::encode(secret)).expect("hashing a random password")
    })
}

/// Checks a password against a PHC string.
pub fn verify_password(password: &str, phc: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(phc).is_ok_and(|h| {
        argon2::Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::{hash_password, verify_password};

    #[test]
    fn passwords() {
        let h = hash_password("hunter2").unwrap();
        assert!(verify_password("hunter2", &h));
        assert!(!verify_password("hunter3", &h));
        assert!(!verify_password("x", "not a phc"));
    }
}
