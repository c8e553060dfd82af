//! [`ProtocolVersions`]: the set of protocol versions a server accepts (all of them by
//! default), what a legacy `initialize` negotiates within, and what a refusal lists.

use std::fmt;
use std::str::FromStr;

use super::version::ProtocolVersion;
use crate::config_error::{ConfigError, Kind};

/// The protocol versions a server accepts, like the Go SDK's `SupportedProtocolVersions`:
/// a 2026-07-28 request when 2026-07-28 is not among them is refused (-32022, listing
/// these), and a legacy `initialize` negotiates within them.
///
/// ```
/// use vellum::protocol::{ProtocolVersion, ProtocolVersions};
///
/// let v: ProtocolVersions = "2026-07-28,2025-11-25".parse()?;
/// assert!(v.contains(ProtocolVersion::V2026_07_28));
/// assert!(!v.contains(ProtocolVersion::V2025_06_18));
/// // A legacy client asking for 2025-06-18 gets the newest legacy version of the set.
/// assert_eq!(v.negotiate_legacy("2025-06-18"), Some(ProtocolVersion::V2025_11_25));
/// assert_eq!(v.to_string(), "2026-07-28,2025-11-25");
/// # Ok::<(), vellum::error::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtocolVersions {
    /// One bit per version, by its place in [`ProtocolVersion::ALL`].
    bits: u8,
}

impl ProtocolVersions {
    /// Every version this SDK speaks (the default).
    pub const ALL: ProtocolVersions = ProtocolVersions {
        bits: (1 << ProtocolVersion::ALL.len()) - 1,
    };

    fn bit(v: ProtocolVersion) -> u8 {
        let place = ProtocolVersion::ALL.iter().position(|x| *x == v);
        place.map_or(0, |i| 1 << i)
    }

    /// The set of `versions`; a [`ConfigError`] when there are none.
    pub fn new(versions: impl IntoIterator<Item = ProtocolVersion>) -> Result<Self, ConfigError> {
        let bits = versions.into_iter().fold(0, |b, v| b | Self::bit(v));
        if bits == 0 {
            return Err(Kind::NoVersions.into());
        }
        Ok(ProtocolVersions { bits })
    }

    /// Whether `v` is accepted.
    pub fn contains(self, v: ProtocolVersion) -> bool {
        self.bits & Self::bit(v) != 0
    }

    /// The versions, newest first.
    pub fn iter(self) -> impl Iterator<Item = ProtocolVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .filter(move |v| self.contains(*v))
    }

    /// The version an `initialize` asking for `requested` gets: `requested` when it is a
    /// legacy version of the set, else the newest legacy version of the set; `None` when
    /// the set has no legacy version (the `initialize` is refused).
    pub fn negotiate_legacy(self, requested: &str) -> Option<ProtocolVersion> {
        match ProtocolVersion::parse(requested) {
            Some(v) if !v.is_modern() && self.contains(v) => Some(v),
            _ => self.iter().find(|v| !v.is_modern()),
        }
    }

    /// The wire strings, newest first (what a refusal's `supported` lists).
    pub fn wire_names(self) -> Vec<&'static str> {
        self.iter().map(ProtocolVersion::as_str).collect()
    }
}

impl Default for ProtocolVersions {
    fn default() -> Self {
        ProtocolVersions::ALL
    }
}

impl fmt::Display for ProtocolVersions {
    /// Comma-separated, newest first: the form [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.wire_names().join(","))
    }
}

impl fmt::Debug for ProtocolVersions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.wire_names()).finish()
    }
}

impl FromStr for ProtocolVersions {
    type Err = ConfigError;

    /// A comma-separated list (`2026-07-28,2025-11-25`; spaces around entries allowed).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let versions = s
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| {
                ProtocolVersion::parse(v).ok_or_else(|| {
                    ConfigError::from(Kind::UnknownVersion {
                        version: v.into(),
                        known: ProtocolVersions::ALL.to_string(),
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        ProtocolVersions::new(versions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_stays_within_the_set() {
        let all = ProtocolVersions::ALL;
        assert_eq!(all.wire_names(), ProtocolVersion::ALL.map(|v| v.as_str()));
        assert_eq!(
            all.negotiate_legacy("2025-06-18"),
            Some(ProtocolVersion::V2025_06_18)
        );
        let two: ProtocolVersions = " 2025-06-18 , 2026-07-28".parse().unwrap();
        assert_eq!(two.to_string(), "2026-07-28,2025-06-18");
        assert_eq!(
            two.negotiate_legacy("2025-11-25"),
            Some(ProtocolVersion::V2025_06_18)
        );
        let modern: ProtocolVersions = "2026-07-28".parse().unwrap();
        assert_eq!(modern.negotiate_legacy("2025-11-25"), None);
    }

    #[test]
    fn bad_lists_name_the_problem() {
        let unknown = "2026-07-28,2024-11-05".parse::<ProtocolVersions>();
        let unknown = unknown.map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            unknown,
            Err(format!(
                "unknown protocol version \"2024-11-05\" (known: {})",
                ProtocolVersions::ALL
            ))
        );
        let empty = " , ".parse::<ProtocolVersions>();
        assert!(empty.is_err_and(|e| e.is_protocol_versions()));
    }
}
