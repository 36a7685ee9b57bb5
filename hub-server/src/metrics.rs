//! Counters exposed in the Prometheus text format at `/metrics`: the requests of each route
//! group, counted here, and the core's own events ([`Counters`]).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hub_core::counters::Counters;

/// Which part of the hub a request went to: the `group` label of the request metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteGroup {
    /// The JSON API, `/api/v1/…`.
    Api,
    /// The OCI distribution API, `/v2/…`.
    Oci,
    /// The agent registry API, `/registry/…`.
    Registry,
    /// Everything else: `/healthz`, `/readyz`, `/metrics`, `/openapi.json`, unknown paths.
    Ops,
}

impl RouteGroup {
    const ALL: [RouteGroup; 4] = [Self::Api, Self::Oci, Self::Registry, Self::Ops];

    /// The group of a request path.
    pub fn of_path(path: &str) -> Self {
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under("/api/v1") {
            Self::Api
        } else if under("/v2") {
            Self::Oci
        } else if under("/registry") {
            Self::Registry
        } else {
            Self::Ops
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Oci => "oci",
            Self::Registry => "registry",
            Self::Ops => "ops",
        }
    }
}

/// Requests of one route group.
#[derive(Debug, Default)]
struct GroupCounters {
    by_class: [AtomicU64; 5],
    duration_micros: AtomicU64,
}

/// The search followers' lag, in outbox events, for `/metrics`.
#[derive(Debug, Clone, Copy)]
pub struct SearchLag {
    /// The keyword index's follower.
    pub keyword: u64,
    /// The embedding follower's; `None` without a model.
    pub embedding: Option<u64>,
}

/// Process-wide request counters.
#[derive(Debug, Default)]
pub struct Metrics {
    groups: [GroupCounters; 4],
}

impl Metrics {
    /// Records a finished request of `group`.
    pub fn request(&self, group: RouteGroup, status: u16, took: Duration) {
        let g = &self.groups[group as usize];
        let class = (status / 100).clamp(1, 5) as usize - 1;
        g.by_class[class].fetch_add(1, Ordering::Relaxed);
        g.duration_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
    /// The Prometheus text exposition, with the core's `counters` and, when search is on, its
    /// followers' lag.
    pub fn render(&self, backend: &str, counters: &Counters, search: Option<SearchLag>) -> String {
        let mut s = String::new();
        s.push_str(
            "# HELP ofc_hub_http_requests_total HTTP requests by route group (api: /api/v1, oci: /v2, registry: /registry, ops: the rest) and status class.\n",
        );
        s.push_str("# TYPE ofc_hub_http_requests_total counter\n");
        for group in RouteGroup::ALL {
            let g = &self.groups[group as usize];
            for (i, c) in g.by_class.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "ofc_hub_http_requests_total{{group=\"{}\",status=\"{}xx\"}} {}",
                    group.as_str(),
                    i + 1,
                    c.load(Ordering::Relaxed)
                );
            }
        }
        s.push_str(
            "# HELP ofc_hub_http_request_duration_seconds Time spent answering requests (until the response head), by route group.\n",
        );
        s.push_str("# TYPE ofc_hub_http_request_duration_seconds summary\n");
        for group in RouteGroup::ALL {
            let g = &self.groups[group as usize];
            let count: u64 = g.by_class.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            let _ = writeln!(
                s,
                "ofc_hub_http_request_duration_seconds_sum{{group=\"{}\"}} {}",
                group.as_str(),
                g.duration_micros.load(Ordering::Relaxed) as f64 / 1e6
            );
            let _ = writeln!(
                s,
                "ofc_hub_http_request_duration_seconds_count{{group=\"{}\"}} {count}",
                group.as_str()
            );
        }
        for (name, help, v) in [
            (
                "ofc_hub_publishes_total",
                "Versions published.",
                counters.publishes(),
            ),
            (
                "ofc_hub_publish_refusals_total",
                "Publishes refused.",
                counters.publish_refusals(),
            ),
            (
                "ofc_hub_mirror_tags_repaired_total",
                "Agent versions' tags the repair pass made again in the upstream registry.",
                counters.mirror_tags_repaired(),
            ),
            (
                "ofc_hub_auth_failures_total",
                "Failed authentications.",
                counters.auth_failures(),
            ),
        ] {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
            let _ = writeln!(s, "{name} {v}");
        }
        let _ = writeln!(
            s,
            "# HELP ofc_hub_cosigner 1 when this replica is the one submitting the log's heads to the witnesses.\n# TYPE ofc_hub_cosigner gauge\nofc_hub_cosigner {}",
            u8::from(counters.cosigning())
        );
        if let Some(lag) = search {
            let _ = writeln!(
                s,
                "# HELP ofc_hub_search_lag_events Outbox events a search follower has not applied yet: keyword (the index) or embedding (the agents' vectors, with an embedding model).\n# TYPE ofc_hub_search_lag_events gauge\nofc_hub_search_lag_events{{follower=\"keyword\"}} {}",
                lag.keyword
            );
            if let Some(e) = lag.embedding {
                let _ = writeln!(s, "ofc_hub_search_lag_events{{follower=\"embedding\"}} {e}");
            }
            let _ = writeln!(
                s,
                "# HELP ofc_hub_search_model 1 when the hub has an embedding model (search_model_dir): text queries are hybrid by default.\n# TYPE ofc_hub_search_model gauge\nofc_hub_search_model {}",
                u8::from(lag.embedding.is_some())
            );
        }
        let _ = writeln!(
            s,
            "# HELP ofc_hub_info Build and backend.\n# TYPE ofc_hub_info gauge\nofc_hub_info{{version=\"{}\",backend=\"{backend}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hub_core::counters::Counters;

    use super::{Metrics, RouteGroup, SearchLag};

    #[test]
    fn paths_fall_in_their_group() {
        for (path, group) in [
            ("/api/v1/agents", RouteGroup::Api),
            ("/api/v1", RouteGroup::Api),
            ("/api/v10", RouteGroup::Ops),
            ("/v2/", RouteGroup::Oci),
            ("/v2", RouteGroup::Oci),
            ("/v2/token", RouteGroup::Oci),
            ("/v20", RouteGroup::Ops),
            ("/registry/agents/x", RouteGroup::Registry),
            ("/metrics", RouteGroup::Ops),
            ("/", RouteGroup::Ops),
        ] {
            assert_eq!(RouteGroup::of_path(path), group, "{path}");
        }
    }

    #[test]
    fn requests_are_rendered_by_group_and_status_class() {
        let m = Metrics::default();
        m.request(RouteGroup::Oci, 201, Duration::from_millis(2));
        m.request(RouteGroup::Oci, 404, Duration::from_millis(1));
        m.request(RouteGroup::Api, 200, Duration::from_millis(1));
        let text = m.render("sqlite", &Counters::default(), None);
        for line in [
            "ofc_hub_http_requests_total{group=\"oci\",status=\"2xx\"} 1",
            "ofc_hub_http_requests_total{group=\"oci\",status=\"4xx\"} 1",
            "ofc_hub_http_requests_total{group=\"api\",status=\"2xx\"} 1",
            "ofc_hub_http_requests_total{group=\"registry\",status=\"2xx\"} 0",
            "ofc_hub_http_request_duration_seconds_count{group=\"oci\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
        assert!(!text.contains("ofc_hub_search"), "{text}");
    }

    #[test]
    fn search_lag_is_a_gauge_per_follower() {
        let m = Metrics::default();
        let lag = |keyword, embedding| SearchLag { keyword, embedding };
        let text = m.render("sqlite", &Counters::default(), Some(lag(3, Some(7))));
        for line in [
            "# TYPE ofc_hub_search_lag_events gauge",
            "ofc_hub_search_lag_events{follower=\"keyword\"} 3",
            "ofc_hub_search_lag_events{follower=\"embedding\"} 7",
            "ofc_hub_search_model 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
        // Without a model: the keyword follower's only.
        let text = m.render("sqlite", &Counters::default(), Some(lag(0, None)));
        assert!(text.contains("ofc_hub_search_lag_events{follower=\"keyword\"} 0\n"));
        assert!(!text.contains("follower=\"embedding\""), "{text}");
        assert!(
            text.lines().any(|l| l == "ofc_hub_search_model 0"),
            "{text}"
        );
    }
}
