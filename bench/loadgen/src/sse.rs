//! A strict, allocation-light reader of a complete `text/event-stream` body.
//!
//! Follows the WHATWG event-stream rules that matter for MCP answers: lines end in CRLF, LF or
//! CR; `:` starts a comment; `data` lines of one event are joined with `\n`; one space after the
//! colon is dropped; an event with empty data (a priming event) is not dispatched; and an event
//! not closed by a blank line before the body ends is discarded.

use std::borrow::Cow;

/// Iterator over the `data` of each dispatched event of a complete body.
pub(crate) struct Events<'a> {
    rest: &'a [u8],
}

/// The events of `body`.
pub(crate) fn events(body: &[u8]) -> Events<'_> {
    Events { rest: body }
}

impl<'a> Events<'a> {
    /// The next complete line, without its terminator; `None` at an unterminated tail.
    fn line(&mut self) -> Option<&'a [u8]> {
        let end = self.rest.iter().position(|&b| b == b'\n' || b == b'\r')?;
        let line = &self.rest[..end];
        let skip = if self.rest[end] == b'\r' && self.rest.get(end + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        self.rest = &self.rest[end + skip..];
        Some(line)
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Cow<'a, [u8]>;

    fn next(&mut self) -> Option<Cow<'a, [u8]>> {
        let mut data: Option<Cow<'a, [u8]>> = None;
        loop {
            let line = self.line()?;
            if line.is_empty() {
                match data.take() {
                    Some(d) if !d.is_empty() => return Some(d),
                    _ => continue,
                }
            }
            if line[0] == b':' {
                continue;
            }
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &b""[..]),
            };
            if field != b"data" {
                continue;
            }
            data = Some(match data {
                None => Cow::Borrowed(value),
                Some(prev) => {
                    let mut joined = prev.into_owned();
                    joined.push(b'\n');
                    joined.extend_from_slice(value);
                    Cow::Owned(joined)
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(body: &str) -> Vec<String> {
        events(body.as_bytes())
            .map(|d| String::from_utf8_lossy(&d).into_owned())
            .collect()
    }

    #[test]
    fn skips_priming_and_comments() {
        let body =
            "id: 0/0\nretry: 3000\ndata:\n\n: keep-alive\n\nevent: message\ndata: {\"a\":1}\n\n";
        assert_eq!(all(body), vec![r#"{"a":1}"#]);
    }

    #[test]
    fn handles_crlf_and_cr() {
        assert_eq!(
            all("data: x\r\n\r\ndata: y\r\rdata:z\n\n"),
            vec!["x", "y", "z"]
        );
    }

    #[test]
    fn joins_multi_line_data() {
        assert_eq!(all("data: {\"a\":\ndata: 1}\n\n"), vec!["{\"a\":\n1}"]);
    }

    #[test]
    fn drops_an_unterminated_event() {
        assert_eq!(all("data: a\n\ndata: b\n"), vec!["a"]);
        assert_eq!(all("data: a\n\ndata: b"), vec!["a"]);
    }

    #[test]
    fn keeps_only_one_leading_space() {
        assert_eq!(all("data:  two\n\n"), vec![" two"]);
    }
}
