//! How values are written into and read from columns: JSON text for structured values,
//! RFC 3339 UTC text (millisecond precision) for times. Decoding failures are `Corrupt`.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

/// JSON text of `value`.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Corrupt(error.to_string()))
}

/// Parses JSON text from `column`.
pub(crate) fn from_json<T: DeserializeOwned>(column: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|error| StoreError::Corrupt(format!("{column}: {error}")))
}

/// Parses optional JSON text from `column`.
pub(crate) fn from_json_opt<T: DeserializeOwned>(
    column: &str,
    text: Option<String>,
) -> Result<Option<T>, StoreError> {
    text.map(|text| from_json(column, &text)).transpose()
}

/// A time as stored.
pub(crate) fn to_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses a stored time from `column`.
pub(crate) fn from_time(column: &str, text: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|error| StoreError::Corrupt(format!("{column}: {error}")))
}

/// Parses an optional stored time from `column`.
pub(crate) fn from_time_opt(
    column: &str,
    text: Option<String>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    text.map(|text| from_time(column, &text)).transpose()
}

/// Now, at the precision times are stored with (so round trips compare equal).
pub(crate) fn now() -> DateTime<Utc> {
    as_stored(Utc::now())
}

/// `at` at the precision times are stored with: cut to the millisecond, as [`to_time`] writes
/// it (without writing and parsing the text).
fn as_stored(at: DateTime<Utc>) -> DateTime<Utc> {
    at.trunc_subsecs(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let at = now();
        assert_eq!(from_time("t", &to_time(at)).unwrap(), at);
        // Cutting to the millisecond is what the text keeps, whatever the nanoseconds.
        for nanos in [0, 1, 999_999, 1_000_000, 123_456_789, 999_999_999] {
            let at = DateTime::from_timestamp(1_764_921_600, nanos).unwrap();
            assert_eq!(
                from_time("t", &to_time(at)).unwrap(),
                as_stored(at),
                "{nanos}"
            );
        }
        let cut = as_stored(DateTime::from_timestamp(1_764_921_600, 123_456_789).unwrap());
        assert_eq!(to_time(cut), "2025-12-05T08:00:00.123Z");
        assert!(
            matches!(from_time("t", "yesterday"), Err(StoreError::Corrupt(m)) if m.starts_with("t:"))
        );
        let value: Vec<u8> = from_json("c", &to_json(&vec![1u8, 2]).unwrap()).unwrap();
        assert_eq!(value, vec![1, 2]);
        assert!(from_json::<Vec<u8>>("c", "{").is_err());
        assert_eq!(from_json_opt::<u8>("c", None).unwrap(), None);
    }
}
