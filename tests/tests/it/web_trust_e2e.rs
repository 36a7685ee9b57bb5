//! Deprecation and trust signals in a real browser (issue 33): headless Chromium over WebDriver
//! (`scripts/peers/chromium`) against the real `ofc-hub`, on SQLite and PostgreSQL. `ofc
//! deprecate` → the marker on the search page (only on the deprecated agent) and on its page
//! (with the successor's link); the agent page's trust signals (signing key and its age, the
//! log entry proven, the deprecation, last publish, downloads per week) as the API states them;
//! both pages screenshot and audited by axe-core. The verified badge (issue 33, point 3): the
//! namespace `acme` proves `dns.ofc.test` by a TXT record served by a real dnsmasq
//! (`scripts/peers/dnsmasq`); its hits and its agent's page show the badge, the hit and page
//! of an agent of the unverified `zeta` do not (that page audited too). Fails, never skips,
//! without the browser.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use ofc_test_kit::domain_proof::{DnsRecord, DnsServer};
use ofc_test_kit::{Backend, ProcessOptions, TestHub};

use crate::common::run::tag;
use crate::common::{Ofc, Publishers as _, bin};
use crate::web_e2e::{axe_path, browser, shoot_and_audit, start_driver, text_of};

fn agent_dir(root: &std::path::Path, ns: &str, name: &str, word: &str) -> std::path::PathBuf {
    let dir = root.join(ns).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "id: \"@{name}\"\nname: {name}\npackage: {ns}/{name}\nversion: 1.0.0\n\
             tagline: A {word} agent\ndescription: Trust signal tests ({word}).\ncommand: {:?}\n\
             args: [\"--name\", \"{name}\"]\n",
            bin("ofc-test-agent").display().to_string()
        ),
    )
    .unwrap();
    dir
}

fn deprecation_and_trust_in_the_browser(backend: Backend) {
    let axe = std::fs::read_to_string(axe_path()).unwrap();
    let mut dns = DnsServer::start(&[]);
    let toml = format!("verify_dns_server = \"{}\"\n", dns.addr());
    let hub = TestHub::process(ProcessOptions::new(backend).hub_toml(&toml));
    let acme = hub.publisher("acme", &[]);
    let zeta = hub.publisher("zeta", &[]);
    let word = tag("trustweb");
    let work = tempfile::tempdir().unwrap();
    for name in ["oldie", "newbie"] {
        let d = agent_dir(work.path(), "acme", name, &word);
        acme.ofc.ok(&["publish", d.to_str().unwrap()]);
    }
    let d = agent_dir(work.path(), "zeta", "plain", &word);
    zeta.ofc.ok(&["publish", d.to_str().unwrap()]);
    // `acme` proves its domain; `zeta` does not.
    let record = acme
        .ofc
        .ok(&["namespace", "record", "acme"])
        .trim()
        .to_string();
    dns.restart(&[DnsRecord::Txt("dns.ofc.test".into(), record)]);
    acme.ofc.ok(&[
        "namespace",
        "verify",
        "acme",
        "dns.ofc.test",
        "--method",
        "dns",
    ]);
    acme.ofc.ok(&[
        "deprecate",
        "acme/oldie",
        "--message",
        "superseded by newbie",
        "--use",
        "acme/newbie",
    ]);
    // One pull, so the weekly downloads have something to show.
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let proj = tempfile::tempdir().unwrap();
    let r = Ofc::finish(
        ofc.cmd()
            .current_dir(proj.path())
            .args(["pull", "acme/oldie"]),
    );
    r.assert_code(0);
    hub.wait_for_search(&format!("q={word}"), |h| {
        h.len() == 3 && h.iter().any(|h| h["deprecated"] == true)
    });
    let trust = ofc.json(&["info", "acme/oldie"])["version"]["trust"].clone();
    let key_id = trust["signed_by"]["key_id"].as_str().unwrap().to_string();
    let index = trust["log"]["index"].as_u64().unwrap();
    assert_eq!(trust["log"]["verified"], true, "{trust}");

    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("{}/search?q={word}", hub.url))
            .await
            .unwrap();
        c.wait().for_element(Locator::Css("ol.hits")).await.unwrap();
        // The marker is on the deprecated agent's hit, and only there; the verified badge on
        // `acme`'s hits, and only there.
        let hits = c.find_all(Locator::Css("ol.hits li.hit")).await.unwrap();
        assert_eq!(hits.len(), 3);
        let mut marked = Vec::new();
        let mut verified = Vec::new();
        for h in &hits {
            let name = h
                .find(Locator::Css("span.name"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let badges = h.find_all(Locator::Css("span.badge.warn")).await.unwrap();
            for b in &badges {
                assert_eq!(b.text().await.unwrap(), "deprecated");
                assert!(b.is_displayed().await.unwrap());
            }
            if !badges.is_empty() {
                marked.push(name.clone());
            }
            let badges = h
                .find_all(Locator::Css("span.badge.verified"))
                .await
                .unwrap();
            for b in &badges {
                assert_eq!(b.text().await.unwrap(), "✓ verified: dns.ofc.test");
                assert!(b.is_displayed().await.unwrap());
                let title = b.attr("title").await.unwrap().unwrap_or_default();
                assert_eq!(title, "acme proved it holds the domain dns.ofc.test");
            }
            if !badges.is_empty() {
                verified.push(name);
            }
        }
        assert_eq!(marked, ["acme/oldie@1.0.0"]);
        verified.sort();
        assert_eq!(verified, ["acme/newbie@1.0.0", "acme/oldie@1.0.0"]);
        shoot_and_audit(&c, "search-deprecated", &axe).await;

        // Its page: the marker with the successor, and the trust signals.
        c.find(Locator::Css("ol.hits a[href='/agents/acme/oldie']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !c
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/agents/acme/oldie")
        {
            assert!(
                Instant::now() < deadline,
                "the hit's link did not open the page"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let marker = c
            .wait()
            .for_element(Locator::Id("deprecated"))
            .await
            .unwrap();
        assert!(marker.is_displayed().await.unwrap());
        let text = marker.text().await.unwrap();
        assert!(
            text.contains("Deprecated: superseded by newbie") && text.contains("use acme/newbie"),
            "{text}"
        );
        marker
            .find(Locator::Css("a[href='/agents/acme/newbie']"))
            .await
            .unwrap();

        let heading = text_of(&c, "section[aria-labelledby=signals] h2").await;
        assert_eq!(heading, "Trust signals");
        let key = text_of(&c, "#signal-key").await;
        assert!(
            key.contains(&key_id)
                && key.contains("less than a day before this version was published"),
            "{key}"
        );
        let log = text_of(&c, "#signal-log").await;
        assert!(
            log.contains(&format!("entry {index} proven by this hub")),
            "{log}"
        );
        let dep = text_of(&c, "#signal-deprecation").await;
        assert!(dep.contains("superseded by newbie"), "{dep}");
        let published = text_of(&c, "#signal-published").await;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let today = index_schema::hub_api::trust::day_text((secs / 86_400) as i64);
        assert_eq!(published, format!("Last published {today}"));
        let weeks = c
            .find_all(Locator::Css("#signal-downloads table.weeks tbody tr"))
            .await
            .unwrap();
        assert_eq!(weeks.len(), 8);
        let last = weeks[7].text().await.unwrap();
        assert!(last.ends_with('1'), "this week's downloads: {last}");
        let badge = text_of(&c, "#verified").await;
        assert_eq!(badge, "✓ verified: dns.ofc.test");
        shoot_and_audit(&c, "agent-trust", &axe).await;

        // The unverified namespace's agent: its page has no badge.
        c.goto(&format!("{}/agents/zeta/plain", hub.url))
            .await
            .unwrap();
        c.wait()
            .for_element(Locator::Css("section[aria-labelledby=signals]"))
            .await
            .unwrap();
        let badges = c
            .find_all(Locator::Css("#verified, .badge.verified"))
            .await
            .unwrap();
        assert!(badges.is_empty(), "a badge on zeta/plain's page");
        shoot_and_audit(&c, "agent-unverified", &axe).await;
        c.close().await.unwrap();
    });
}

#[test]
fn deprecation_and_trust_in_the_browser_on_sqlite() {
    deprecation_and_trust_in_the_browser(Backend::Sqlite);
}

#[test]
fn deprecation_and_trust_in_the_browser_on_postgres() {
    deprecation_and_trust_in_the_browser(Backend::Postgres);
}
