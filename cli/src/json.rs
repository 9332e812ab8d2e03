//! JSON strings by hand (RFC 8259): the only part of the output that needs care.

/// Appends `text` to `out` as a JSON string: quoted, with `"` and `\` escaped, every control
/// character (U+0000 to U+001F, and U+007F to U+009F) as `\n`, `\t`, ... or `\u00XX`, and
/// U+2028/U+2029 as `\u2028`/`\u2029`, so that the output is valid JavaScript too. Everything
/// else is copied as UTF-8.
pub(crate) fn push_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> String {
        let mut out = String::new();
        push_string(&mut out, text);
        out
    }

    #[test]
    fn hostile_strings_are_escaped() {
        assert_eq!(string(""), r#""""#);
        assert_eq!(string("worker-1"), r#""worker-1""#);
        assert_eq!(string(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(string(r"C:\path\"), r#""C:\\path\\""#);
        assert_eq!(string("\\\""), r#""\\\"""#);
        assert_eq!(string("a\nb\r\tc"), r#""a\nb\r\tc""#);
        assert_eq!(string("\u{8}\u{c}"), r#""\b\f""#);
        assert_eq!(string("\0"), r#""\u0000""#);
        assert_eq!(string("\u{1}\u{1f}"), r#""\u0001\u001f""#);
        assert_eq!(string("\u{1b}[2J"), r#""\u001b[2J""#);
        assert_eq!(string("\u{7f}\u{85}"), r#""\u007f\u0085""#);
        assert_eq!(string("a\u{2028}b\u{2029}"), r#""a\u2028b\u2029""#);
        // Unicode that needs no escape is kept as it is.
        assert_eq!(string("zürich/日本/🔒"), "\"zürich/日本/🔒\"");
        assert_eq!(string("'single'/<tag>&"), "\"'single'/<tag>&\"");
    }

    #[test]
    fn no_character_reaches_the_output_raw_where_json_forbids_it() {
        // Every char up to U+3000 and a few beyond: the output holds no raw control character
        // and no quote or backslash that is not part of an escape.
        let all: String = (0..0x3000u32)
            .chain([0x1f512, 0x10ffff])
            .filter_map(char::from_u32)
            .collect();
        let out = string(&all);
        let inner = &out[1..out.len() - 1];
        assert!(!inner.chars().any(|c| (c as u32) < 0x20));
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            assert_ne!(c, '"', "a raw quote inside the string");
            if c == '\\' {
                let escaped = chars.next().expect("an escape has a second character");
                assert!("\"\\/bfnrtu".contains(escaped), "bad escape \\{escaped}");
            }
        }
    }
}
