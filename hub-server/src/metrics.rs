//! Counters exposed in the Prometheus text format at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Process-wide counters.
#[derive(Debug, Default)]
pub struct Metrics {
    by_class: [AtomicU64; 5],
    duration_micros: AtomicU64,
    publishes: AtomicU64,
    publish_refusals: AtomicU64,
    auth_failures: AtomicU64,
}

impl Metrics {
    /// Records a finished request.
    pub fn request(&self, status: u16, took: Duration) {
        let class = (status / 100).clamp(1, 5) as usize - 1;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.duration_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
    /// Records a stored publish.
    pub fn publish(&self) {
        self.publishes.fetch_add(1, Ordering::Relaxed);
    }
    /// Records a refused publish.
    pub fn publish_refused(&self) {
        self.publish_refusals.fetch_add(1, Ordering::Relaxed);
    }
    /// Records a failed authentication.
    pub fn auth_failure(&self) {
        self.auth_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self, backend: &str) -> String {
        let mut s = String::new();
        let total: u64 = self
            .by_class
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        s.push_str("# HELP ofc_hub_http_requests_total HTTP requests by status class.\n");
        s.push_str("# TYPE ofc_hub_http_requests_total counter\n");
        for (i, c) in self.by_class.iter().enumerate() {
            let _ = writeln!(
                s,
                "ofc_hub_http_requests_total{{status=\"{}xx\"}} {}",
                i + 1,
                c.load(Ordering::Relaxed)
            );
        }
        s.push_str("# HELP ofc_hub_http_request_duration_seconds Time spent answering requests.\n");
        s.push_str("# TYPE ofc_hub_http_request_duration_seconds summary\n");
        let _ = writeln!(
            s,
            "ofc_hub_http_request_duration_seconds_sum {}",
            self.duration_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(s, "ofc_hub_http_request_duration_seconds_count {total}");
        for (name, help, v) in [
            (
                "ofc_hub_publishes_total",
                "Versions published.",
                &self.publishes,
            ),
            (
                "ofc_hub_publish_refusals_total",
                "Publishes refused.",
                &self.publish_refusals,
            ),
            (
                "ofc_hub_auth_failures_total",
                "Failed authentications.",
                &self.auth_failures,
            ),
        ] {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
            let _ = writeln!(s, "{name} {}", v.load(Ordering::Relaxed));
        }
        let _ = writeln!(
            s,
            "# HELP ofc_hub_info Build and backend.\n# TYPE ofc_hub_info gauge\nofc_hub_info{{version=\"{}\",backend=\"{backend}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        s
    }
}
