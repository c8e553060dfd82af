//! The string formats the built-in validator asserts: the four an elicitation form may ask
//! for (`email`, `uri`, `date`, `date-time`). Every other format is an annotation there, as
//! the spec's dialect makes all of them by default.

/// A format the built-in validator checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

impl Format {
    /// The format of this name, if it is one checked here.
    pub(crate) fn named(name: &str) -> Option<Format> {
        Some(match name {
            "email" => Format::Email,
            "uri" => Format::Uri,
            "date" => Format::Date,
            "date-time" => Format::DateTime,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Date => "date",
            Format::DateTime => "date-time",
        }
    }

    pub(crate) fn accepts(self, s: &str) -> bool {
        match self {
            Format::Email => is_email(s),
            Format::Uri => is_uri(s),
            Format::Date => is_date(s.as_bytes()),
            Format::DateTime => is_date_time(s),
        }
    }
}

/// RFC 5321 shape: a local part and a domain (or an address literal in brackets).
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let local_ok = if let Some(quoted) = local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        !quoted.chars().any(|c| c.is_control())
    } else {
        !local.is_empty()
            && local.len() <= 64
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && local
                .chars()
                .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c) || !c.is_ascii())
    };
    let domain_ok =
        if let Some(literal) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
            !literal.is_empty()
                && literal
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || ".:".contains(c) || c.is_ascii_alphanumeric())
        } else {
            !domain.is_empty()
                && domain.len() <= 253
                && domain.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label.chars().all(|c| c.is_alphanumeric() || c == '-')
                })
        };
    local_ok && domain_ok
}

/// RFC 3986 absolute URI: a scheme, `:`, then characters a URI may hold (escapes well formed).
fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return false;
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
            continue;
        }
        let allowed = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b);
        if !allowed {
            return false;
        }
        i += 1;
    }
    true
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// RFC 3339 `full-date`: `YYYY-MM-DD`, a day that exists in that month.
fn is_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..])) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339 `date-time`: `full-date T partial-time time-offset` (`T` and `Z` in either case).
fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || !is_date(&b[..10]) || !matches!(b[10], b'T' | b't') {
        return false;
    }
    let t = &b[11..];
    if t[2] != b':' || t[5] != b':' {
        return false;
    }
    let (Some(h), Some(min), Some(sec)) = (digits(&t[..2]), digits(&t[3..5]), digits(&t[6..8]))
    else {
        return false;
    };
    // 60: a leap second.
    if h > 23 || min > 59 || sec > 60 {
        return false;
    }
    let mut rest = &t[8..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    // The offset in minutes east of UTC.
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), oh1, oh2, b':', om1, om2] => {
            match (digits(&[*oh1, *oh2]), digits(&[*om1, *om2])) {
                (Some(oh), Some(om)) if oh <= 23 && om <= 59 => {
                    let m = i64::from(oh * 60 + om);
                    if *sign == b'-' { -m } else { m }
                }
                _ => return false,
            }
        }
        _ => return false,
    };
    // A leap second is the last second of a UTC day.
    sec < 60 || (i64::from(h * 60 + min) - offset).rem_euclid(1440) == 23 * 60 + 59
}
