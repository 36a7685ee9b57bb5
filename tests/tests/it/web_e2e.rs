//! The hub's web pages in a real browser: headless Chromium driven over WebDriver
//! (`chromedriver`, Debian `chromium-driver`, installed by `scripts/peers/chromium`) against the
//! real `ofc-hub`. Search → agent page → the pull line works with the real `ofc pull`; hostile
//! manifest text executes nothing; every page is screenshot at desktop and phone widths (to
//! `$CARGO_TARGET_TMPDIR/web-screenshots/`, checked not blank) and audited by axe-core (npm)
//! inside Chromium: no serious or critical violation. Fails, never skips, without the browser.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::{Ofc, Publishers as _};

/// `scripts/peers/chromium`: installs what is missing, answers axe-core's path.
fn axe_path() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers/chromium");
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A chromedriver on a loopback port, killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (Debian chromium-driver): run scripts/peers/chromium");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

async fn browser(driver: &Driver) -> Client {
    // Two crypto providers are compiled in (ring and aws-lc-rs): name one. A second install in
    // the same process is refused, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1280,900"]}),
    );
    ClientBuilder::rustls()
        .expect("TLS roots")
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

/// The axe-core audit of the current page: its serious and critical violations.
async fn audit(client: &Client, axe: &str) -> Vec<String> {
    client.execute(axe, vec![]).await.expect("axe-core loads");
    let result = client
        .execute_async(
            "const done = arguments[arguments.length - 1];\
             axe.run().then(r => done(r.violations\
               .filter(v => v.impact === 'serious' || v.impact === 'critical')\
               .map(v => v.id + ': ' + v.help + ' (' + v.nodes.length + ')')));",
            vec![],
        )
        .await
        .expect("axe.run");
    serde_json::from_value(result).unwrap()
}

/// Distinct colours in a PNG (a blank page has one or two).
fn colours(png_bytes: &[u8]) -> usize {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let mut seen = std::collections::HashSet::new();
    for px in buf[..info.buffer_size()].chunks(step) {
        seen.insert(px.to_vec());
        if seen.len() > 50 {
            break;
        }
    }
    seen.len()
}

fn screenshots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Screenshots the page at desktop and phone widths, checks each is not blank, and audits it.
async fn shoot_and_audit(client: &Client, name: &str, axe: &str) {
    for (width, height, label) in [(1280, 900, "desktop"), (390, 844, "phone")] {
        client.set_window_size(width, height).await.unwrap();
        let png = client.screenshot().await.unwrap();
        let path = screenshots_dir().join(format!("{name}-{label}.png"));
        std::fs::write(&path, &png).unwrap();
        assert!(colours(&png) > 10, "{} looks blank", path.display());
    }
    client.set_window_size(1280, 900).await.unwrap();
    let violations = audit(client, axe).await;
    assert!(violations.is_empty(), "axe-core on {name}: {violations:#?}");
}

#[test]
fn search_open_an_agent_and_its_pull_line_pulls() {
    let axe = std::fs::read_to_string(axe_path()).unwrap();
    let hub = ofc_test_kit::TestHub::process(ofc_test_kit::ProcessOptions::default());
    let alice = hub.publisher("alice", &["ofc-examples"]);
    alice.publish_examples();
    hub.wait_for_search("q=data+analysis", |h| h.len() >= 2);
    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pull_line = rt.block_on(async {
        let c = browser(&driver).await;
        c.goto(&hub.url).await.unwrap();
        assert_eq!(c.title().await.unwrap(), "Agents · ofc hub");
        shoot_and_audit(&c, "home", &axe).await;

        // Search from the box on the start page.
        let q = c.find(Locator::Css("input#q")).await.unwrap();
        q.send_keys("data analysis").await.unwrap();
        c.find(Locator::Css("form.search button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.wait().for_element(Locator::Css("ol.hits")).await.unwrap();
        assert!(
            c.current_url()
                .await
                .unwrap()
                .as_str()
                .contains("/search?q=data+analysis")
        );
        // Matches are marked.
        let marks = c.find_all(Locator::Css("ol.hits mark")).await.unwrap();
        assert!(!marks.is_empty(), "no highlighted match");
        shoot_and_audit(&c, "search", &axe).await;

        // Open the data analyst.
        c.find(Locator::Css("a[href='/agents/ofc-examples/data-analyst']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let pull = c
            .wait()
            .for_element(Locator::Id("pull"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let verified = c
            .find(Locator::Css("section[aria-labelledby=trust] strong"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(verified, "the signature verifies");
        let caps = c.find_all(Locator::Css("ul.caps > li")).await.unwrap();
        assert_eq!(caps.len(), 2, "the data analyst's two capabilities");
        // With JavaScript on, the copy button is shown.
        let copy = c
            .find(Locator::Css("button[data-copy=pull]"))
            .await
            .unwrap();
        assert!(copy.is_displayed().await.unwrap());
        shoot_and_audit(&c, "agent", &axe).await;

        c.goto(&format!("{}/publishers/ofc-examples", hub.url))
            .await
            .unwrap();
        let listed = c.find_all(Locator::Css("ol.hits li.hit")).await.unwrap();
        assert!(listed.len() >= 6, "{} agents listed", listed.len());
        shoot_and_audit(&c, "publisher", &axe).await;

        c.goto(&format!("{}/agents/nobody/nothing", hub.url))
            .await
            .unwrap();
        let h1 = c
            .find(Locator::Css("h1"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(h1, "404 Not Found");
        c.close().await.unwrap();
        pull
    });
    // The line on the page is a command `ofc pull` takes: run it.
    assert!(
        pull_line.starts_with("ofc pull ofc-examples/data-analyst@"),
        "{pull_line}"
    );
    let home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(home.path(), &hub.url);
    let args: Vec<&str> = pull_line.split_whitespace().skip(1).collect();
    let out = ofc.ok(&args);
    assert!(out.contains("ofc-examples/data-analyst"), "{out}");
}

#[test]
fn hostile_manifest_text_executes_nothing() {
    let hub = ofc_test_kit::TestHub::process(ofc_test_kit::ProcessOptions::default());
    let mallory = hub.publisher("mallory", &[]);
    let dir = tempfile::tempdir().unwrap();
    let payload = r#"<script>window.__pwned = 1</script> "><img src=x onerror="window.__pwned = 2"> <a href="javascript:window.__pwned = 3">click</a>"#;
    // Where the manifest allows fewer characters (the name, keywords).
    let short = r#""><img src=x onerror=window.__pwned=5>"#;
    std::fs::write(
        dir.path().join("agent.yaml"),
        format!(
            "id: \"@trap\"\nname: {short:?}\npackage: mallory/trap\nversion: 1.0.0\ntagline: {payload:?}\ndescription: {payload:?}\nkeywords: [trap]\nexamples: [{payload:?}]\nmodel: m\nendpoint: http://localhost:11434/v1\ncapabilities:\n  - name: trap_cap\n    description: {payload:?}\n    keywords: [{short:?}]\n    input_schema: {{type: object, description: {payload:?}}}\nprompt: hi\n"
        ),
    )
    .unwrap();
    mallory.ofc.ok(&["publish", dir.path().to_str().unwrap()]);
    hub.wait_for_search("q=trap", |h| !h.is_empty());
    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Served with a strict policy: no inline script, nothing from elsewhere.
        let r = reqwest::get(format!("{}/agents/mallory/trap", hub.url))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let csp = r.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        let html = r.text().await.unwrap();
        assert!(!html.contains("<script>window"), "the payload is escaped");
        assert!(html.contains("&lt;script&gt;window.__pwned = 1&lt;/script&gt;"));
        let c = browser(&driver).await;
        for path in ["/", "/search?q=trap+window+pwned", "/agents/mallory/trap", "/publishers/mallory"] {
            c.goto(&format!("{}{path}", hub.url)).await.unwrap();
            // Open every <details> (the schemas) and click every link that stays on the page.
            for d in c.find_all(Locator::Css("details summary")).await.unwrap() {
                d.click().await.unwrap();
            }
            let pwned = c
                .execute("return typeof window.__pwned;", vec![])
                .await
                .unwrap();
            assert_eq!(pwned, Value::from("undefined"), "{path} ran the payload");
            let scripts = c
                .execute("return document.scripts.length;", vec![])
                .await
                .unwrap();
            assert_eq!(scripts, Value::from(1), "{path}: only ofc.js");
            let js_links = c
                .execute(
                    "return [...document.querySelectorAll('a')].filter(a => a.href.startsWith('javascript:')).length;",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(js_links, Value::from(0), "{path}");
            let images = c
                .execute("return document.images.length;", vec![])
                .await
                .unwrap();
            assert_eq!(images, Value::from(0), "{path}");
        }
        // The payload is shown as text.
        c.goto(&format!("{}/agents/mallory/trap", hub.url))
            .await
            .unwrap();
        let body = c.find(Locator::Css("main")).await.unwrap().text().await.unwrap();
        assert!(body.contains("<script>window.__pwned = 1</script>"), "{body}");
        c.close().await.unwrap();
    });
}
