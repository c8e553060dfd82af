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
    len: usize,
    /// Bytes up to the end of the last blank line seen (the end of a whole event).
    boundary: usize,
}

/// The events of `body`.
pub(crate) fn events(body: &[u8]) -> Events<'_> {
    Events {
        rest: body,
        len: body.len(),
        boundary: 0,
    }
}

/// An event stream read as it arrives: bytes in, the `data` of each complete event out.
#[derive(Default)]
pub(crate) struct Incremental {
    buf: Vec<u8>,
}

impl Incremental {
    /// Adds `bytes` and returns the data of every event they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let mut it = events(&self.buf);
        let out: Vec<Vec<u8>> = it.by_ref().map(|d| d.into_owned()).collect();
        let used = it.boundary;
        self.buf.drain(..used);
        out
    }
}

impl<'a> Events<'a> {
    /// Bytes read up to the end of the last whole event (or blank line) so far.
    pub(crate) fn boundary(&self) -> usize {
        self.boundary
    }

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
                self.boundary = self.len - self.rest.len();
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
    fn reads_events_split_anywhere() {
        let body = b"id: 1\ndata: one\n\n: ping\n\ndata: two\ndata: lines\n\n";
        for cut in 0..body.len() {
            let mut inc = Incremental::default();
            let mut got = inc.push(&body[..cut]);
            got.extend(inc.push(&body[cut..]));
            let got: Vec<String> = got
                .iter()
                .map(|d| String::from_utf8_lossy(d).into_owned())
                .collect();
            assert_eq!(got, vec!["one", "two\nlines"], "cut at {cut}");
        }
    }

    #[test]
    fn keeps_only_one_leading_space() {
        assert_eq!(all("data:  two\n\n"), vec![" two"]);
    }
}
