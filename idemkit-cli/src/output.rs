//! How values are written for people: durations, instants as UTC times, byte counts;
//! and for scripts: JSON documents and base64.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::failure::Failure;

/// A duration as a person reads it: `350ms`, `12.3s`, `4m 10s`, `3h 2m`, `2d 5h`.
pub fn duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1_000 {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    if seconds < 60 {
        return format!("{:.1}s", duration.as_secs_f64());
    }
    let (days, hours, minutes, seconds) = (
        seconds / 86_400,
        seconds / 3_600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    if days > 0 {
        format!("{days}d {hours}h")
    } else if hours > 0 {
        format!("{hours}h {minutes}m")
    } else {
        format!("{minutes}m {seconds}s")
    }
}

/// A byte count as a person reads it: `512 B`, `48.2 KiB`, `3.1 MiB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if count < 1024 {
        return format!("{count} B");
    }
    let mut value = count as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Reads instants of the monotonic clock as wall-clock times: both clocks are read once,
/// and every instant is placed by its distance from that reading.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    instant: Instant,
    wall: SystemTime,
}

impl WallClock {
    /// A reading taken at `instant` (the backend's now).
    pub fn at(instant: Instant) -> WallClock {
        WallClock {
            instant,
            wall: SystemTime::now(),
        }
    }

    /// The wall-clock time of `instant`.
    pub fn wall(&self, instant: Instant) -> SystemTime {
        if instant >= self.instant {
            self.wall + (instant - self.instant)
        } else {
            self.wall - (self.instant - instant)
        }
    }

    /// `instant` as an RFC 3339 UTC time.
    pub fn rfc3339(&self, instant: Instant) -> String {
        rfc3339(self.wall(instant))
    }
}

/// `time` as an RFC 3339 UTC time with milliseconds, `2026-12-05T06:30:00.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01: the year, month and day.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Count in 400-year eras starting on 0000-03-01, so that leap days fall at the end
    // of each year of the count.
    let days = days + 719_468;
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// `data` in standard base64, with padding.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let bits = chunk.iter().enumerate().fold(0u32, |bits, (index, byte)| {
            bits | u32::from(*byte) << (16 - 8 * index)
        });
        for index in 0..4 {
            if index <= chunk.len() {
                let sextet = (bits >> (18 - 6 * index)) & 0x3f;
                text.push(char::from(ALPHABET[sextet as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Prints `value` as one pretty JSON document on standard output.
pub fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| Failure::usage(format!("cannot write JSON: {error}")))?;
    println!("{text}");
    Ok(())
}

/// A failure, as `--json` prints it on standard output.
#[derive(Serialize)]
pub struct JsonFailure<'a> {
    pub error: &'a str,
    pub remedy: Option<&'a str>,
    pub exit_code: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(350)), "350ms");
        assert_eq!(duration(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(duration(Duration::from_secs(250)), "4m 10s");
        assert_eq!(duration(Duration::from_secs(3 * 3600 + 125)), "3h 2m");
        assert_eq!(
            duration(Duration::from_secs(2 * 86_400 + 5 * 3600)),
            "2d 5h"
        );
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(49_357), "48.2 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 + 200 * 1024), "3.2 MiB");
    }

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century year) 12:34:56.789.
        let leap = UNIX_EPOCH + Duration::from_millis(951_827_696_789);
        assert_eq!(rfc3339(leap), "2000-02-29T12:34:56.789Z");
        let later = UNIX_EPOCH + Duration::from_secs(1_796_455_800);
        assert_eq!(rfc3339(later), "2026-12-05T07:30:00.000Z");
    }

    #[test]
    fn instants_become_wall_times_by_their_distance() {
        let now = Instant::now();
        let clock = WallClock::at(now);
        let later = clock.wall(now + Duration::from_secs(90));
        let earlier = clock.wall(now - Duration::from_millis(1));
        assert_eq!(
            later.duration_since(clock.wall).unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            clock.wall.duration_since(earlier).unwrap(),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn base64_is_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0x00, 0x10]), "/wAQ");
    }
}
