//! Which process is at the other end of a loopback TCP connection: the floor's MCP endpoints
//! accept an agent's token only from that agent's own process group, so a token read by
//! another local process (from `/proc/<pid>/environ` or a file) is worth nothing there.
//!
//! Linux only: the connection's socket is found in `/proc/net/tcp{,6}` by its two addresses,
//! and its inode among the open files of the processes of the group (`/proc/<pid>/fd`).

use std::net::SocketAddr;

/// The inode of the socket whose local address is `peer` and remote address `server` (the
/// client's side of a connection to `server`).
#[cfg(target_os = "linux")]
pub fn client_socket_inode(server: SocketAddr, peer: SocketAddr) -> Option<u64> {
    let (table, local, remote) = match (peer, server) {
        (SocketAddr::V4(p), SocketAddr::V4(s)) => (
            "/proc/net/tcp",
            v4_hex(*p.ip(), p.port()),
            v4_hex(*s.ip(), s.port()),
        ),
        (SocketAddr::V6(p), SocketAddr::V6(s)) => (
            "/proc/net/tcp6",
            v6_hex(*p.ip(), p.port()),
            v6_hex(*s.ip(), s.port()),
        ),
        _ => return None,
    };
    let text = std::fs::read_to_string(table).ok()?;
    text.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
        (f.len() > 9 && f[1].eq_ignore_ascii_case(&local) && f[2].eq_ignore_ascii_case(&remote))
            .then(|| f[9].parse().ok())
            .flatten()
    })
}

/// Whether a process of process group `pgid` holds socket `inode` open.
#[cfg(target_os = "linux")]
pub fn group_holds_socket(pgid: u32, inode: u64) -> bool {
    let want = format!("socket:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in procs.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if process_group(pid) != Some(pgid) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == want.as_str()) {
                return true;
            }
        }
    }
    false
}

/// The process group of `pid`, from `/proc/<pid>/stat` (the field after the state, past the
/// command name in parentheses, which may itself hold spaces and parentheses).
#[cfg(target_os = "linux")]
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let _ppid = fields.next()?;
    fields.next()?.parse().ok()
}

/// `/proc/net/tcp`'s form of an IPv4 address and port: the address as a little-endian 32-bit
/// hex number, the port big-endian.
#[cfg(target_os = "linux")]
fn v4_hex(ip: std::net::Ipv4Addr, port: u16) -> String {
    format!("{:08X}:{port:04X}", u32::from_le_bytes(ip.octets()))
}

/// `/proc/net/tcp6`'s form: four little-endian 32-bit words.
#[cfg(target_os = "linux")]
fn v6_hex(ip: std::net::Ipv6Addr, port: u16) -> String {
    let o = ip.octets();
    let words: String = o
        .chunks(4)
        .map(|w| format!("{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    format!("{words}:{port:04X}")
}

/// Whether the client of the connection from `peer` to `server` runs in process group
/// `pgid`. Where it cannot be told (not Linux), no.
pub fn connection_from_group(server: SocketAddr, peer: SocketAddr, pgid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        client_socket_inode(server, peer).is_some_and(|inode| group_holds_socket(pgid, inode))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (server, peer, pgid);
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn this_process_owns_its_own_connection_and_no_other_group_does() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(server).unwrap();
        let (_accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let me = process_group(std::process::id()).unwrap();
        assert!(connection_from_group(server, peer, me));
        assert!(!connection_from_group(server, peer, me + 1_000_000));
        assert_eq!(v4_hex("127.0.0.1".parse().unwrap(), 80), "0100007F:0050");
    }
}
