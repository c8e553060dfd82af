//! The URI template matcher against an independent RFC 6570 expander (`iri-string`): for
//! any values, matching the expansion gives back values that expand to the same URI (and,
//! where the template is unambiguous for them, the same values).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::{SimpleContext, Value};
use proptest::prelude::*;
use vellum::uri_template::UriTemplate;

/// Values of every kind of ASCII character: unreserved, reserved, spaces, quotes. (Not
/// non-ASCII: iri-string 0.7.14's expander panics on some multi-byte values; the matcher's
/// UTF-8 decoding has its own unit tests. No '%' either: RFC 6570 passes `%XX` through
/// reserved expansion, so such a value has two spellings.)
const ANY: &str = "[a-zA-Z0-9 ._~:/?#@!$&'()*+,;=\\[\\]\"<>-]{0,8}";
const ANY_NON_EMPTY: &str = "[a-zA-Z0-9 ._~:/?#@!$&'()*+,;=\\[\\]\"<>-]{1,8}";
/// List items (lists come back joined with ','; a '.' inside an item of `{.list*}` could not
/// be told from the separator, so items have none).
const ITEM: &str = "[a-zA-Z0-9 _~:/?@!-]{1,6}";

fn expand(template: &str, vars: &[(&str, Value)]) -> String {
    let mut ctx = SimpleContext::new();
    for (k, v) in vars {
        ctx.insert(*k, v.clone());
    }
    UriTemplateStr::new(template)
        .unwrap()
        .expand::<UriSpec, _>(&ctx)
        .unwrap()
        .to_string()
}

/// Matches `uri` and expands the result again; it must give `uri` back.
fn round_trip(
    template: &str,
    uri: &str,
    lists: &[&str],
) -> std::collections::BTreeMap<String, String> {
    let t = UriTemplate::parse(template).unwrap();
    let vars = t
        .matches(uri)
        .unwrap_or_else(|| panic!("{uri} does not match {template}"));
    let back: Vec<(&str, Value)> = vars
        .iter()
        .map(|(k, v)| {
            let value = if lists.contains(&k.as_str()) {
                Value::List(v.split(',').map(str::to_owned).collect())
            } else {
                Value::String(v.clone())
            };
            (k.as_str(), value)
        })
        .collect();
    assert_eq!(expand(template, &back), uri, "{template}: {vars:?}");
    vars
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn simple_and_reserved(a in ANY_NON_EMPTY, b in ANY_NON_EMPTY) {
        for t in ["t://x/{a}/y", "t://x/{+a}/end", "t://x/{a}/{+b}"] {
            let uri = expand(t, &[("a", a.as_str().into()), ("b", b.as_str().into())]);
            let vars = round_trip(t, &uri, &[]);
            if t == "t://x/{a}/y" {
                prop_assert_eq!(&vars["a"], &a, "simple values come back exactly");
            }
        }
    }

    #[test]
    fn prefixed_operators(a in ANY, b in ANY) {
        for t in ["t://x{#a}", "t://f{.a}", "t://r{/a,b}", "t://m{;a,b}", "t://s{?a,b}", "t://s{?a}{&b}"] {
            let uri = expand(t, &[("a", a.as_str().into()), ("b", b.as_str().into())]);
            round_trip(t, &uri, &[]);
        }
        // Undefined variables simply vanish; the rest still match.
        let uri = expand("t://s{?a,b}", &[("b", b.as_str().into())]);
        let vars = round_trip("t://s{?a,b}", &uri, &[]);
        prop_assert!(!vars.contains_key("a"));
        prop_assert_eq!(&vars["b"], &b);
    }

    #[test]
    fn prefixes(a in "[a-zA-Z0-9 ._~:/?@!$&,;=-]{1,8}") {
        let uri = expand("t://p/{a:3}x", &[("a", a.as_str().into())]);
        round_trip("t://p/{a:3}x", &uri, &[]);
    }

    #[test]
    fn exploded_lists(items in prop::collection::vec(ITEM, 1..4)) {
        for t in ["t://r{/a*}", "t://s{?a*}", "t://f{.a*}", "t://m{;a*}"] {
            let uri = expand(t, &[("a", Value::List(items.clone()))]);
            let vars = round_trip(t, &uri, &["a"]);
            prop_assert_eq!(&vars["a"], &items.join(","));
        }
    }

    #[test]
    fn query_parameters_in_any_order(a in ITEM, b in ITEM) {
        let t = UriTemplate::parse("t://s{?a,b}").unwrap();
        let forward = expand("t://s{?a,b}", &[("a", a.as_str().into()), ("b", b.as_str().into())]);
        let (_, query) = forward.split_once('?').unwrap();
        let (pa, pb) = query.split_once('&').unwrap();
        let swapped = t.matches(&format!("t://s?{pb}&{pa}")).unwrap();
        prop_assert_eq!(&swapped["a"], &a);
        prop_assert_eq!(&swapped["b"], &b);
    }
}
