use super::*;
use crate::name::{AgentName, Digest};

fn entries(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            Entry::Yank {
                agent: AgentName::parse(&format!("alice/agent-{i}")).unwrap(),
                version: "1.0.0".into(),
            }
            .to_bytes()
        })
        .collect()
}

/// RFC 6962 §2.1 MTH, written out directly: the reference the stored-hash code is held to.
fn mth(leaves: &[Vec<u8>]) -> Hash {
    match leaves.len() {
        0 => EMPTY_HASH,
        1 => record_hash(&leaves[0]),
        n => {
            let k = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
            node_hash(mth(&leaves[..k]), mth(&leaves[k..]))
        }
    }
}

/// Appends every entry through the stored-hash path the hub uses: each append must find every
/// hash it asks for among those stored before.
fn build(leaves: &[Vec<u8>]) -> HashCache {
    let mut stored = HashCache::new();
    for (n, leaf) in leaves.iter().enumerate() {
        let n = n as u64;
        let hashes = match stored
            .attempt(|r| stored_hashes_for(n, record_hash(leaf), r))
            .unwrap()
        {
            Attempt::Done(h) => h,
            Attempt::Need(ix) => panic!("the log asked for hashes it never stored: {ix:?}"),
        };
        let first = stored_hash_index(0, n);
        for (i, h) in hashes.into_iter().enumerate() {
            stored.insert(first + i as u64, h);
        }
    }
    stored
}

fn done<T>(a: Attempt<T>) -> T {
    match a {
        Attempt::Done(v) => v,
        Attempt::Need(ix) => panic!("missing hashes {ix:?}"),
    }
}

#[test]
fn stored_hashes_give_the_rfc6962_root_and_proofs_that_check() {
    let leaves = entries(70);
    let stored = build(&leaves);
    for size in 0..=leaves.len() as u64 {
        let root = done(stored.attempt(|r| tree_hash(size, r)).unwrap());
        assert_eq!(root, mth(&leaves[..size as usize]), "root of size {size}");
        for i in 0..size {
            let proof = done(stored.attempt(|r| prove_inclusion(size, i, r)).unwrap());
            check_inclusion(&proof, size, root, i, &leaves[i as usize]).unwrap();
            // Another entry at that index is refused.
            let other = &leaves[((i + 1) % size.max(1)) as usize];
            if size > 1 {
                check_inclusion(&proof, size, root, i, other).unwrap_err();
            }
        }
        for old in 0..=size {
            let old_root = mth(&leaves[..old as usize]);
            let proof = if old == 0 || old == size {
                Vec::new()
            } else {
                done(stored.attempt(|r| prove_consistency(size, old, r)).unwrap())
            };
            check_consistency(&proof, old, old_root, size, root).unwrap();
            if old > 0 && old < size {
                // A rewritten history (another old root) is refused.
                check_consistency(&proof, old, record_hash(b"forged"), size, root).unwrap_err();
            }
        }
    }
}

#[test]
fn a_computation_missing_hashes_names_them() {
    let stored = HashCache::new();
    match stored.attempt(|r| tree_hash(3, r)).unwrap() {
        Attempt::Need(ix) => assert!(!ix.is_empty()),
        Attempt::Done(_) => panic!("a tree hash from no hashes"),
    }
}

#[test]
fn entries_print_and_parse_in_one_canonical_form() {
    let key = SecretKey::from_seed(&[7; 32]).public_key();
    let cases = vec![
        Entry::publish(
            AgentName::parse("alice/echo").unwrap(),
            "1.2.3-rc.1",
            Digest::of(b"manifest"),
            key.key_id(),
        )
        .unwrap(),
        Entry::KeyAdd {
            publisher: "alice".into(),
            key,
        },
        Entry::KeyRevoke {
            publisher: "alice".into(),
            key_id: key.key_id(),
        },
        Entry::Yank {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
        },
        Entry::Unyank {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
        },
        Entry::Delete {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
        },
        Entry::Deprecate {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
            successor: Some(AgentName::parse("bob/echo2").unwrap()),
            message: "use echo2 — it streams; ünïcode and spaces".into(),
        },
        Entry::Deprecate {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
            successor: None,
            message: "x".into(),
        },
        Entry::Undeprecate {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
        },
        Entry::Remove {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
            manifest_digest: Digest::of(b"manifest"),
            reason: RemovalReason::Malware,
        },
        Entry::TrustedPublish {
            agent: AgentName::parse("alice/echo").unwrap(),
            version: "1.0.0".into(),
            manifest_digest: Digest::of(b"manifest"),
            issuer: "https://token.actions.githubusercontent.com".into(),
            subject: "repo:alice/echo:ref:refs/heads/main".into(),
        },
    ];
    for e in cases {
        let bytes = e.to_bytes();
        assert!(bytes.starts_with(b"ofc-log/v1 "));
        assert_eq!(
            Entry::parse(&bytes).unwrap(),
            e,
            "{}",
            String::from_utf8_lossy(&bytes)
        );
    }
    let text = format!(
        "ofc-log/v1 publish alice/echo 1.0.0 {} {}\n",
        Digest::of(b"m"),
        key.key_id()
    );
    assert!(Entry::parse(text.as_bytes()).is_ok());
    for bad in [
        text.trim_end().to_string(),
        text.replace("alice/echo", "Alice/echo"),
        text.replace("1.0.0", "1.0"),
        text.replace("1.0.0", "01.0.0"),
        text.replace(" publish", "  publish"),
        text.replace("ofc-log/v1", "ofc-log/v2"),
        text.replace("publish", "publishes"),
        format!("{text}{text}"),
        "ofc-log/v1 delete alice/echo\n".to_string(),
        "ofc-log/v1 delete alice/echo 1.0\n".to_string(),
        // The message is base64url without padding, never empty; a successor is a name or `-`.
        "ofc-log/v1 deprecate alice/echo 1.0.0 - use echo2\n".to_string(),
        "ofc-log/v1 deprecate alice/echo 1.0.0 - eA==\n".to_string(),
        "ofc-log/v1 deprecate alice/echo 1.0.0 -  \n".to_string(),
        "ofc-log/v1 deprecate alice/echo 1.0.0 Bob/x eA\n".to_string(),
        "ofc-log/v1 deprecate alice/echo 1.0.0 - //8\n".to_string(),
        format!(
            "ofc-log/v1 remove alice/echo 1.0.0 {} deleted\n",
            Digest::of(b"m")
        ),
        format!("ofc-log/v1 remove alice/echo 1.0.0 {}\n", Digest::of(b"m")),
        // Issuer and subject are base64url, never empty, both present.
        format!(
            "ofc-log/v1 trusted-publish alice/echo 1.0.0 {} aHR0cHM6Ly94 \n",
            Digest::of(b"m")
        ),
        format!(
            "ofc-log/v1 trusted-publish alice/echo 1.0.0 {} https://x sub\n",
            Digest::of(b"m")
        ),
        format!(
            "ofc-log/v1 trusted-publish alice/echo 1.0.0 {} aHR0cHM6Ly94\n",
            Digest::of(b"m")
        ),
        format!(
            "ofc-log/v1 key-add alice {} {}\n",
            SecretKey::from_seed(&[8; 32]).key_id(),
            key
        ),
    ] {
        assert!(Entry::parse(bad.as_bytes()).is_err(), "accepted {bad:?}");
    }
}

#[test]
fn tile_paths_follow_tlog_tiles() {
    let cases = [
        ("tile/0/000", TileKind::Hashes { level: 0 }, 0, 256),
        (
            "tile/0/x001/234.p/5",
            TileKind::Hashes { level: 0 },
            1234,
            5,
        ),
        (
            "tile/2/x001/x234/067",
            TileKind::Hashes { level: 2 },
            1_234_067,
            256,
        ),
        ("tile/entries/001.p/255", TileKind::Entries, 1, 255),
        ("tile/entries/000", TileKind::Entries, 0, 256),
    ];
    for (path, kind, index, width) in cases {
        let t = TileId::parse(path).unwrap();
        assert_eq!(t, TileId { kind, index, width }, "{path}");
        assert_eq!(t.path(), path);
    }
    for bad in [
        "tile/0/1",
        "tile/0/0001",
        "tile/0/x001",
        "tile/0/001/234",
        "tile/0/x000/001",
        "tile/00/000",
        "tile/8/000",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/05",
        "tile/data/000",
        "tile/0/-01",
        "tiles/0/000",
        "tile/0/x018/x446/x744/x073/x709/x551/616",
    ] {
        assert!(TileId::parse(bad).is_err(), "accepted {bad}");
    }
    let t = TileId::parse("tile/1/000.p/2").unwrap();
    assert_eq!(t.needs_tree_size(), Some(512));
    assert_eq!(
        t.hash_indexes(),
        vec![stored_hash_index(8, 0), stored_hash_index(8, 1)]
    );
}

#[test]
fn checkpoints_are_signed_notes_only_the_log_key_passes() {
    let signer = LogSigner::generate("hub.example/log", &mut rand_core::OsRng).unwrap();
    let root = record_hash(b"x");
    let note = signer.sign_checkpoint(5, root);
    assert!(note.starts_with(&format!(
        "hub.example/log\n5\n{}\n\n\u{2014} hub.example/log ",
        hash_b64(&root)
    )));
    let v = signer.verifier();
    let cp = v.verify_checkpoint(&note).unwrap();
    assert_eq!(
        (cp.size, cp.root, cp.origin.as_str()),
        (5, root, "hub.example/log")
    );

    // The texts round-trip, whatever the base64 holds (`+` included: 64 keys make one likely).
    for _ in 0..64 {
        let k = LogSigner::generate("hub.example/log", &mut rand_core::OsRng).unwrap();
        let again = LogSigner::from_secret_text(&k.to_secret_text()).unwrap();
        assert_eq!(again.verifier(), k.verifier());
        assert_eq!(
            LogVerifier::parse(&k.verifier().to_string()).unwrap(),
            k.verifier()
        );
    }
    assert!(format!("{signer:?}").contains("<redacted>"));

    // Another key, a changed size, another origin: refused.
    let other = LogSigner::generate("hub.example/log", &mut rand_core::OsRng).unwrap();
    let e = other.verifier().verify_checkpoint(&note).unwrap_err();
    assert!(e.to_string().contains("not signed by the log key"), "{e}");
    let forged = note.replacen("\n5\n", "\n6\n", 1);
    v.verify_checkpoint(&forged).unwrap_err();
    let elsewhere = LogSigner::generate("other.example", &mut rand_core::OsRng).unwrap();
    elsewhere.verifier().verify_checkpoint(&note).unwrap_err();
    // A verifier key whose id does not match is refused.
    let text = v.to_string();
    let (name, rest) = text.split_once('+').unwrap();
    let (_, key) = rest.split_once('+').unwrap();
    assert!(LogVerifier::parse(&format!("{name}+00000000+{key}")).is_err());
    assert!(LogSigner::generate("has space", &mut rand_core::OsRng).is_err());
}

#[test]
fn appending_from_the_right_edge_stores_and_roots_as_the_stored_hash_layout() {
    let leaves = entries(140);
    let stored = build(&leaves);
    let mut edge: Vec<Hash> = Vec::new();
    for (n, leaf) in leaves.iter().enumerate() {
        let n = n as u64;
        let a = append_to_edge(&edge, n, record_hash(leaf)).unwrap();
        let want = done(
            stored
                .attempt(|r| stored_hashes_for(n, record_hash(leaf), r))
                .unwrap(),
        );
        assert_eq!(a.stored, want, "stored hashes of entry {n}");
        assert_eq!(
            a.root,
            mth(&leaves[..=n as usize]),
            "root of size {}",
            n + 1
        );
        assert_eq!(a.edge.len(), (n + 1).count_ones() as usize);
        edge = a.edge;
    }
    // An edge of the wrong size is refused.
    assert!(append_to_edge(&edge[1..], 140, record_hash(b"x")).is_err());
}
