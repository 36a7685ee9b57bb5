//! Behind a load balancer (`trusted_proxies`): the failure limiter keys on the client that
//! `X-Forwarded-For` names when the connection comes from a trusted proxy, and on the
//! connection's address otherwise — so one client behind the balancer cannot lock out the
//! others, and a client that is not the balancer cannot pick its own address.

use std::net::IpAddr;

use hub_core::proxies::ProxyNet;
use ofc_test_kit::{Backend, TestHub};

/// The statuses of `n` requests with a wrong token to `/api/v1/me`, each with these
/// `X-Forwarded-For` values.
async fn wrong_tokens(app: &TestHub, from: [u8; 4], forwarded: &[&str], n: usize) -> Vec<u16> {
    let client = reqwest::Client::builder()
        .local_address(IpAddr::from(from))
        .build()
        .unwrap();
    let mut statuses = Vec::new();
    for i in 0..n {
        let mut req = client
            .get(app.url("/api/v1/me"))
            .bearer_auth(format!("ofc_wrong_{i}"));
        for f in forwarded {
            req = req.header("x-forwarded-for", *f);
        }
        statuses.push(req.send().await.unwrap().status().as_u16());
    }
    statuses
}

#[tokio::test]
async fn the_limiter_keys_on_the_client_a_trusted_proxy_names() {
    let proxy: ProxyNet = ProxyNet::try_from("127.0.0.5".to_string()).unwrap();
    let app = TestHub::in_process_with(Backend::Sqlite, |c| {
        c.auth_failure_limit = 3;
        c.trusted_proxies = vec![proxy];
    })
    .await;

    // Client A through the balancer (127.0.0.5): three failures, then refused.
    let a = wrong_tokens(&app, [127, 0, 0, 5], &["203.0.113.1"], 4).await;
    assert_eq!(a, [401, 401, 401, 429]);
    // Client B through the same balancer is not locked out by A.
    let b = wrong_tokens(&app, [127, 0, 0, 5], &["203.0.113.2"], 1).await;
    assert_eq!(b, [401]);
    // A cannot get a fresh count by writing another address left of the balancer's entry.
    let forged = wrong_tokens(&app, [127, 0, 0, 5], &["198.51.100.7, 203.0.113.1"], 1).await;
    assert_eq!(forged, [429]);
    // A machine that is not the balancer cannot choose its address: its header is ignored,
    // and its own address is counted.
    let direct = wrong_tokens(&app, [127, 0, 0, 6], &["203.0.113.3"], 4).await;
    assert_eq!(direct, [401, 401, 401, 429]);
    let same_machine = wrong_tokens(&app, [127, 0, 0, 6], &["203.0.113.4"], 1).await;
    assert_eq!(same_machine, [429]);
}

#[tokio::test]
async fn without_trusted_proxies_the_header_is_ignored() {
    let app = TestHub::in_process_with(Backend::Sqlite, |c| c.auth_failure_limit = 3).await;
    let a = wrong_tokens(&app, [127, 0, 0, 7], &["203.0.113.1"], 4).await;
    assert_eq!(a, [401, 401, 401, 429]);
    // Another claimed client from the same connection address is the same client.
    let b = wrong_tokens(&app, [127, 0, 0, 7], &["203.0.113.2"], 1).await;
    assert_eq!(b, [429]);
}
