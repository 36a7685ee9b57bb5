//! Settings: defaults < file (`--config FILE`, else `DATA/hub.toml` when present) < environment
//! (`OFC_HUB__<KEY>`, e.g. `OFC_HUB__LISTEN=127.0.0.1:8080`) < command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Environment variables with this prefix set settings (`OFC_HUB__MAX_BUNDLE_BYTES=…`).
pub const ENV_PREFIX: &str = "OFC_HUB__";

/// Hub settings.
#[derive(Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the SQLite file and the blobs live.
    pub data_dir: PathBuf,
    /// `postgres://…` to use PostgreSQL instead of `DATA/hub.sqlite3`.
    pub database_url: Option<String>,
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Largest bundle accepted, in bytes (however it is sent).
    pub max_bundle_bytes: u64,
    /// Largest bundle the JSON publish takes inline (base64 in its `bundle` field), in bytes;
    /// it also bounds that request's body. A bigger bundle is uploaded as a blob to
    /// `/v2/{publisher}/{agent}/blobs/uploads/` first (as `ofc publish` does), then published
    /// without `bundle`.
    pub max_inline_bundle_bytes: u64,
    /// Failed authentications allowed per client address (and per user name on login) in a
    /// window before requests get 429.
    pub auth_failure_limit: u32,
    /// The window of `auth_failure_limit`, in seconds.
    pub auth_failure_window_secs: u64,
    /// PostgreSQL pool size.
    pub db_max_connections: u32,
    /// The host name the registry API reports (`registry` in responses).
    pub registry_host: String,
    /// Keep artifacts in an existing OCI registry (the data dir then caches blobs):
    /// `http[s]://HOST[:PORT]/PREFIX`, e.g. `https://ghcr.io/acme/ofc`. Blobs go to
    /// `PREFIX/blobs`, manifests are mirrored to `PREFIX/<repository>`.
    pub upstream_registry: Option<String>,
    /// User name for `upstream_registry` (anonymous when unset).
    pub upstream_username: Option<String>,
    /// Password or token for `upstream_registry` (held as a secret: zeroed on drop, never in
    /// `Debug`, serialized as `<redacted>`).
    #[serde(serialize_with = "redacted")]
    pub upstream_password: Option<secrecy::SecretString>,
    /// Where blobs live, instead of the data dir: a directory several replicas share (an
    /// NFS-style mount) when they keep blobs on a filesystem. With `upstream_registry`, where
    /// the blob cache lives. Chunked `/v2/` uploads are staged here too, so any replica
    /// continues one.
    pub blob_dir: Option<PathBuf>,
    /// Largest blob a `/v2/` upload may store, in bytes (an upload past it is refused with
    /// `SIZE_INVALID` and its bytes dropped).
    pub max_blob_bytes: u64,
    /// Most open client connections; past it, new ones get an immediate 503 and are closed.
    /// 0: the process's open-file limit minus a reserve for the database, blobs and index.
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's headers — also how long an idle
    /// keep-alive connection stays open.
    pub header_timeout_secs: u64,
    /// Seconds a request body may go without sending anything.
    pub body_timeout_secs: u64,
    /// Seconds an answer may go without the client taking any of it (a download that stalls
    /// this long is cut, and its connection closed).
    pub write_timeout_secs: u64,
    /// Seconds a JSON API request (`/api/v1`, `/registry`, health, metrics) may take to be
    /// answered before it gets 503 `request_timeout`; 0: no limit. Bundle downloads and `/v2/`
    /// are not bounded by it (they stream; `body_timeout_secs` bounds their bodies).
    pub request_timeout_secs: u64,
    /// Seconds an upload session may stay idle before it is dead (its staged bytes are dropped
    /// at its owner's next upload and by `ofc-hub gc`).
    pub upload_ttl_secs: u64,
    /// Most live upload sessions one user may have open at once (`TOOMANYREQUESTS` past it).
    pub max_uploads_per_user: u64,
    /// Most bytes one user's live uploads may have staged together (`DENIED` past it).
    pub max_upload_bytes_per_user: u64,
    /// Most bytes of blobs the repositories of one namespace may hold, uploads in progress
    /// included (`DENIED` past it).
    pub max_namespace_bytes: u64,
    /// Most manifests the repositories of one namespace may hold (`DENIED` past it).
    pub max_manifests_per_namespace: u64,
    /// Most namespaces one user may create (`quota_exceeded` past it; administrators and
    /// `ofc-hub admin create-namespace` are not limited). The per-namespace quotas would
    /// otherwise be one new namespace away.
    pub max_namespaces_per_user: u64,
    /// Manifest bytes the `/v2/` answers being written may hold at once (a manifest, a page
    /// of referrers); past it an answer waits up to 5 s, then gets 503 with `Retry-After`.
    pub manifest_memory_bytes: u64,
    /// Milliseconds between the search follower's looks at the outbox when no write of this
    /// hub woke it (every publish, yank, … and `/v2/` push wakes it at once; the poll catches
    /// writes by other replicas sharing the database).
    pub search_poll_ms: u64,
    /// A synonym file for search (Solr format: `a, b, c` and `a => b`, see
    /// `hub-search/synonyms/default.txt`) replacing the default set; re-read when it changes,
    /// no reindexing. None: the default set.
    pub search_synonyms_file: Option<PathBuf>,
    /// When every word of a query together finds fewer agents than this, agents with only
    /// some of the words follow, ranked below every full match (0: never).
    pub search_fewer_words_below: usize,
    /// The directory of the sentence-embedding model (all-MiniLM-L6-v2: `model.safetensors`,
    /// `tokenizer.json`, `config.json`; `scripts/peers/search-model` installs it). Set, the hub
    /// loads it at start (refusing to start, naming the file, when one is missing or unusable)
    /// and embeds every agent beside the keyword index; unset, search is keyword only.
    pub search_model_dir: Option<PathBuf>,
    /// The transparency log's origin (checkpoint first line, name of the log key), used when
    /// the hub creates its log key (`DATA/log-key`); default `<registry_host>/log`. Once the
    /// key exists its name is the origin, and a different setting stops the hub at start.
    pub log_origin: Option<String>,
    /// The transparency log's secret key file instead of `DATA/log-key` (created there when
    /// missing and the database names no key yet). Replicas sharing one database must sign
    /// with one key: give each the same file (a mounted secret); a replica whose key is not
    /// the one recorded in the database refuses to start.
    pub log_key_file: Option<PathBuf>,
    /// Witnesses asked to cosign each new checkpoint of the log (C2SP tlog-witness), e.g.
    /// `[[log_witnesses]]` `url = "https://witness.example/w1"`
    /// `key = "witness.example/w1+1b2c3d4e+BA…"` (as `ofc-hub witness key` prints it). The
    /// checkpoints the hub serves then carry their cosignatures, which clients can require
    /// (`ofc trust witness`).
    pub log_witnesses: Vec<LogWitness>,
    /// Seconds after which an unchanged head is submitted to the witnesses again, so their
    /// cosignatures stay recent for clients that require fresh ones (`ofc trust witness
    /// require N --max-age SECS`, which should be well above this).
    pub log_witness_refresh_secs: u64,
    /// The load balancers or proxies in front of the hub: IP addresses or networks, e.g.
    /// `["10.0.0.0/8"]` (environment: `OFC_HUB__TRUSTED_PROXIES=10.0.0.0/8,127.0.0.1`). A
    /// request from one of them comes from the client its `X-Forwarded-For` names (the rightmost
    /// address that is not itself a trusted proxy), so the failure limiter and download counts
    /// see clients, not the balancer. Empty: `X-Forwarded-For` is ignored.
    pub trusted_proxies: Vec<crate::proxies::ProxyNet>,
    /// Seconds after its publish during which the publisher may unpublish a version
    /// (`ofc unpublish`); later only an operator's takedown removes it. 0: never.
    pub unpublish_window_secs: u64,
    /// A version downloaded this often (counted as for ranking: once per client and day)
    /// can no longer be unpublished by its publisher. 0: never.
    pub unpublish_max_downloads: u64,
    /// Seconds between re-checks of each verified namespace's domain proof (its
    /// `/.well-known/ofc-namespace.txt` or its DNS TXT record); a failed re-check lapses the
    /// verification until a later one passes. At least 1.
    pub verify_recheck_secs: u64,
    /// Seconds between the passes that check, in `upstream_registry`, the tag of every agent
    /// version published since the last pass (the first pass at start checks them all) and
    /// make a missing or wrong one again (a version is checked once it is 10 s old). At least
    /// 1 (0 is refused).
    pub mirror_repair_secs: u64,
    /// A PEM file of the certificate authorities trusted for the HTTPS proof of a domain,
    /// instead of the built-in web roots (e.g. a company's internal CA).
    pub verify_ca_file: Option<PathBuf>,
    /// The DNS server (`IP:PORT`) asked for a domain's TXT record, and for its address by the
    /// HTTPS proof. Unset: the first `nameserver` of `/etc/resolv.conf` for TXT records, the
    /// system's resolver for addresses.
    pub verify_dns_server: Option<SocketAddr>,
    /// The port the HTTPS proof is fetched from (443; another only for a test or a hub that
    /// reaches the web through a port-mapping gateway).
    pub verify_https_port: u16,
    /// Trusted publishing (issue 33): take `http://127.0.0.1` OIDC issuers and key URLs,
    /// for tests and local development. Off: issuers must be `https://`. Needs
    /// `outbound_allow_private` (127.0.0.1 is a loopback address).
    pub oidc_allow_http_loopback: bool,
    /// Let the hub connect to addresses that are not globally routable (loopback, private,
    /// link-local, unique-local…; `hub_core::outbound`) when fetching what a user names: an
    /// OIDC issuer's documents and keys, a claimed domain's HTTPS proof. Off (the default),
    /// such an address is refused when the URL names it and when a name resolves to it, at
    /// every connection. For tests (their servers are on 127.0.0.1) and hubs whose issuers or
    /// domains live on a private network.
    pub outbound_allow_private: bool,
}

/// A witness of the hub's log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LogWitness {
    /// Its submission prefix: `add-checkpoint` is POSTed to `<url>/add-checkpoint`.
    pub url: String,
    /// Its verifier key, `<name>+<key id>+<base64(0x04 ‖ key)>`.
    pub key: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("data_dir", &self.data_dir)
            .field(
                "database_url",
                &self
                    .database_url
                    .as_deref()
                    .map(crate::store::db::redact_url),
            )
            .field("listen", &self.listen)
            .field("blob_dir", &self.blob_dir)
            .field(
                "upstream_registry",
                &self
                    .upstream_registry
                    .as_deref()
                    .map(crate::store::db::redact_url),
            )
            .field("max_bundle_bytes", &self.max_bundle_bytes)
            .field("max_inline_bundle_bytes", &self.max_inline_bundle_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: default_data_dir(),
            database_url: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 8733)),
            max_bundle_bytes: 50 * 1024 * 1024,
            max_inline_bundle_bytes: 8 * 1024 * 1024,
            auth_failure_limit: 30,
            auth_failure_window_secs: 300,
            db_max_connections: 16,
            registry_host: "localhost".into(),
            upstream_registry: None,
            upstream_username: None,
            upstream_password: None,
            blob_dir: None,
            max_blob_bytes: 1 << 30,
            max_connections: 0,
            header_timeout_secs: 10,
            body_timeout_secs: 60,
            write_timeout_secs: 30,
            request_timeout_secs: 30,
            upload_ttl_secs: 6 * 3600,
            max_uploads_per_user: 16,
            max_upload_bytes_per_user: 4 << 30,
            max_namespace_bytes: 20 << 30,
            max_manifests_per_namespace: 10_000,
            max_namespaces_per_user: 20,
            manifest_memory_bytes: 256 << 20,
            search_poll_ms: 250,
            search_synonyms_file: None,
            search_fewer_words_below: hub_search::index::DEFAULT_FEWER_WORDS_BELOW,
            search_model_dir: None,
            log_origin: None,
            log_key_file: None,
            log_witnesses: Vec::new(),
            log_witness_refresh_secs: 600,
            trusted_proxies: Vec::new(),
            unpublish_window_secs: 72 * 3600,
            unpublish_max_downloads: 100,
            verify_recheck_secs: 24 * 3600,
            mirror_repair_secs: 60,
            verify_ca_file: None,
            verify_dns_server: None,
            verify_https_port: 443,
            oidc_allow_http_loopback: false,
            outbound_allow_private: false,
        }
    }
}

/// Serializes a secret setting without its value.
fn redacted<S: serde::Serializer>(
    v: &Option<secrecy::SecretString>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(_) => s.serialize_some("<redacted>"),
        None => s.serialize_none(),
    }
}

/// `$XDG_DATA_HOME/ofc-hub`, else `~/.local/share/ofc-hub`, else `./ofc-hub-data`.
pub fn default_data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("ofc-hub");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".local/share/ofc-hub");
    }
    PathBuf::from("ofc-hub-data")
}

impl Config {
    /// Merges a file, the environment and flag overrides (a TOML table of the set flags).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: toml::Table,
    ) -> Result<Config, String> {
        let mut merged = toml::Table::new();
        let env_table = env_overrides(env)?;
        // The data dir decides where the default file is, so look at it first.
        let data_dir = flags
            .get("data_dir")
            .or_else(|| env_table.get("data_dir"))
            .and_then(|v| v.as_str())
            .map(PathBuf::from);
        let file = match file {
            Some(f) => Some(f.to_path_buf()),
            None => {
                let d = data_dir.clone().unwrap_or_else(default_data_dir);
                let f = d.join("hub.toml");
                f.exists().then_some(f)
            }
        };
        if let Some(f) = file {
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("cannot read config file {}: {e}", f.display()))?;
            let t: toml::Table = text
                .parse()
                .map_err(|e| format!("config file {}: {e}", f.display()))?;
            merged.extend(t);
        }
        merged.extend(env_table);
        merged.extend(flags);
        let c: Config = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| format!("invalid settings: {}", e.message()))?;
        if c.mirror_repair_secs == 0 {
            return Err(
                "invalid settings: mirror_repair_secs is 0; it is the seconds between the \
                 upstream registry's tag checks, at least 1"
                    .into(),
            );
        }
        Ok(c)
    }

    /// Where blobs live: `blob_dir`, else the data dir.
    pub fn blob_root(&self) -> &Path {
        self.blob_dir.as_deref().unwrap_or(&self.data_dir)
    }

    /// `upload_ttl_secs` in milliseconds.
    pub fn upload_ttl_ms(&self) -> i64 {
        i64::try_from(self.upload_ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX)
    }

    /// The database URL in effect.
    pub fn effective_database_url(&self) -> String {
        match &self.database_url {
            Some(u) => u.clone(),
            None => format!("sqlite://{}", self.data_dir.join("hub.sqlite3").display()),
        }
    }
}

/// The `OFC_HUB__…` variables as a settings table. A value is typed by the setting it sets
/// (the type of its default): numbers and booleans for numeric and boolean settings, text for
/// everything else — `OFC_HUB__UPSTREAM_PASSWORD=123456` is a password, not a number. A value
/// a numeric or boolean setting cannot take is an error naming the variable.
fn env_overrides(env: impl IntoIterator<Item = (String, String)>) -> Result<toml::Table, String> {
    let defaults = toml::Table::try_from(Config::default()).unwrap_or_default();
    let mut t = toml::Table::new();
    for (k, v) in env {
        let Some(key) = k.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let key = key.to_ascii_lowercase();
        let value = match defaults.get(&key) {
            Some(toml::Value::Integer(_)) => toml::Value::Integer(
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{k}: `{v}` is not a whole number"))?,
            ),
            Some(toml::Value::Boolean(_)) => toml::Value::Boolean(
                v.trim()
                    .parse::<bool>()
                    .map_err(|_| format!("{k}: `{v}` is not `true` or `false`"))?,
            ),
            // A list setting: comma-separated values.
            Some(toml::Value::Array(_)) => toml::Value::Array(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| toml::Value::String(s.to_string()))
                    .collect(),
            ),
            _ => toml::Value::String(v),
        };
        t.insert(key, value);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn flags_beat_env_beat_file() {
        let dir = std::env::temp_dir().join(format!("ofc-hub-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hub.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:1\"\nmax_bundle_bytes = 5\nregistry_host = \"f\"\n",
        )
        .unwrap();
        let env = vec![
            ("OFC_HUB__MAX_BUNDLE_BYTES".to_string(), "7".to_string()),
            ("OFC_HUB__REGISTRY_HOST".to_string(), "e".to_string()),
            ("OTHER".to_string(), "x".to_string()),
        ];
        let mut flags = toml::Table::new();
        flags.insert("registry_host".into(), "cli".into());
        let c = Config::load(Some(&file), env, flags).unwrap();
        assert_eq!(c.listen.port(), 1);
        assert_eq!(c.max_bundle_bytes, 7);
        assert_eq!(c.registry_host, "cli");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn environment_values_take_the_type_of_their_setting() {
        let env = vec![
            (
                "OFC_HUB__UPSTREAM_PASSWORD".to_string(),
                "123456".to_string(),
            ),
            ("OFC_HUB__REGISTRY_HOST".to_string(), "true".to_string()),
            ("OFC_HUB__MAX_BUNDLE_BYTES".to_string(), " 42 ".to_string()),
        ];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        assert_eq!(
            c.upstream_password
                .as_ref()
                .map(secrecy::ExposeSecret::expose_secret),
            Some("123456")
        );
        assert_eq!(c.registry_host, "true");
        assert_eq!(c.max_bundle_bytes, 42);
        let env = vec![(
            "OFC_HUB__MAX_INLINE_BUNDLE_BYTES".to_string(),
            "65536".to_string(),
        )];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        assert_eq!(c.max_inline_bundle_bytes, 65536);
        let env = vec![("OFC_HUB__MAX_BUNDLE_BYTES".to_string(), "lots".to_string())];
        let err = Config::load(None, env, toml::Table::new()).unwrap_err();
        assert_eq!(
            err,
            "OFC_HUB__MAX_BUNDLE_BYTES: `lots` is not a whole number"
        );
    }

    #[test]
    fn the_upstream_password_never_shows() {
        let env = vec![(
            "OFC_HUB__UPSTREAM_PASSWORD".to_string(),
            "hunter2-upstream".to_string(),
        )];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        let shown = format!("{c:?} {}", toml::to_string(&c).unwrap());
        assert!(!shown.contains("hunter2-upstream"), "{shown}");
        assert!(
            shown.contains("upstream_password = \"<redacted>\""),
            "{shown}"
        );
    }

    #[test]
    fn request_timeout_is_30_s_unless_set() {
        let c = Config::load(None, Vec::new(), toml::Table::new()).unwrap();
        assert_eq!(c.request_timeout_secs, 30);
        let env = vec![("OFC_HUB__REQUEST_TIMEOUT_SECS".to_string(), "5".to_string())];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        assert_eq!(c.request_timeout_secs, 5);
    }

    #[test]
    fn trusted_proxies_come_from_a_list_or_a_comma_separated_variable() {
        let env = vec![(
            "OFC_HUB__TRUSTED_PROXIES".to_string(),
            "10.0.0.0/8, 127.0.0.1".to_string(),
        )];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        let shown: Vec<String> = c.trusted_proxies.iter().map(|n| n.to_string()).collect();
        assert_eq!(shown, ["10.0.0.0/8", "127.0.0.1/32"]);
        let mut flags = toml::Table::new();
        flags.insert(
            "trusted_proxies".into(),
            toml::Value::Array(vec![toml::Value::String("10.0.0.0/40".into())]),
        );
        let err = Config::load(None, Vec::new(), flags).unwrap_err();
        assert!(err.contains("trusted_proxies: `10.0.0.0/40`"), "{err}");
    }

    #[test]
    fn mirror_repair_secs_is_60_unless_set_and_never_0() {
        let c = Config::load(None, Vec::new(), toml::Table::new()).unwrap();
        assert_eq!(c.mirror_repair_secs, 60);
        let env = vec![("OFC_HUB__MIRROR_REPAIR_SECS".to_string(), "5".to_string())];
        let c = Config::load(None, env, toml::Table::new()).unwrap();
        assert_eq!(c.mirror_repair_secs, 5);
        let env = vec![("OFC_HUB__MIRROR_REPAIR_SECS".to_string(), "0".to_string())];
        let err = Config::load(None, env, toml::Table::new()).unwrap_err();
        assert!(err.contains("mirror_repair_secs is 0"), "{err}");
    }

    #[test]
    fn unknown_setting_is_refused() {
        let env = vec![("OFC_HUB__NOPE".to_string(), "1".to_string())];
        let err = Config::load(None, env, toml::Table::new()).unwrap_err();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn debug_shows_no_secret() {
        // scale-findings item 5: `serve` logs the settings with `{:?}`.
        let c = Config {
            database_url: Some(
                "postgres://127.0.0.1:55432/hub?user=ofc&password=SuperSecret9".into(),
            ),
            upstream_registry: Some("http://regu:RegSecret77@127.0.0.1:1/ofc".into()),
            upstream_password: Some("RegSecret78".to_string().into()),
            ..Config::default()
        };
        let shown = format!("{c:?}");
        for secret in ["SuperSecret9", "RegSecret77", "RegSecret78"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("user=ofc&password=***"), "{shown}");
        assert!(shown.contains("regu:***@127.0.0.1:1/ofc"), "{shown}");
    }
}
