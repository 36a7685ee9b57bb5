//! RFC 3339 timestamps without a date-time library: the protocol only moves them around and
//! checks that a signed request is recent, so validation and conversion to Unix seconds suffice.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An RFC 3339 `date-time` (`2024-01-15T10:30:00Z`, `2024-01-15T10:30:00.250+01:00`), validated
/// when parsed and kept as the exact text that was received, so it serializes back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timestamp {
    text: String,
    unix_seconds: i64,
}

/// Why a text is not an RFC 3339 `date-time`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid RFC 3339 timestamp `{text}`: {reason}")]
pub struct TimestampError {
    text: String,
    reason: &'static str,
}

impl Timestamp {
    /// Parses and validates RFC 3339 text (section 5.6 `date-time`; `T` and `Z` in either case).
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        let err = |reason| TimestampError {
            text: text.to_string(),
            reason,
        };
        let b = text.as_bytes();
        if b.len() < 20 {
            return Err(err("too short for YYYY-MM-DDTHH:MM:SSZ"));
        }
        let year = digits(b, 0, 4).ok_or_else(|| err("year is not four digits"))?;
        let month = sep_digits(b, 4, b'-').ok_or_else(|| err("expected `-MM` after the year"))?;
        let day = sep_digits(b, 7, b'-').ok_or_else(|| err("expected `-DD` after the month"))?;
        if !matches!(b[10], b'T' | b't') {
            return Err(err("expected `T` between date and time"));
        }
        let hour = digits(b, 11, 2).ok_or_else(|| err("hour is not two digits"))?;
        let minute = sep_digits(b, 13, b':').ok_or_else(|| err("expected `:MM` after the hour"))?;
        let second =
            sep_digits(b, 16, b':').ok_or_else(|| err("expected `:SS` after the minutes"))?;
        if !(1..=12).contains(&month) {
            return Err(err("month out of range"));
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err(err("day out of range for the month"));
        }
        if hour > 23 || minute > 59 || second > 60 {
            return Err(err("time of day out of range"));
        }
        let mut i = 19;
        if b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return Err(err("expected digits after the decimal point"));
            }
        }
        let offset_seconds = match b.get(i) {
            Some(b'Z' | b'z') if i + 1 == b.len() => 0,
            Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() => {
                let oh = digits(b, i + 1, 2).ok_or_else(|| err("offset hour is not two digits"))?;
                let om = sep_digits(b, i + 3, b':')
                    .ok_or_else(|| err("expected `:MM` in the offset"))?;
                if oh > 23 || om > 59 {
                    return Err(err("offset out of range"));
                }
                let o = i64::from(oh * 3600 + om * 60);
                if sign == b'-' { -o } else { o }
            }
            _ => return Err(err("expected `Z` or a `+HH:MM`/`-HH:MM` offset at the end")),
        };
        let unix_seconds = days_from_civil(i64::from(year), month, day) * 86_400
            + i64::from(hour * 3600 + minute * 60 + second)
            - offset_seconds;
        Ok(Self {
            text: text.to_string(),
            unix_seconds,
        })
    }

    /// The UTC timestamp (`…Z`, whole seconds) of a number of seconds since the Unix epoch.
    /// Fails outside years 0000–9999, which RFC 3339 cannot write.
    pub fn from_unix_seconds(secs: i64) -> Result<Self, TimestampError> {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        if !(0..=9999).contains(&y) {
            return Err(TimestampError {
                text: secs.to_string(),
                reason: "year outside 0000-9999",
            });
        }
        let text = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        );
        Ok(Self {
            text,
            unix_seconds: secs,
        })
    }

    /// The text as received.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Seconds since the Unix epoch (fractions of a second dropped; a leap second `:60` counts
    /// as the first second of the next minute). For replay windows on signed requests.
    pub fn unix_seconds(&self) -> i64 {
        self.unix_seconds
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
}

fn sep_digits(b: &[u8], at: usize, sep: u8) -> Option<u32> {
    if *b.get(at)? != sep {
        return None;
    }
    digits(b, at + 1, 2)
}

fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rfc3339_forms() {
        for ok in [
            "2024-01-15T10:30:00Z",
            "2024-01-15t10:30:00z",
            "2024-01-15T10:30:00.123456Z",
            "2024-01-15T11:30:00+01:00",
            "2024-02-29T00:00:00-00:00",
            "2016-12-31T23:59:60Z",
        ] {
            Timestamp::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn refuses_non_rfc3339() {
        for bad in [
            "",
            "2024-01-15",
            "2024-01-15 10:30:00Z",
            "2024-01-15T10:30:00",
            "2024-01-15T10:30Z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-15T24:00:00Z",
            "2024-01-15T10:30:00.Z",
            "2024-01-15T10:30:00+0100",
            "2024-01-15T10:30:00Z ",
            "1705314600",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn unix_seconds_respect_offsets() {
        let z = Timestamp::parse("2024-01-15T10:30:00Z").unwrap();
        assert_eq!(z.unix_seconds(), 1_705_314_600);
        let plus = Timestamp::parse("2024-01-15T11:30:00.9+01:00").unwrap();
        assert_eq!(plus.unix_seconds(), z.unix_seconds());
        assert_eq!(
            Timestamp::parse("1969-12-31T23:59:59Z")
                .unwrap()
                .unix_seconds(),
            -1
        );
    }

    #[test]
    fn from_unix_seconds_round_trips() {
        for secs in [0, -1, 951_782_400, 1_705_314_600, 253_402_300_799] {
            let t = Timestamp::from_unix_seconds(secs).unwrap();
            assert_eq!(
                Timestamp::parse(t.as_str()).unwrap().unix_seconds(),
                secs,
                "{t}"
            );
        }
        assert_eq!(
            Timestamp::from_unix_seconds(1_705_314_600)
                .unwrap()
                .as_str(),
            "2024-01-15T10:30:00Z"
        );
        assert!(Timestamp::from_unix_seconds(253_402_300_800).is_err());
    }
}
