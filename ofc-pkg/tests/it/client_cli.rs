//! `ofc keygen`, `ofc init` and `ofc publish --dry-run` end to end through the binary, with
//! `OFC_HOME` pointing at a temporary directory.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn ofc(home: &Path) -> Command {
    let mut c = Command::cargo_bin("ofc").unwrap();
    c.env("OFC_HOME", home)
        .env_remove("OFC_HUB")
        .env_remove("OFC_TOKEN");
    c
}

fn stdout_json(c: &mut Command) -> serde_json::Value {
    let out = c.assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn keygen_writes_a_private_key_and_never_prints_it() {
    let home = tempfile::tempdir().unwrap();
    let out = ofc(home.path()).arg("keygen").assert().success();
    let output = out.get_output();
    let key_file = home.path().join("config/keys/default.key");
    let secret = fs::read_to_string(&key_file).unwrap();
    assert!(secret.starts_with("ofc-ed25519-secret:"));
    let secret_b64 = secret.trim().trim_start_matches("ofc-ed25519-secret:");
    for stream in [&output.stdout, &output.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(!text.contains(secret_b64), "secret printed: {text}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let public = fs::read_to_string(home.path().join("config/keys/default.pub")).unwrap();
    assert!(stdout.contains(public.trim()), "{stdout}");
    assert!(stdout.contains("key id:"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(key_file.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
    }

    // No overwrite without --force.
    let out = ofc(home.path()).arg("keygen").assert().failure().code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    insta::assert_snapshot!(
        "keygen_exists",
        stderr.replace(&home.path().display().to_string(), "<HOME>")
    );
    assert_eq!(fs::read_to_string(&key_file).unwrap(), secret);

    // --force replaces it; --json reports the new key.
    let v = stdout_json(ofc(home.path()).args(["keygen", "--force", "--json"]));
    let new_secret = fs::read_to_string(&key_file).unwrap();
    assert_ne!(new_secret, secret);
    assert_eq!(
        v["publicKey"].as_str().unwrap(),
        fs::read_to_string(home.path().join("config/keys/default.pub"))
            .unwrap()
            .trim()
    );
    assert_eq!(v["keyId"].as_str().unwrap().len(), 32);
    assert!(
        !v.to_string()
            .contains(new_secret.trim().trim_start_matches("ofc-ed25519-secret:"))
    );

    // Named keys, and bad names refused.
    ofc(home.path())
        .args(["keygen", "--name", "work"])
        .assert()
        .success();
    assert!(home.path().join("config/keys/work.key").exists());
    ofc(home.path())
        .args(["keygen", "--name", "../evil"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("invalid key name"));
}

#[test]
fn init_scaffolds_pass_validate_and_are_not_overwritten() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let agent = work.path().join("My Agent");
    let card = work.path().join("carded");
    let bp = work.path().join("floor");
    ofc(home.path()).arg("init").arg(&agent).assert().success();
    ofc(home.path())
        .args(["init", "--card"])
        .arg(&card)
        .assert()
        .success();
    ofc(home.path())
        .args(["init", "--blueprint"])
        .arg(&bp)
        .assert()
        .success();
    assert!(agent.join("agent.yaml").is_file());
    assert!(card.join("carded.md").is_file());
    assert!(bp.join("blueprint.yaml").is_file());
    assert!(
        fs::read_to_string(agent.join("agent.yaml"))
            .unwrap()
            .contains("id: \"@my-agent\"")
    );
    ofc(home.path())
        .arg("validate")
        .args([&agent, &card, &bp])
        .assert()
        .success()
        .stderr(predicate::str::contains("3 ok, 0 invalid"));

    let before = fs::read_to_string(agent.join("agent.yaml")).unwrap();
    ofc(home.path())
        .arg("init")
        .arg(&agent)
        .assert()
        .failure()
        .code(1)
        .stderr(predicate::str::contains("already exists"))
        .stderr(predicate::str::contains("hint: "));
    assert_eq!(
        fs::read_to_string(agent.join("agent.yaml")).unwrap(),
        before
    );

    ofc(home.path())
        .args(["init", "--card", "--blueprint"])
        .arg(&agent)
        .assert()
        .failure()
        .code(2);
}

#[test]
fn publish_dry_run_packs_signs_and_reports_digests() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("helper");

    // Without a key: a clear error and a hint.
    ofc(home.path()).arg("init").arg(&dir).assert().success();
    let out = ofc(home.path())
        .args(["publish", "--dry-run", "--name", "acme/helper"])
        .arg(&dir)
        .assert()
        .failure()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    insta::assert_snapshot!(
        "publish_no_key",
        stderr.replace(&home.path().display().to_string(), "<HOME>")
    );

    ofc(home.path()).arg("keygen").assert().success();
    // Without a hub name: the manifest error and a hint.
    let out = ofc(home.path())
        .args(["publish", "--dry-run"])
        .arg(&dir)
        .assert()
        .failure()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    insta::assert_snapshot!(
        "publish_no_name",
        stderr.replace(&dir.display().to_string(), "<DIR>")
    );

    fs::write(dir.join("tool.py"), "print('x')\n").unwrap();
    fs::create_dir_all(dir.join(".git")).unwrap();
    fs::write(dir.join(".git/HEAD"), "ignored").unwrap();
    let v = stdout_json(
        ofc(home.path())
            .args([
                "publish",
                "--dry-run",
                "--json",
                "--name",
                "acme/helper",
                "--version",
                "2.0.0",
            ])
            .arg(&dir),
    );
    assert_eq!(v["name"], "acme/helper");
    // The file's version wins over the flag.
    assert_eq!(v["version"], "0.1.0");
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["bundleFiles"], 2);
    let public = fs::read_to_string(home.path().join("config/keys/default.pub")).unwrap();
    let public = index_schema::envelope::PublicKey::parse(public.trim()).unwrap();
    assert_eq!(v["keyId"], public.key_id().to_string());

    // The bundle digest equals packing the folder with the library (and a copy elsewhere).
    let copy = work.path().join("elsewhere/helper");
    fs::create_dir_all(&copy).unwrap();
    for f in ["agent.yaml", "tool.py"] {
        fs::copy(dir.join(f), copy.join(f)).unwrap();
    }
    let packed = ofc_pkg::pack::pack_dir(&copy, &Default::default()).unwrap();
    assert_eq!(v["bundleDigest"], packed.digest.to_string());
    assert_eq!(v["bundleSize"], packed.bytes.len());
    let v2 = stdout_json(
        ofc(home.path())
            .args(["publish", "--dry-run", "--json", "--name", "acme/helper"])
            .arg(&copy),
    );
    assert_eq!(v2["manifestDigest"], v["manifestDigest"]);

    // An AgentCard folder takes name and version from the flags.
    let cdir = work.path().join("carded");
    ofc(home.path())
        .args(["init", "--card"])
        .arg(&cdir)
        .assert()
        .success();
    let v = stdout_json(
        ofc(home.path())
            .args([
                "publish",
                "--dry-run",
                "--json",
                "--name",
                "acme/carded",
                "--version",
                "1.2.3",
            ])
            .arg(&cdir),
    );
    assert_eq!(v["version"], "1.2.3");
    assert_eq!(v["entrypoint"], "carded.md");
}

#[test]
fn publish_refuses_symlinks_in_the_folder() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    ofc(home.path()).arg("keygen").assert().success();
    ofc(home.path())
        .arg("init")
        .arg(work.path())
        .assert()
        .success();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", work.path().join("passwd")).unwrap();
        ofc(home.path())
            .args(["publish", "--dry-run", "--name", "acme/x"])
            .arg(work.path())
            .assert()
            .failure()
            .code(1)
            .stderr(predicate::str::contains(
                "caused by: passwd: a symlink cannot be packed",
            ));
    }
}

#[test]
fn publish_dry_run_turns_an_a2a_card_into_a_remote_agent() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("currency");
    fs::create_dir_all(&dir).unwrap();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../index-schema/tests/fixtures/a2a-cards/ok-full.json"),
        dir.join("agent-card.json"),
    )
    .unwrap();
    ofc(home.path()).arg("keygen").assert().success();
    let v = stdout_json(
        ofc(home.path())
            .args(["publish", "--dry-run", "--json", "--name", "acme/currency"])
            .arg(&dir),
    );
    assert_eq!(v["name"], "acme/currency");
    assert_eq!(v["version"], "1.2.0");
    assert_eq!(v["entrypoint"], "agent-card.json");
    assert_eq!(v["source"], "remote");
    assert_eq!(v["bundleDigest"], serde_json::Value::Null);

    // A card that cannot become a manifest: the card's field and line.
    let text = fs::read_to_string(dir.join("agent-card.json"))
        .unwrap()
        .replace("\"version\": \"1.2.0\"", "\"version\": \"v1\"");
    fs::write(dir.join("agent-card.json"), text).unwrap();
    let out = ofc(home.path())
        .args(["publish", "--dry-run", "--name", "acme/currency"])
        .arg(&dir)
        .assert()
        .failure()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("5:14: version: must be an exact semver version"),
        "{stderr}"
    );
}
