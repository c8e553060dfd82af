//! Pagination of the list methods: a page of a sorted map after an opaque cursor, and the
//! cursor of the next page (the last key of this page, base64url, so it survives
//! registrations between pages).
//!
//! Not here: what is listed, and how a page is framed (`methods/lists.rs`).

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::protocol::ErrorObject;

fn decode_cursor(cursor: Option<&str>) -> Result<Option<String>, ErrorObject> {
    let Some(c) = cursor else { return Ok(None) };
    URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| ErrorObject::invalid_params("Invalid params: unknown cursor"))
}

/// One page of a sorted map: at most `size` items after the cursor's key, and the next
/// cursor when more follow.
pub(crate) fn page<'a, V>(
    map: &'a BTreeMap<String, V>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<&'a V>, Option<String>), ErrorObject> {
    let after = decode_cursor(cursor)?;
    let mut iter = match &after {
        None => map.range::<String, (Bound<&String>, Bound<&String>)>((
            Bound::Unbounded,
            Bound::Unbounded,
        )),
        Some(k) => map.range::<String, (Bound<&String>, Bound<&String>)>((
            Bound::Excluded(k),
            Bound::Unbounded,
        )),
    };
    let mut items = Vec::new();
    let mut last = None;
    let mut more = false;
    for (k, v) in iter.by_ref() {
        if items.len() == size {
            more = true;
            break;
        }
        items.push(v);
        last = Some(k);
    }
    let next = if more {
        last.map(|k| URL_SAFE_NO_PAD.encode(k.as_bytes()))
    } else {
        None
    };
    Ok((items, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_each_other() {
        let map: BTreeMap<String, u32> = (0..5).map(|i| (format!("k{i}"), i)).collect();
        let (first, next) = page(&map, None, 2).unwrap();
        assert_eq!(first, [&0, &1]);
        let (second, next) = page(&map, next.as_deref(), 2).unwrap();
        assert_eq!(second, [&2, &3]);
        let (last, next) = page(&map, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (vec![&4], None));
        assert!(page(&map, Some("not base64!"), 2).is_err());
    }
}
