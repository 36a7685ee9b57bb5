//! A floor under download speed. A per-read timeout does not stop a peer that sends one byte
//! every few seconds (issue 13, point 16: a hub trickling a bundle kept `ofc pull` alive for
//! ever); [`RateFloor`] measures what arrived in each window and gives up when it is less than
//! the minimum rate allows.
//!
//! Defaults: at least 1024 bytes/s over 30-second windows. `OFC_MIN_DOWNLOAD_RATE` (bytes per
//! second, 0 turns the floor off) and `OFC_DOWNLOAD_RATE_WINDOW` (seconds) change them.

use std::time::Duration;

use anyhow::Result;
use tokio::time::Instant;

use crate::output::UserError;

/// Environment variable: the minimum download rate in bytes per second (0: no floor).
pub const MIN_RATE_ENV: &str = "OFC_MIN_DOWNLOAD_RATE";
/// Environment variable: the window the rate is measured over, in seconds.
pub const RATE_WINDOW_ENV: &str = "OFC_DOWNLOAD_RATE_WINDOW";

const DEFAULT_MIN_RATE: u64 = 1024;
const DEFAULT_WINDOW: Duration = Duration::from_secs(30);

/// Why a download stopped.
#[derive(Debug)]
pub enum Stalled<E> {
    /// The transfer itself failed.
    Transport(E),
    /// Fewer bytes than the floor allows arrived in a whole window.
    TooSlow {
        /// Bytes that arrived in the window.
        got: u64,
        /// The window.
        window: Duration,
        /// The minimum, bytes per second.
        min_rate: u64,
    },
}

/// Measures a download against a minimum rate.
#[derive(Debug, Clone)]
pub struct RateFloor {
    min_rate: u64,
    window: Duration,
    start: Instant,
    got: u64,
}

impl RateFloor {
    /// A floor of `min_rate` bytes per second over `window`, starting now.
    pub fn new(min_rate: u64, window: Duration) -> Self {
        RateFloor {
            min_rate,
            window: window.max(Duration::from_millis(100)),
            start: Instant::now(),
            got: 0,
        }
    }

    /// The floor the environment sets (see the module documentation).
    pub fn from_env() -> Result<Self> {
        let read = |var: &str| -> Result<Option<u64>> {
            match std::env::var(var) {
                Ok(v) if !v.is_empty() => v.trim().parse::<u64>().map(Some).map_err(|_| {
                    UserError::new(format!("{var} must be a whole number, not `{v}`")).into()
                }),
                _ => Ok(None),
            }
        };
        let min_rate = read(MIN_RATE_ENV)?.unwrap_or(DEFAULT_MIN_RATE);
        let window = read(RATE_WINDOW_ENV)?
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_WINDOW);
        Ok(Self::new(min_rate, window))
    }

    fn needed(&self) -> u64 {
        let ms = u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX);
        self.min_rate.saturating_mul(ms) / 1000
    }

    /// Closes the windows that have passed: an error if one of them got too little.
    fn check(&mut self, now: Instant) -> Result<(), (u64, Duration)> {
        if self.min_rate == 0 {
            return Ok(());
        }
        if now >= self.start + self.window {
            if self.got < self.needed() {
                return Err((self.got, self.window));
            }
            self.start = now;
            self.got = 0;
        }
        Ok(())
    }

    /// The next piece of `next` (a chunk reader such as `reqwest::Response::chunk`), or the
    /// reason the download must stop.
    pub async fn next<T: AsRef<[u8]>, E, F>(&mut self, next: F) -> Result<Option<T>, Stalled<E>>
    where
        F: Future<Output = Result<Option<T>, E>>,
    {
        let min_rate = self.min_rate;
        let too_slow = move |(got, window)| Stalled::TooSlow {
            got,
            window,
            min_rate,
        };
        tokio::pin!(next);
        loop {
            let piece = if self.min_rate == 0 {
                next.as_mut().await
            } else {
                match tokio::time::timeout_at(self.start + self.window, next.as_mut()).await {
                    Ok(piece) => piece,
                    Err(_) => {
                        self.check(Instant::now()).map_err(too_slow)?;
                        continue;
                    }
                }
            };
            return match piece {
                Ok(Some(p)) => {
                    self.got = self.got.saturating_add(p.as_ref().len() as u64);
                    self.check(Instant::now()).map_err(too_slow)?;
                    Ok(Some(p))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(Stalled::Transport(e)),
            };
        }
    }
}

impl<E> Stalled<E> {
    /// The too-slow case as a user error naming `what` and the hub; transport errors through
    /// `transport`.
    pub fn into_error(
        self,
        what: &str,
        transport: impl FnOnce(E) -> anyhow::Error,
    ) -> anyhow::Error {
        match self {
            Stalled::Transport(e) => transport(e),
            Stalled::TooSlow {
                got,
                window,
                min_rate,
            } => UserError::new(format!(
                "{what} arrived at {} bytes/s over the last {} s, below the minimum of {min_rate} bytes/s; gave up, nothing was installed",
                got / window.as_secs().max(1),
                window.as_secs()
            ))
            .hint(format!(
                "the hub or a proxy is stalling the download; retry later, or lower {MIN_RATE_ENV} (0 turns the floor off)"
            ))
            .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_trickle_is_cut_off_after_a_window_and_a_steady_stream_is_not() {
        // 1 byte every 10 s against 1024 bytes/s over 30 s windows.
        let mut floor = RateFloor::new(1024, Duration::from_secs(30));
        let mut sent = 0;
        let outcome = loop {
            let r = floor
                .next(async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    Ok::<_, ()>(Some(vec![0u8]))
                })
                .await;
            match r {
                Ok(_) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 10, "never cut off");
        };
        assert!(
            matches!(outcome, Stalled::TooSlow { got, .. } if got <= 3),
            "{outcome:?}"
        );

        // A silent peer is cut off at the end of the window, not left waiting.
        let mut floor = RateFloor::new(1024, Duration::from_secs(30));
        let start = Instant::now();
        let r = floor
            .next(std::future::pending::<Result<Option<Vec<u8>>, ()>>())
            .await;
        assert!(matches!(r, Err(Stalled::TooSlow { got: 0, .. })));
        assert_eq!(start.elapsed(), Duration::from_secs(30));

        // 64 KiB every second passes window after window, then the end.
        let mut floor = RateFloor::new(1024, Duration::from_secs(30));
        for _ in 0..100 {
            let r = floor
                .next(async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok::<_, ()>(Some(vec![0u8; 64 * 1024]))
                })
                .await;
            assert!(r.is_ok());
        }
        let end = floor.next(async { Ok::<Option<Vec<u8>>, ()>(None) }).await;
        assert!(matches!(end, Ok(None)));

        // 0 turns the floor off.
        let mut floor = RateFloor::new(0, Duration::from_secs(1));
        let r = floor
            .next(async {
                tokio::time::sleep(Duration::from_secs(100)).await;
                Ok::<_, ()>(Some(vec![0u8]))
            })
            .await;
        assert!(r.is_ok());
    }
}
