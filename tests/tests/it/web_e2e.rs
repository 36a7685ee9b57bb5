//! The hub's web pages in a real browser: headless Chromium driven over WebDriver
//! (`chromedriver`, Debian `chromium-driver`, installed by `scripts/peers/chromium`) against the
//! real `ofc-hub`. Search → agent page → the pull line works with the real `ofc pull`; hostile
//! manifest text executes nothing; signed in with a password, a token made on the account page
//! works with the real `ofc`, keys and members are managed from the pages, forms without their
//! CSRF token are refused and logging out ends the session; every page is screenshot at desktop
//! and phone widths (to `$CARGO_TARGET_TMPDIR/web-screenshots/`, checked not blank) and audited
//! by axe-core (npm) inside Chromium: no serious or critical violation. Fails, never skips, without the browser.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::{Ofc, Publishers as _};

/// `scripts/peers/chromium`: installs what is missing, answers axe-core's path.
pub(crate) fn axe_path() -> PathBuf {
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
pub(crate) struct Driver {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_driver() -> Driver {
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

pub(crate) async fn browser(driver: &Driver) -> Client {
    browser_with(driver, &[]).await
}

/// A Chromium session with extra command-line switches.
async fn browser_with(driver: &Driver, extra: &[&str]) -> Client {
    // Two crypto providers are compiled in (ring and aws-lc-rs): name one. A second install in
    // the same process is refused, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<&str> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ]
    .iter()
    .chain(extra)
    .copied()
    .collect();
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".to_owned(), json!({"args": args}));
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
               .map(v => v.id + ': ' + v.help + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3)\
                 .map(n => n.target.join(' ') + ' — ' + ((n.any[0] || {}).message || '')).join('; '))));",
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
pub(crate) async fn shoot_and_audit(client: &Client, name: &str, axe: &str) {
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
        // The start page has an `ol.hits` of its own (recently updated): wait for the
        // search page's address first, then its hits.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let url = c.current_url().await.unwrap();
            if url.as_str().contains("/search?q=data+analysis") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the search form did not lead to /search?q=data+analysis: {url}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        c.wait().for_element(Locator::Css("ol.hits")).await.unwrap();
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
        let verified = text_of(&c, "section[aria-labelledby=trust] strong").await;
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
        let h1 = text_of(&c, "h1").await;
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
        let body = text_of(&c, "main").await;
        assert!(body.contains("<script>window.__pwned = 1</script>"), "{body}");
        c.close().await.unwrap();
    });
}

/// The value of the first `csrf` field in a page's HTML.
fn csrf_in(html: &str) -> String {
    html.split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a csrf field")
        .to_owned()
}

/// The `Set-Cookie` header that sets `name`.
fn set_cookie_of(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie set"))
}

/// The text of the first element `css` selects on the current page.
pub(crate) async fn text_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn fill(c: &Client, css: &str, text: &str) {
    let e = c.find(Locator::Css(css)).await.unwrap();
    e.clear().await.unwrap();
    e.send_keys(text).await.unwrap();
}

/// Waits (10 s at most) until no element matches `css`: a form posted, its page replaced.
async fn wait_gone(c: &Client, css: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.find(Locator::Css(css)).await.is_ok() {
        assert!(Instant::now() < deadline, "{css} is still there");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks a form's submit button and waits until the answer's page has replaced this one
/// (WebDriver's click does not wait for the navigation a form starts).
async fn submit(c: &Client, css: &str) {
    c.execute("window.__ofc_old_page = true;", vec![])
        .await
        .unwrap();
    click(c, css).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let done = c
            .execute(
                "return window.__ofc_old_page === undefined && document.readyState === 'complete';",
                vec![],
            )
            .await
            .unwrap_or(Value::Bool(false));
        if done == Value::Bool(true) {
            break;
        }
        assert!(Instant::now() < deadline, "no page after submitting {css}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

#[test]
fn sign_in_manage_tokens_keys_and_members_csrf_and_logout() {
    use index_schema::envelope::SecretKey;
    let axe = std::fs::read_to_string(axe_path()).unwrap();
    let hub = ofc_test_kit::TestHub::process(ofc_test_kit::ProcessOptions::default());
    let password = "correct horse battery staple";
    hub.create_user_with_password("carol", password);
    hub.create_user("dave");
    hub.create_namespace("carol-labs", "carol");
    let web_key = SecretKey::from_seed(&[7; 32]).public_key();
    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ofc_home = tempfile::tempdir().unwrap();
    let ofc = Ofc::new(ofc_home.path(), &hub.url);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    rt.block_on(async {
        let c = browser(&driver).await;
        // Signed-in pages send a browser without a session to the log-in form.
        c.goto(&format!("{}/account", hub.url)).await.unwrap();
        assert_eq!(c.current_url().await.unwrap().path(), "/login");
        shoot_and_audit(&c, "login", &axe).await;
        fill(&c, "#username", "carol").await;
        fill(&c, "#password", "not the password").await;
        submit(&c, "form[action='/login'] button").await;
        let alert = c
            .wait()
            .for_element(Locator::Css("p[role=alert]"))
            .await
            .unwrap();
        assert_eq!(alert.text().await.unwrap(), "wrong user name or password");
        fill(&c, "#password", password).await;
        submit(&c, "form[action='/login'] button").await;
        c.wait()
            .for_element(Locator::Css("#create-token"))
            .await
            .unwrap();
        assert_eq!(c.current_url().await.unwrap().path(), "/account");
        assert_eq!(text_of(&c, "h1").await, "Signed in as carol");
        shoot_and_audit(&c, "account", &axe).await;

        // Create a token that may publish and manage keys. It never expires, so it outlives
        // the session: the form needs the password.
        fill(&c, "#token-name", "laptop").await;
        for scope in ["publish-new", "publish-update", "manage-keys"] {
            click(&c, &format!("#scope-{scope}")).await;
        }
        fill(&c, "#token-password", password).await;
        submit(&c, "form[action='/account/tokens'] button[type=submit]").await;
        let token = c
            .wait()
            .for_element(Locator::Id("new-token-value"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(token.starts_with("ofc_"), "{token}");
        shoot_and_audit(&c, "account-new-token", &axe).await;

        // The token works with the real `ofc`: log in, make a key, register it.
        let mut login = ofc.cmd();
        login
            .args(["login", "--token-stdin"])
            .write_stdin(token.clone());
        let run = Ofc::finish(&mut login);
        run.assert_code(0);
        ofc.ok(&["keygen"]);
        ofc.ok(&["key", "register", "--namespace", "carol-labs"]);
        let me = http
            .get(format!("{}/api/v1/me", hub.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), 200);

        // The namespace page: the key `ofc` registered, one registered here, then revoked.
        c.goto(&format!("{}/account/namespaces/carol-labs", hub.url))
            .await
            .unwrap();
        assert_eq!(
            c.find_all(Locator::Css("section[aria-labelledby=keys] tbody tr"))
                .await
                .unwrap()
                .len(),
            1,
            "the key `ofc key register` added"
        );
        fill(&c, "#public-key", &web_key.to_string()).await;
        submit(
            &c,
            "form[action='/account/namespaces/carol-labs/keys'] button",
        )
        .await;
        let revoke = format!("button[aria-label='Revoke key {}']", web_key.key_id());
        c.wait().for_element(Locator::Css(&revoke)).await.unwrap();
        submit(&c, &revoke).await;
        c.wait().for_element(Locator::Css("#keys")).await.unwrap();
        let keys = text_of(&c, "section[aria-labelledby=keys] table").await;
        assert!(
            keys.contains(&web_key.key_id().to_string()) && keys.contains("revoked"),
            "{keys}"
        );
        assert!(
            c.find(Locator::Css(&revoke)).await.is_err(),
            "revoked keys have no button"
        );

        // Members: add dave as a maintainer, make him a publisher, remove him.
        fill(&c, "#member-user", "dave").await;
        c.find(Locator::Css("#member-role"))
            .await
            .unwrap()
            .select_by_value("maintainer")
            .await
            .unwrap();
        submit(
            &c,
            "form.stack[action='/account/namespaces/carol-labs/members'] button",
        )
        .await;
        let dave_role = c
            .wait()
            .for_element(Locator::Css("select[aria-label='Role of dave']"))
            .await
            .unwrap();
        assert_eq!(
            dave_role.prop("value").await.unwrap().as_deref(),
            Some("maintainer")
        );
        shoot_and_audit(&c, "namespace", &axe).await;
        c.find(Locator::Css("select[aria-label='Role of dave']"))
            .await
            .unwrap()
            .select_by_value("publisher")
            .await
            .unwrap();
        submit(&c, "button[aria-label='Change the role of dave']").await;
        let dave_role = c
            .wait()
            .for_element(Locator::Css("select[aria-label='Role of dave']"))
            .await
            .unwrap();
        assert_eq!(
            dave_role.prop("value").await.unwrap().as_deref(),
            Some("publisher")
        );
        submit(&c, "button[aria-label='Remove dave']").await;
        c.wait()
            .for_element(Locator::Css("#members"))
            .await
            .unwrap();
        assert!(
            c.find(Locator::Css("select[aria-label='Role of dave']"))
                .await
                .is_err()
        );
        // The API's rules hold here too: the last owner cannot leave.
        submit(&c, "button[aria-label='Remove carol']").await;
        assert_eq!(text_of(&c, "h1").await, "409 Conflict");

        // Revoke the token from the page: `ofc`'s token stops working.
        c.goto(&format!("{}/account", hub.url)).await.unwrap();
        let id = http
            .get(format!("{}/api/v1/me", hub.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["token"]["id"]
            .as_i64()
            .unwrap();
        submit(
            &c,
            &format!("form[action='/account/tokens/{id}/revoke'] button"),
        )
        .await;
        wait_gone(&c, &format!("form[action='/account/tokens/{id}/revoke']")).await;
        let me = http
            .get(format!("{}/api/v1/me", hub.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), 401);

        // Forms without the session's CSRF token, or with a wrong one, are refused.
        let session = c.get_named_cookie("ofc_session").await.unwrap();
        let cookie = format!("ofc_session={}", session.value());
        let csrf = c
            .find(Locator::Css("input[name=csrf]"))
            .await
            .unwrap()
            .attr("value")
            .await
            .unwrap()
            .unwrap();
        let wrong = format!(
            "{}{}",
            if csrf.starts_with('A') { 'B' } else { 'A' },
            &csrf[1..]
        );
        let post = |path: &str, body: String| {
            http.post(format!("{}{path}", hub.url))
                .header("cookie", &cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
        };
        for (body, what) in [
            (
                "name=forged-a&scope=yank&namespaces=*".to_owned(),
                "no token",
            ),
            (
                format!("name=forged-b&scope=yank&namespaces=*&csrf={wrong}"),
                "a wrong token",
            ),
        ] {
            let r = post("/account/tokens", body).await.unwrap();
            assert_eq!(r.status(), 403, "a form with {what}");
            assert!(
                r.text()
                    .await
                    .unwrap()
                    .contains("CSRF token is missing or wrong")
            );
        }
        let r = post(
            "/account/namespaces/carol-labs/members",
            "user=dave&role=owner".to_owned(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 403, "adding a member without the token");
        let r = post("/logout", String::new()).await.unwrap();
        assert_eq!(r.status(), 403, "logging out without the token");
        // With the right token the same request is accepted: the refusals above were the CSRF
        // check. (The session's own token ends within a day: a token that outlives it needs
        // the password; without it, one day at most.)
        let r = post(
            "/account/tokens",
            format!("name=forever&scope=yank&namespaces=*&csrf={csrf}"),
        )
        .await
        .unwrap();
        assert_eq!(
            r.status(),
            403,
            "a never-expiring token from a one-day session"
        );
        let r = post(
            "/account/tokens",
            format!("name=genuine&scope=yank&namespaces=*&expires_in_days=1&csrf={csrf}"),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 403, "a day from now is past the session's end");
        let r = post(
            "/account/tokens",
            format!(
                "name=genuine&scope=yank&namespaces=*&csrf={csrf}&password={}",
                password.replace(' ', "+")
            ),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
        let page = http
            .get(format!("{}/account", hub.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(page.headers()["cache-control"], "no-store");
        let page = page.text().await.unwrap();
        assert!(
            page.contains("genuine") && !page.contains("forged"),
            "{page}"
        );
        let members = http
            .get(format!("{}/account/namespaces/carol-labs", hub.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!members.contains("Role of dave"), "dave was not added");

        // Sign out: the server forgets the session, so the old cookie signs nobody in.
        submit(&c, "form[action='/logout'] button").await;
        c.wait()
            .for_element(Locator::Css("form.search"))
            .await
            .unwrap();
        assert_eq!(c.current_url().await.unwrap().path(), "/");
        let r = http
            .get(format!("{}/account", hub.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        assert_eq!(r.headers()["location"], "/login");
        let r = post(
            "/account/tokens",
            format!("name=late&scope=yank&namespaces=*&csrf={csrf}"),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 401, "a form from the ended session");
        c.close().await.unwrap();

        // The log-in form has its own CSRF token, and the session cookie's attributes.
        let form = http.get(format!("{}/login", hub.url)).send().await.unwrap();
        let login_cookie = set_cookie_of(&form, "ofc_login_csrf");
        let login_cookie = login_cookie.split(';').next().unwrap().to_owned();
        let login_csrf = csrf_in(&form.text().await.unwrap());
        let creds = format!("username=carol&password={}", password.replace(' ', "+"));
        let r = http
            .post(format!("{}/login", hub.url))
            .header("cookie", &login_cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(creds.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "a log-in without its CSRF token");
        for (tls, secure) in [(false, false), (true, true)] {
            let mut req = http
                .post(format!("{}/login", hub.url))
                .header("cookie", &login_cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("{creds}&csrf={login_csrf}"));
            if tls {
                req = req.header("x-forwarded-proto", "https");
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 303);
            let set = set_cookie_of(&r, "ofc_session");
            assert!(
                set.contains("; HttpOnly") && set.contains("; SameSite=Lax"),
                "{set}"
            );
            assert_eq!(set.contains("; Secure"), secure, "{set}");
        }
    });
}

/// The pages follow the system's dark preference (`prefers-color-scheme`), and in dark they
/// pass the same audit (contrast included) and are not blank.
#[test]
fn the_pages_in_dark_mode_pass_the_audit() {
    let axe = std::fs::read_to_string(axe_path()).unwrap();
    let hub = ofc_test_kit::TestHub::process(ofc_test_kit::ProcessOptions::default());
    let alice = hub.publisher("alice", &["ofc-examples"]);
    alice.publish_examples();
    hub.wait_for_search("q=data+analysis", |h| h.len() >= 2);
    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser_with(
            &driver,
            &[
                "--force-dark-mode",
                "--blink-settings=preferredColorScheme=0",
            ],
        )
        .await;
        for (name, path) in [
            ("dark-home", "/"),
            ("dark-search", "/search?q=data+analysis"),
            ("dark-agent", "/agents/ofc-examples/data-analyst"),
            ("dark-publisher", "/publishers/ofc-examples"),
            ("dark-login", "/login"),
        ] {
            c.goto(&format!("{}{path}", hub.url)).await.unwrap();
            let dark = c
                .execute(
                    "return matchMedia('(prefers-color-scheme: dark)').matches;",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(dark, Value::from(true), "the browser prefers dark");
            let background = c
                .execute(
                    "return getComputedStyle(document.body).backgroundColor;",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                background,
                Value::from("rgb(15, 20, 25)"),
                "{path} uses the dark palette"
            );
            shoot_and_audit(&c, name, &axe).await;
        }
        c.close().await.unwrap();
    });
}
