//! `ByteSize`: a size in bytes written either as an integer or as `"10MiB"`, `"512 KiB"`, `"1GB"`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number of bytes, readable in config files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

const UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
];

impl ByteSize {
    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        Self(n << 20)
    }

    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `"10MiB"`, `"10 MiB"`, `"512kb"`, `"42"`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("`{text}` is not a size; write e.g. 10485760 or \"10MiB\""))?;
        let unit = unit.trim().to_ascii_lowercase();
        let multiplier = if unit.is_empty() {
            1
        } else {
            UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, multiplier)| *multiplier)
                .ok_or_else(|| {
                    format!(
                        "unknown size unit `{unit}` in `{text}`; use B, KB, MB, GB, KiB, MiB or GiB"
                    )
                })?
        };
        number
            .checked_mul(multiplier)
            .map(Self)
            .ok_or_else(|| format!("`{text}` is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, multiplier) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if self.0 >= multiplier && self.0.is_multiple_of(multiplier) {
                return write!(f, "{}{name}", self.0 / multiplier);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer) {
            Ok(Raw::Number(bytes)) => Ok(Self(bytes)),
            Ok(Raw::Text(text)) => Self::parse(&text).map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "expected a size: a number of bytes or a string such as \"10MiB\"",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_spaces() {
        assert_eq!(ByteSize::parse("42").unwrap(), ByteSize(42));
        assert_eq!(ByteSize::parse("10MiB").unwrap(), ByteSize(10 << 20));
        assert_eq!(ByteSize::parse("10 mib").unwrap(), ByteSize(10 << 20));
        assert_eq!(ByteSize::parse("2KB").unwrap(), ByteSize(2000));
        assert_eq!(ByteSize::parse("1GiB").unwrap(), ByteSize(1 << 30));
    }

    #[test]
    fn rejects_garbage() {
        assert!(ByteSize::parse("ten").is_err());
        assert!(
            ByteSize::parse("10 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(ByteSize::parse("99999999999999999999GiB").is_err());
        assert!(
            ByteSize::parse("18446744073709551615GiB")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn display_round_trips() {
        for size in [
            ByteSize(10 << 20),
            ByteSize(1500),
            ByteSize(4096),
            ByteSize(3 << 30),
        ] {
            assert_eq!(ByteSize::parse(&size.to_string()).unwrap(), size);
        }
        assert_eq!(ByteSize::mib(10).to_string(), "10MiB");
    }
}
