//! Protocol versions and the two eras they belong to.
//!
//! Legacy versions (2025-03-26 … 2025-11-25) negotiate once per session with `initialize`;
//! the modern version (2026-07-28) carries its version and capabilities in every request's
//! `_meta`. One [`ProtocolVersion`] value says which rules apply to a message.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A protocol version this SDK speaks.
///
/// Ordered by date, so `v >= ProtocolVersion::V2025_11_25` reads as "this version or later".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2025-03-26: Streamable HTTP, batches, tool annotations.
    V2025_03_26,
    /// 2025-06-18: no batches, structured tool output, elicitation, the version header.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, sampling with tools, tasks, SSE polling.
    V2025_11_25,
    /// 2026-07-28: the stateless redesign (per-request `_meta`, `server/discover`, MRTR).
    V2026_07_28,
}

/// Which lifecycle model a version follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// Session-based: `initialize` handshake, session state on the server.
    Legacy,
    /// Stateless: every request carries its own version and capabilities.
    Modern,
}

impl ProtocolVersion {
    /// Every version this SDK speaks, newest first.
    pub const ALL: [ProtocolVersion; 4] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
    ];
    /// The legacy (handshake) versions, newest first.
    pub const LEGACY: [ProtocolVersion; 3] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
    ];
    /// The newest version overall.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;
    /// The newest version negotiated through `initialize`.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
    /// What a server assumes when a legacy request carries no version header and no session
    /// says otherwise (the spec's rule).
    pub const DEFAULT_LEGACY: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The version's wire string, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for versions this SDK does not speak.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "2025-03-26" => Some(ProtocolVersion::V2025_03_26),
            "2025-06-18" => Some(ProtocolVersion::V2025_06_18),
            "2025-11-25" => Some(ProtocolVersion::V2025_11_25),
            "2026-07-28" => Some(ProtocolVersion::V2026_07_28),
            _ => None,
        }
    }

    /// The era this version belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// True for the stateless 2026-07-28 era.
    pub const fn is_modern(self) -> bool {
        matches!(self.era(), Era::Modern)
    }

    /// True where a POST body may be a JSON-RPC batch (2025-03-26 only).
    pub const fn allows_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// The version a server answers to an `initialize` that asked for `requested`: the same
    /// version when it is a legacy one we speak, else our newest legacy version.
    pub fn negotiate_legacy(requested: &str) -> ProtocolVersion {
        match ProtocolVersion::parse(requested) {
            Some(v) if !v.is_modern() => v,
            _ => ProtocolVersion::LATEST_LEGACY,
        }
    }

    /// True when a wire string looks like a version of the modern era or later (dates compare
    /// as strings), including future versions this SDK does not speak yet.
    pub fn looks_modern(s: &str) -> bool {
        s >= ProtocolVersion::V2026_07_28.as_str()
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a version this SDK does not speak.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unsupported protocol version {0:?}")]
pub struct UnsupportedVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnsupportedVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnsupportedVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        ProtocolVersion::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unsupported protocol version {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_era() {
        assert!(ProtocolVersion::V2025_03_26 < ProtocolVersion::V2025_11_25);
        assert!(ProtocolVersion::V2026_07_28.is_modern());
        assert!(!ProtocolVersion::V2025_11_25.is_modern());
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
    }

    #[test]
    fn negotiation_echoes_legacy_and_caps_modern() {
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2025-06-18"),
            ProtocolVersion::V2025_06_18
        );
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2026-07-28"),
            ProtocolVersion::V2025_11_25
        );
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2024-11-05"),
            ProtocolVersion::V2025_11_25
        );
        assert!(ProtocolVersion::looks_modern("2027-01-01"));
        assert!(!ProtocolVersion::looks_modern("2025-11-25"));
    }
}
