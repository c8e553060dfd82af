//! Pagination of the list methods: a page of a sorted map after an opaque cursor, and the
//! cursor of the next page (the last key of this page, base64url, so it survives
//! registrations between pages).
//!
//! Not here: what is listed, and how a page is framed (`methods/lists.rs`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::protocol::ErrorObject;

/// The key a cursor names (the last key of the page before it); `None` for the first page.
pub(crate) fn decode_cursor(cursor: Option<&str>) -> Result<Option<String>, ErrorObject> {
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
    Ok(page_after(map, decode_cursor(cursor)?.as_deref(), size))
}

/// One page of a sorted map: at most `size` items after the key `after` (from the start
/// when `None`), and the next cursor when more follow. O(log n + size).
pub(crate) fn page_after<'a, V>(
    map: &'a BTreeMap<String, V>,
    after: Option<&str>,
    size: usize,
) -> (Vec<&'a V>, Option<String>) {
    let lower = match after {
        None => Bound::Unbounded,
        Some(k) => Bound::Excluded(k),
    };
    let mut iter = map.range::<str, _>((lower, Bound::Unbounded));
    let mut items = Vec::with_capacity(size.min(map.len()));
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
    (items, next)
}

/// The pages of a walk from the first page, by the key their cursor names: the last key of
/// each page but the last, mapped to the number of the page after it (the first page is 0
/// and has no cursor). A page cache keys on these, so that only the pages a client gets by
/// following `nextCursor` are kept (not one per key an arbitrary cursor could name).
pub(crate) fn page_numbers<V>(map: &BTreeMap<String, V>, size: usize) -> HashMap<String, usize> {
    let size = size.max(1);
    let n = map.len();
    map.keys()
        .enumerate()
        .filter(|(i, _)| (i + 1) % size == 0 && i + 1 < n)
        .map(|(i, k)| (k.clone(), (i + 1) / size))
        .collect()
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

    #[test]
    fn page_numbers_name_the_pages_of_a_walk() {
        for (n, size) in [(0, 3), (1, 3), (5, 2), (6, 2), (6, 3), (10, 1)] {
            let map: BTreeMap<String, u32> = (0..n).map(|i| (format!("k{i:02}"), i)).collect();
            let numbers = page_numbers(&map, size);
            // Walk the pages: every cursor issued names the next page's number, and no
            // other key is numbered.
            let (mut cursor, mut number, mut seen) = (None::<String>, 0, 0);
            loop {
                let after = decode_cursor(cursor.as_deref()).unwrap();
                match &after {
                    None => assert_eq!(number, 0),
                    Some(k) => assert_eq!(numbers.get(k), Some(&number), "n {n} size {size}"),
                }
                let (items, next) = page_after(&map, after.as_deref(), size);
                seen += items.len();
                let Some(next) = next else { break };
                cursor = Some(next);
                number += 1;
            }
            assert_eq!(seen, n as usize);
            assert_eq!(numbers.len(), number, "n {n} size {size}");
        }
    }
}
