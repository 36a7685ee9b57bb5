//! A small DNS stub client (RFC 1035): one question (TXT or A) to one server over UDP, again
//! over TCP when the answer is truncated. Enough for the domain proofs of verified namespaces;
//! the server is `verify_dns_server`, else the first `nameserver` of `/etc/resolv.conf`.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// The record types asked.
pub const TYPE_A: u16 = 1;
/// TXT.
pub const TYPE_TXT: u16 = 16;

/// Why a question got no records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsError {
    /// The name does not exist (NXDOMAIN) or has no record of the type.
    NoRecords(String),
    /// No usable answer (timeout, refused, server failure, a malformed answer).
    Failed(String),
}

/// A DNS server to ask.
#[derive(Debug, Clone)]
pub struct Dns {
    server: SocketAddr,
    timeout: Duration,
}

impl Dns {
    /// Asks `server`.
    pub fn new(server: SocketAddr, timeout: Duration) -> Self {
        Dns { server, timeout }
    }

    /// The first `nameserver` of `/etc/resolv.conf` (port 53).
    pub fn system(timeout: Duration) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string("/etc/resolv.conf")
            .map_err(|e| anyhow::anyhow!("cannot read /etc/resolv.conf: {e}"))?;
        let ip = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("nameserver"))
            .find_map(|ip| ip.trim().parse::<std::net::IpAddr>().ok())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "/etc/resolv.conf names no nameserver; set verify_dns_server = \"IP:PORT\""
                )
            })?;
        Ok(Dns::new(SocketAddr::new(ip, 53), timeout))
    }

    /// The server asked.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// The TXT records of `name`, each record's strings joined.
    pub async fn txt(&self, name: &str) -> Result<Vec<String>, DnsError> {
        let rdatas = self.ask(name, TYPE_TXT).await?;
        Ok(rdatas
            .iter()
            .map(|rd| {
                let mut out = Vec::new();
                let mut i = 0;
                while i < rd.len() {
                    let n = usize::from(rd[i]);
                    let end = (i + 1 + n).min(rd.len());
                    out.extend_from_slice(&rd[i + 1..end]);
                    i = end;
                }
                String::from_utf8_lossy(&out).into_owned()
            })
            .collect())
    }

    /// The IPv4 addresses of `name`.
    pub async fn a(&self, name: &str) -> Result<Vec<Ipv4Addr>, DnsError> {
        let rdatas = self.ask(name, TYPE_A).await?;
        Ok(rdatas
            .iter()
            .filter_map(|rd| <[u8; 4]>::try_from(rd.as_slice()).ok())
            .map(Ipv4Addr::from)
            .collect())
    }

    /// The record data of the answers of type `qtype` to `name`.
    async fn ask(&self, name: &str, qtype: u16) -> Result<Vec<Vec<u8>>, DnsError> {
        let id: u16 = rand::random();
        let query = encode_query(id, name, qtype)?;
        let answer = tokio::time::timeout(self.timeout, self.exchange(&query))
            .await
            .map_err(|_| {
                DnsError::Failed(format!(
                    "the DNS server {} did not answer within {} s",
                    self.server,
                    self.timeout.as_secs()
                ))
            })??;
        parse_answer(&answer, id, qtype, name)
    }

    async fn exchange(&self, query: &[u8]) -> Result<Vec<u8>, DnsError> {
        let failed = |what: &str, e: std::io::Error| {
            DnsError::Failed(format!("{what} the DNS server {}: {e}", self.server))
        };
        let local: SocketAddr = if self.server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(local)
            .await
            .map_err(|e| failed("cannot ask", e))?;
        sock.connect(self.server)
            .await
            .map_err(|e| failed("cannot reach", e))?;
        sock.send(query)
            .await
            .map_err(|e| failed("cannot send to", e))?;
        let mut buf = vec![0u8; 4096];
        let n = sock
            .recv(&mut buf)
            .await
            .map_err(|e| failed("no answer from", e))?;
        buf.truncate(n);
        // TC: the answer did not fit in a datagram; ask again over TCP.
        if buf.len() >= 4 && buf[2] & 0x02 != 0 {
            let mut tcp = TcpStream::connect(self.server)
                .await
                .map_err(|e| failed("cannot reach (TCP)", e))?;
            let len = u16::try_from(query.len()).unwrap_or(u16::MAX);
            let mut msg = len.to_be_bytes().to_vec();
            msg.extend_from_slice(query);
            tcp.write_all(&msg)
                .await
                .map_err(|e| failed("cannot send to (TCP)", e))?;
            let len = tcp
                .read_u16()
                .await
                .map_err(|e| failed("no answer from (TCP)", e))?;
            let mut buf = vec![0u8; usize::from(len)];
            tcp.read_exact(&mut buf)
                .await
                .map_err(|e| failed("a cut answer from (TCP)", e))?;
            return Ok(buf);
        }
        Ok(buf)
    }
}

fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, DnsError> {
    let mut q = Vec::with_capacity(18 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    // Recursion desired; one question.
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        let len = u8::try_from(label.len())
            .ok()
            .filter(|l| (1..=63).contains(l))
            .ok_or_else(|| DnsError::Failed(format!("`{name}` has a label DNS cannot carry")))?;
        q.push(len);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    Ok(q)
}

/// Past a (possibly compressed) name at `at`.
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xC0 == 0xC0 => return Some(at + 2),
            l => at += 1 + usize::from(l),
        }
    }
}

fn u16_at(msg: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]))
}

fn parse_answer(msg: &[u8], id: u16, qtype: u16, name: &str) -> Result<Vec<Vec<u8>>, DnsError> {
    let malformed = || DnsError::Failed(format!("a malformed DNS answer for {name}"));
    if msg.len() < 12 || u16_at(msg, 0) != Some(id) || msg[2] & 0x80 == 0 {
        return Err(malformed());
    }
    match msg[3] & 0x0F {
        0 => {}
        3 => {
            return Err(DnsError::NoRecords(format!(
                "{name} does not exist (NXDOMAIN)"
            )));
        }
        2 => {
            return Err(DnsError::Failed(format!(
                "the DNS server failed (SERVFAIL) for {name}"
            )));
        }
        5 => {
            return Err(DnsError::Failed(format!(
                "the DNS server refused the question for {name}"
            )));
        }
        r => {
            return Err(DnsError::Failed(format!(
                "the DNS server answered rcode {r} for {name}"
            )));
        }
    }
    let questions = u16_at(msg, 4).ok_or_else(malformed)?;
    let answers = u16_at(msg, 6).ok_or_else(malformed)?;
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(msg, at).ok_or_else(malformed)? + 4;
    }
    let mut out = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at).ok_or_else(malformed)?;
        let rtype = u16_at(msg, at).ok_or_else(malformed)?;
        let rdlen = usize::from(u16_at(msg, at + 8).ok_or_else(malformed)?);
        let start = at + 10;
        let rdata = msg.get(start..start + rdlen).ok_or_else(malformed)?;
        if rtype == qtype {
            out.push(rdata.to_vec());
        }
        at = start + rdlen;
    }
    if out.is_empty() {
        let kind = if qtype == TYPE_TXT { "TXT" } else { "A" };
        return Err(DnsError::NoRecords(format!("{name} has no {kind} record")));
    }
    Ok(out)
}
