//! The handler macros' compile errors: each common mistake fails to compile with a message
//! at the user's code that says how to fix it (the `.stderr` files are the messages). What
//! compiles is in macros_compile.rs: a trybuild pass case would build every dependency a
//! second time.
#![cfg(feature = "macros")]

#[test]
fn mistakes_fail_with_messages_that_say_how_to_fix_them() {
    let t = trybuild::TestCases::new();
    for case in [
        "wrong_argument_type",
        "missing_json_schema",
        "non_send_future",
        "wrong_return_type",
        "error_not_display",
        "mut_self",
        "method_without_tools",
        "unknown_option",
        "json_and_arguments",
        "resource_variable",
        "state_in_tools",
        "invalid_tool_name",
        "not_an_extractor",
        "prompt_json",
        "invalid_scope",
        "unknown_hint",
        "map_tool_not_a_function",
    ] {
        t.compile_fail(format!("tests/ui/{case}.rs"));
    }
}
