//! The browser view of `ofc serve` in a real browser: headless Chromium driven over WebDriver
//! (`chromedriver`, installed by `scripts/peers/chromium`, as for the hub's pages) against the
//! real `ofc serve`, its LLM agent answered by a scripted model that streams slowly. The page
//! is opened with the token in its fragment (gone from the address bar once read); a session is
//! started from the picker; a message typed and sent; the answer is seen streaming in, with who
//! holds the floor, then as the stored message; a reload in the middle of an answer misses
//! nothing (every message once); a tool call is shown with its result; a long turn is
//! cancelled from the page; the connection cut by a relay in front of the server (and
//! refused a while) is taken up again with `Last-Event-ID` and the Bearer header (the relay
//! reads the requests: no token in any request line), and what the floor did meanwhile shows
//! once; the session closed elsewhere is resumed from the page. Every page is audited by axe-core (no serious or critical
//! violation) and screenshot; the strict CSP is on every answer and the browser's console
//! holds no CSP violation — read from chromedriver's browser log, which is shown to catch one.
//! Fails, never skips, without the browser.

use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common::run::blueprint;
use crate::run_e2e::{ModelServer, pieces};
use crate::serve_e2e::serve;
use crate::web_e2e::{Driver, axe_path, shoot_and_audit, start_driver};

/// `@keeper` answers every message and holds the task board.
const BLUEPRINT: &str = "name: web-test\ndefaults:\n  endpoint: ENDPOINT\nfurniture:\n  - {name: board, type: taskboard}\nagents:\n  - id: \"@keeper\"\n    model: keeper-model\n    activation: always\n    furniture: [board]\n";

/// A Chromium session that keeps its console in chromedriver's browser log.
async fn browser(driver: &Driver) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--window-size=1280,900"]}),
    );
    caps.insert("goog:loggingPrefs".to_owned(), json!({"browser": "ALL"}));
    ClientBuilder::rustls()
        .expect("TLS roots")
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

/// The browser console since the last read (chromedriver's `se/log`).
async fn console(driver: &Driver, c: &Client) -> Vec<String> {
    let id = c.session_id().await.unwrap().unwrap();
    let log: Value = reqwest::Client::new()
        .post(format!("{}/session/{id}/se/log", driver.url))
        .json(&json!({"type": "browser"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    log["value"]
        .as_array()
        .unwrap_or_else(|| panic!("chromedriver's browser log: {log}"))
        .iter()
        .map(|e| format!("{} {}", e["level"], e["message"]))
        .collect()
}

/// A TCP relay in front of the server, whose connections the test can cut (all at once) and
/// whose door it can shut (new connections dropped) and open again: a real network cut.
struct Relay {
    url: String,
    cut: tokio::sync::watch::Sender<u64>,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The head of each connection's first request.
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Relay {
    async fn start(target: &str) -> Relay {
        use std::sync::atomic::Ordering;
        let target: std::net::SocketAddr = target.strip_prefix("http://").unwrap().parse().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (cut, cuts) = tokio::sync::watch::channel(0u64);
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let door = std::sync::Arc::clone(&open);
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let heads_in = std::sync::Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !door.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused
                }
                let mut cuts = cuts.clone();
                cuts.borrow_and_update();
                let heads = std::sync::Arc::clone(&heads_in);
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    // The head of the connection's first request, kept, then passed on.
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match inbound.read(&mut byte).await {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    heads
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    if outbound.write_all(&head).await.is_err() {
                        return;
                    }
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Relay {
            url,
            cut,
            open,
            heads,
        }
    }

    /// Cuts every connection and refuses new ones.
    fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    /// Lets connections in again.
    fn reopen(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn csp_violations(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| l.contains("Content Security Policy") || l.contains("Refused to"))
        .collect()
}

/// Waits (up to `secs`) until the script returns true.
async fn until(c: &Client, what: &str, secs: u64, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let v = c.execute(script, vec![]).await.unwrap();
        if v == Value::Bool(true) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; the page says: {}",
            c.execute("return document.querySelector('main').innerText", vec![])
                .await
                .unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(c: &Client, script: &str) -> String {
    c.execute(script, vec![])
        .await
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn say(c: &Client, words: &str) {
    let box_ = c.find(Locator::Css("textarea#message")).await.unwrap();
    box_.send_keys(words).await.unwrap();
    c.find(Locator::Css("button#send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        c,
        "the message box to empty",
        10,
        "return document.getElementById('message').value === ''",
    )
    .await;
}

/// The stored messages shown: (id, from, content), in order.
async fn messages(c: &Client) -> Vec<(String, String, String)> {
    let v = c
        .execute(
            "return [...document.querySelectorAll('#log li.msg[data-id]')].map(li => \
               [li.dataset.id, li.dataset.from, li.querySelector('.content').textContent]);",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

const STREAMING: &str = "#log li.msg.streaming[data-from='@keeper'] .content";

#[test]
fn the_browser_view_streams_answers_survives_a_reload_shows_tools_and_cancels() {
    let axe = std::fs::read_to_string(axe_path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let model = ModelServer::start(&[(
        "keeper-model",
        vec![
            // 1: streamed slowly enough to watch and to reload in the middle of.
            pieces(&["Hello ", "WAIT 3000", "from the ", "WAIT 3000", "keeper."]),
            // 2: a tool call, then the answer.
            pieces(&["TOOL board__add_task {\"title\": \"water the plants\"}"]),
            pieces(&["The task is on the board."]),
            // 3: a turn that would take a minute: cancelled.
            pieces(&["Thinking ", "WAIT 60000", "never said"]),
        ],
    )]);
    blueprint(proj.path(), &BLUEPRINT.replace("ENDPOINT", &model.endpoint));
    let s = serve(home.path(), proj.path(), &[]);
    assert_eq!(s.browser_url, format!("{}/#token={}", s.url, s.token));
    let driver = start_driver();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // The headers of the page, as a browser gets them.
        let page = reqwest::get(format!("{}/", s.url)).await.unwrap();
        let csp = page.headers()["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'")
                && csp.contains("script-src 'self'")
                && csp.contains("frame-ancestors 'none'")
                && !csp.contains("unsafe"),
            "{csp}"
        );
        assert_eq!(page.headers()["x-content-type-options"], "nosniff");

        // Through the relay, so that the test can cut the page's connections.
        let relay = Relay::start(&s.url).await;
        let c = browser(&driver).await;
        c.goto(&s.browser_url.replace(&s.url, &relay.url))
            .await
            .unwrap();
        until(&c, "the session picker", 20, "return !document.getElementById('picker').hidden").await;
        let address = c.current_url().await.unwrap();
        assert!(
            !address.as_str().contains("token"),
            "the token is taken out of the address: {address}"
        );
        assert_eq!(c.title().await.unwrap(), "Sessions · ofc serve");

        // A new session from the picker.
        c.find(Locator::Css("button#new-session"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        until(
            &c,
            "the session view, waiting for the user",
            60,
            "return document.getElementById('floor-state').dataset.state === 'waiting'",
        )
        .await;
        let address = c.current_url().await.unwrap();
        let id = address
            .fragment()
            .and_then(|f| f.strip_prefix("session="))
            .unwrap_or_else(|| panic!("{address}"))
            .to_owned();
        assert!(
            text(&c, "return document.querySelector('#agents').innerText")
                .await
                .contains("@keeper")
        );
        let resume = c.find(Locator::Id("resume-bar")).await.unwrap();
        assert!(!resume.is_displayed().await.unwrap(), "a live session needs no resuming");

        // The answer streams in, and the page says who holds the floor.
        say(&c, "hello @keeper").await;
        until(
            &c,
            "the first piece of the answer",
            30,
            &format!(
                "const e = document.querySelector(\"{STREAMING}\"); return !!e && e.textContent.startsWith('Hello')"
            ),
        )
        .await;
        assert_eq!(
            text(&c, "return document.getElementById('floor-state').textContent").await,
            "@keeper is answering."
        );
        assert_eq!(
            text(&c, "return document.querySelector('#agents li.speaking .name').textContent").await,
            "@keeper"
        );
        assert!(
            messages(&c).await.iter().all(|m| m.1 != "@keeper"),
            "the answer is not stored yet"
        );
        let streaming = text(&c, &format!("return document.querySelector(\"{STREAMING}\").textContent")).await;
        assert!(!streaming.contains("keeper."), "{streaming}");
        shoot_and_audit(&c, "serve-streaming", &axe).await;

        // A reload in the middle of the answer: nothing missed, nothing twice.
        c.refresh().await.unwrap();
        until(
            &c,
            "the stored answer after the reload",
            30,
            "return [...document.querySelectorAll('#log li.msg[data-from=\"@keeper\"]:not(.streaming) .content')]\
               .some(e => e.textContent === 'Hello from the keeper.')",
        )
        .await;
        until(
            &c,
            "the floor back to the user",
            20,
            "return document.getElementById('floor-state').dataset.state === 'waiting'",
        )
        .await;
        let shown = messages(&c).await;
        let said: Vec<(&str, &str)> = shown.iter().map(|m| (m.1.as_str(), m.2.as_str())).collect();
        assert_eq!(
            said,
            [("@user", "hello @keeper"), ("@keeper", "Hello from the keeper.")],
            "{shown:?}"
        );
        let streaming_left = c.find_all(Locator::Css("#log li.msg.streaming")).await.unwrap();
        assert!(streaming_left.is_empty(), "the stored message replaced the streamed text");

        // A tool call, shown with its arguments and result.
        say(&c, "put watering the plants on the board").await;
        until(
            &c,
            "the answer with its tool call",
            30,
            "return !!document.querySelector('#log li.msg[data-from=\"@keeper\"] details.tool')",
        )
        .await;
        let tool = text(
            &c,
            "const d = document.querySelector('#log li.msg[data-from=\"@keeper\"] details.tool'); \
             d.open = true; return d.textContent",
        )
        .await;
        assert!(
            tool.contains("add_task") && tool.contains("water the plants"),
            "{tool}"
        );
        until(
            &c,
            "the floor back to the user",
            20,
            "return document.getElementById('floor-state').dataset.state === 'waiting'",
        )
        .await;
        shoot_and_audit(&c, "serve-session", &axe).await;

        // A long turn, cancelled from the page.
        say(&c, "take your time").await;
        until(
            &c,
            "the long answer to start",
            30,
            &format!(
                "const e = document.querySelector(\"{STREAMING}\"); return !!e && e.textContent.startsWith('Thinking')"
            ),
        )
        .await;
        until(&c, "the cancel button", 5, "return !document.getElementById('cancel').disabled").await;
        c.find(Locator::Css("button#cancel"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        until(
            &c,
            "the turn cancelled",
            20,
            "return [...document.querySelectorAll('#log li.note')].some(n => n.textContent === 'The turn was cancelled.')\
               && document.getElementById('floor-state').dataset.state === 'waiting'\
               && document.getElementById('cancel').disabled",
        )
        .await;
        assert!(
            c.find_all(Locator::Css("#log li.msg.streaming")).await.unwrap().is_empty()
        );
        let shown = messages(&c).await;
        assert!(shown.iter().all(|m| !m.2.contains("never said")), "{shown:?}");
        let ids: std::collections::HashSet<&String> = shown.iter().map(|m| &m.0).collect();
        assert_eq!(ids.len(), shown.len(), "every message once: {shown:?}");

        // The connection cut (and refused for a while) while the floor goes on without the page:
        // it reconnects from the last event it has, and shows what it missed, once.
        let heads_before = relay.heads.lock().unwrap().len();
        relay.cut();
        until(
            &c,
            "the page to see the connection lost",
            30,
            "return document.getElementById('floor-state').dataset.state === 'reconnecting'",
        )
        .await;
        let http = reqwest::Client::new();
        let posted = http
            .post(format!("{}/api/v1/sessions/{id}/messages", s.url))
            .bearer_auth(&s.token)
            .json(&json!({"content": "while you were away"}))
            .send()
            .await
            .unwrap();
        assert_eq!(posted.status(), 201);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let view: Value = http
                .get(format!("{}/api/v1/sessions/{id}", s.url))
                .bearer_auth(&s.token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            // The model asked a fifth time, and the turn over: the answer is stored.
            if model.requests().len() == 5 && view["turn_running"] == false {
                break;
            }
            assert!(Instant::now() < deadline, "the turn did not end: {view}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        relay.reopen();
        until(
            &c,
            "the missed messages after the reconnection",
            60,
            &format!(
                "return document.querySelectorAll('#log li.msg[data-id]').length === {} \
                   && document.getElementById('floor-state').dataset.state === 'waiting'",
                shown.len() + 2
            ),
        )
        .await;
        // It asked for what follows the last event it had, with the token in a header only.
        let heads: Vec<String> = relay.heads.lock().unwrap()[heads_before..].to_vec();
        let resumed: Vec<&String> = heads
            .iter()
            .filter(|h| h.starts_with(&format!("GET /api/v1/sessions/{id}/events ")))
            .collect();
        assert!(!resumed.is_empty(), "{heads:#?}");
        for h in &resumed {
            let lower = h.to_ascii_lowercase();
            let last = lower
                .lines()
                .find_map(|l| l.strip_prefix("last-event-id: "))
                .unwrap_or_else(|| panic!("no Last-Event-ID: {h}"));
            assert!(last.trim().parse::<u64>().unwrap() > 0, "{h}");
            assert!(lower.contains(&format!("authorization: bearer {}", s.token.to_ascii_lowercase())));
        }
        assert!(
            relay.heads.lock().unwrap().iter().all(|h| !h.lines().next().unwrap_or_default().contains("token")),
            "no token in any request line"
        );
        let after = messages(&c).await;
        assert_eq!(after[..shown.len()], shown[..]);
        let missed: Vec<(&str, &str)> = after[shown.len()..]
            .iter()
            .map(|m| (m.1.as_str(), m.2.as_str()))
            .collect();
        assert_eq!(
            missed,
            [("@user", "while you were away"), ("@keeper", "Hello from the keeper.")]
        );
        let shown = after;

        // Closed elsewhere: the page says so; resumed from the page, everything is there once.
        let closed = reqwest::Client::new()
            .post(format!("{}/api/v1/sessions/{id}/close", s.url))
            .bearer_auth(&s.token)
            .send()
            .await
            .unwrap();
        assert_eq!(closed.status(), 200);
        until(
            &c,
            "the page to see the floor closed",
            20,
            "return document.getElementById('floor-state').dataset.state === 'closed'\
               && document.getElementById('message').disabled",
        )
        .await;
        let resume = c.find(Locator::Id("resume")).await.unwrap();
        assert!(resume.is_displayed().await.unwrap());
        resume.click().await.unwrap();
        until(
            &c,
            "the resumed session, waiting for the user",
            60,
            "return document.getElementById('floor-state').dataset.state === 'waiting'\
               && !document.getElementById('message').disabled",
        )
        .await;
        until(
            &c,
            "the conversation read again",
            20,
            &format!("return document.querySelectorAll('#log li.msg[data-id]').length === {}", shown.len()),
        )
        .await;
        assert_eq!(messages(&c).await, shown);

        // The picker lists the session, live.
        c.find(Locator::Css("a#back")).await.unwrap().click().await.unwrap();
        until(
            &c,
            "the session in the picker",
            20,
            &format!("return !!document.querySelector('#sessions li[data-id=\"{id}\"] .live')"),
        )
        .await;
        shoot_and_audit(&c, "serve-picker", &axe).await;

        // No CSP violation on the way…
        let seen = console(&driver, &c).await;
        let violations = csp_violations(&seen);
        assert!(violations.is_empty(), "{violations:#?}");
        // …and one is caught when there is one: an inline script is refused, and said so.
        c.execute(
            "const s = document.createElement('script'); s.textContent = 'window.ran = 1'; \
             document.body.append(s);",
            vec![],
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            c.execute("return window.ran === undefined", vec![]).await.unwrap(),
            Value::Bool(true),
            "the inline script did not run"
        );
        let seen = console(&driver, &c).await;
        assert!(!csp_violations(&seen).is_empty(), "{seen:#?}");
        c.close().await.unwrap();
    });
    // The model was asked five times: nothing was asked again for a reload or a reconnection.
    assert_eq!(model.requests().len(), 5);
}
