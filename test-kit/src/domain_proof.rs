//! Real servers for the domain proofs of verified namespaces: a DNS server (Debian `dnsmasq`,
//! installed by `scripts/peers/dnsmasq`) answering a domain's TXT and A records, and an HTTPS
//! server on 127.0.0.1 with a certificate for the domain from a test CA (rcgen), serving
//! `/.well-known/ofc-namespace.txt`. The hub is pointed at them by its settings:
//! `verify_dns_server` (dnsmasq's address), `verify_ca_file` ([`HttpsProof::ca_file`]) and
//! `verify_https_port` ([`HttpsProof::port`]); dnsmasq gives the domain the address
//! 127.0.0.1, so the hub resolves it through the same DNS server a real hub would ask.

use std::net::{Ipv4Addr, SocketAddr, TcpStream as StdTcpStream, UdpSocket as StdUdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::postgres::workspace;

/// The dnsmasq program, from `scripts/peers/dnsmasq` (which installs it when missing). Panics
/// (never skips) when the script fails.
pub fn dnsmasq_bin() -> PathBuf {
    let script = workspace().join("scripts/peers/dnsmasq");
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: the verified-namespace tests need dnsmasq (scripts/install-test-deps)",
        script.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("dnsmasq="))
        .unwrap_or_else(|| panic!("{} printed no dnsmasq= line: {text}", script.display()));
    PathBuf::from(path.trim())
}

/// A dnsmasq process on 127.0.0.1 answering only the records it was given (no upstream, no
/// hosts file), for names under `.test` (RFC 6761; others are refused). Killed on drop.
#[derive(Debug)]
pub struct DnsServer {
    addr: SocketAddr,
    bin: PathBuf,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// A record dnsmasq serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsRecord {
    /// A TXT record of a name.
    Txt(String, String),
    /// An A record of a name.
    A(String, Ipv4Addr),
}

impl DnsServer {
    /// Starts dnsmasq on a free 127.0.0.1 port with `records`.
    pub fn start(records: &[DnsRecord]) -> DnsServer {
        let bin = dnsmasq_bin();
        // dnsmasq binds UDP and TCP on the port: take one free for both (a few tries).
        for _ in 0..10 {
            let mut s = DnsServer {
                addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
                bin: bin.clone(),
                dir: tempfile::tempdir().unwrap(),
                child: None,
            };
            if s.spawn(records) {
                return s;
            }
        }
        panic!("dnsmasq did not start on any of 10 free ports");
    }

    /// Where it listens (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many questions of `kind` (`TXT`, `A`) for `name` it was asked since it last
    /// started (dnsmasq's own log of each query).
    pub fn queries(&self, kind: &str, name: &str) -> usize {
        let log = std::fs::read_to_string(self.dir.path().join("dnsmasq.log")).unwrap_or_default();
        let asked = format!("query[{kind}] {name} from ");
        log.lines().filter(|l| l.contains(&asked)).count()
    }

    /// Stops it and starts it again on the same port with `records` instead (dnsmasq reads
    /// `--txt-record` only at start).
    pub fn restart(&mut self, records: &[DnsRecord]) {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.spawn(records) {
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not start again on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Spawns dnsmasq; false when it exits at once (the port was taken).
    fn spawn(&mut self, records: &[DnsRecord]) -> bool {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--keep-in-foreground")
            .arg("--conf-file=/dev/null")
            .arg("--no-resolv")
            .arg("--no-hosts")
            .arg("--no-poll")
            // Authoritative for the reserved `.test` names: an unknown one is NXDOMAIN, as a
            // real zone answers, not REFUSED.
            .arg("--local=/test/")
            .arg("--listen-address=127.0.0.1")
            .arg("--bind-interfaces")
            .arg(format!("--port={}", self.addr.port()))
            .arg(format!(
                "--pid-file={}",
                self.dir.path().join("pid").display()
            ))
            .arg("--log-facility=-")
            // Each question in the log, for [`DnsServer::queries`].
            .arg("--log-queries");
        if is_root() {
            // Keep root: the pid file is in our temporary directory.
            cmd.arg("--user=root");
        }
        for r in records {
            match r {
                DnsRecord::Txt(name, text) => cmd.arg(format!("--txt-record={name},{text}")),
                DnsRecord::A(name, ip) => cmd.arg(format!("--host-record={name},{ip}")),
            };
        }
        let log = std::fs::File::create(self.dir.path().join("dnsmasq.log")).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot start {}: {e}", self.bin.display());
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if StdTcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                self.child = Some(child);
                return true;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let log = std::fs::read_to_string(self.dir.path().join("dnsmasq.log"))
                    .unwrap_or_default();
                panic!("dnsmasq did not listen on {} within 10 s: {log}", self.addr);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn is_root() -> bool {
    std::env::var("USER").map(|u| u == "root").unwrap_or(false)
        || Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false)
}

/// A port free on 127.0.0.1 for both UDP and TCP at the time of asking.
fn free_port() -> u16 {
    loop {
        let udp = StdUdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// An HTTPS server on 127.0.0.1 for one domain, its certificate issued by a test CA, serving
/// the proof file (or 404 while there is none). Stops with its runtime.
#[derive(Debug)]
pub struct HttpsProof {
    port: u16,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
    body: Arc<Mutex<Option<String>>>,
    requests: Arc<AtomicUsize>,
}

impl HttpsProof {
    /// Starts it on the current tokio runtime, with a certificate for `domain`.
    pub async fn start(domain: &str) -> HttpsProof {
        let dir = tempfile::tempdir().unwrap();
        let (ca_pem, chain, key) = issue(domain);
        let ca_file = dir.path().join("test-ca.pem");
        std::fs::write(&ca_file, ca_pem).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let body: Arc<Mutex<Option<String>>> = Arc::default();
        let requests: Arc<AtomicUsize> = Arc::default();
        let (b, n) = (body.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, b, n) = (acceptor.clone(), b.clone(), n.clone());
                tokio::spawn(async move {
                    let Ok(Ok(mut tls)) =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
                    else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => head.extend_from_slice(&buf[..k]),
                        }
                    }
                    n.fetch_add(1, Ordering::SeqCst);
                    let text = String::from_utf8_lossy(&head);
                    let path = text.split_whitespace().nth(1).unwrap_or("");
                    let served = b.lock().unwrap().clone();
                    let (status, body) = match served {
                        Some(s) if path == "/.well-known/ofc-namespace.txt" => ("200 OK", s),
                        _ => ("404 Not Found", "not found\n".to_string()),
                    };
                    let answer = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        HttpsProof {
            port,
            ca_file,
            _dir: dir,
            body,
            requests,
        }
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The test CA's certificate (PEM): what the hub's `verify_ca_file` names.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// Serves `body` as the proof file, or 404 (`None`).
    pub fn serve(&self, body: Option<&str>) {
        *self.body.lock().unwrap() = body.map(str::to_owned);
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// A test CA (PEM) and a certificate chain and key for `domain` it issued.
fn issue(domain: &str) -> (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ofc verified-namespace test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let mut leaf = CertificateParams::new(vec![domain.to_string()]).unwrap();
    leaf.distinguished_name.push(DnType::CommonName, domain);
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &ca_cert, &ca_key).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    (
        ca_cert.pem(),
        vec![leaf_cert.der().clone(), ca_cert.der().clone()],
        key,
    )
}
