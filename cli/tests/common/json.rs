//! A strict JSON reader (RFC 8259) for checking the tool's output: it refuses raw control
//! characters in strings, bad escapes, lone surrogates and trailing text.

/// A JSON value. Numbers stay as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> &Value {
        match self {
            Value::Object(members) => members
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no member {key:?} in {self:?}")),
            _ => panic!("not an object: {self:?}"),
        }
    }

    /// The string it is.
    pub fn str(&self) -> &str {
        match self {
            Value::String(s) => s,
            _ => panic!("not a string: {self:?}"),
        }
    }

    /// The unsigned integer it is.
    pub fn u64(&self) -> u64 {
        match self {
            Value::Number(n) => n.parse().unwrap_or_else(|_| panic!("not a u64: {n}")),
            _ => panic!("not a number: {self:?}"),
        }
    }

    /// The items of an array.
    pub fn items(&self) -> &[Value] {
        match self {
            Value::Array(items) => items,
            _ => panic!("not an array: {self:?}"),
        }
    }
}

/// Parses `text` as one JSON value (surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut reader = Reader {
        chars: text.chars().collect(),
        at: 0,
    };
    let value = reader.value()?;
    reader.space();
    match reader.peek() {
        None => Ok(value),
        Some(c) => Err(format!("trailing {c:?} at {}", reader.at)),
    }
}

struct Reader {
    chars: Vec<char>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or("unexpected end")?;
        self.at += 1;
        Ok(c)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), String> {
        for w in word.chars() {
            if self.next()? != w {
                return Err(format!("expected {word:?} at {}", self.at));
            }
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.space();
        match self.peek().ok_or("unexpected end")? {
            'n' => self.expect("null").map(|()| Value::Null),
            't' => self.expect("true").map(|()| Value::Bool(true)),
            'f' => self.expect("false").map(|()| Value::Bool(false)),
            '"' => self.string().map(Value::String),
            '[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(']') {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.space();
                    match self.next()? {
                        ',' => continue,
                        ']' => return Ok(Value::Array(items)),
                        c => return Err(format!("unexpected {c:?} in an array")),
                    }
                }
            }
            '{' => {
                self.at += 1;
                let mut members = Vec::new();
                self.space();
                if self.peek() == Some('}') {
                    self.at += 1;
                    return Ok(Value::Object(members));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.space();
                    self.expect(":")?;
                    members.push((key, self.value()?));
                    self.space();
                    match self.next()? {
                        ',' => continue,
                        '}' => return Ok(Value::Object(members)),
                        c => return Err(format!("unexpected {c:?} in an object")),
                    }
                }
            }
            c if c == '-' || c.is_ascii_digit() => {
                let start = self.at;
                while matches!(self.peek(), Some('-' | '+' | '.' | 'e' | 'E' | '0'..='9')) {
                    self.at += 1;
                }
                Ok(Value::Number(self.chars[start..self.at].iter().collect()))
            }
            c => Err(format!("unexpected {c:?} at {}", self.at)),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            match self.next()? {
                '"' => return Ok(out),
                '\\' => match self.next()? {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'u' => {
                        let high = self.hex4()?;
                        let code = if (0xd800..0xdc00).contains(&high) {
                            self.expect("\\u")?;
                            let low = self.hex4()?;
                            if !(0xdc00..0xe000).contains(&low) {
                                return Err("a high surrogate without its low one".into());
                            }
                            0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)
                        } else {
                            high
                        };
                        out.push(char::from_u32(code).ok_or("a lone surrogate")?);
                    }
                    c => return Err(format!("bad escape \\{c}")),
                },
                c if (c as u32) < 0x20 => {
                    return Err(format!("raw control character U+{:04X}", c as u32));
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut code = 0;
        for _ in 0..4 {
            let digit = self.next()?.to_digit(16).ok_or("bad \\u escape")?;
            code = code * 16 + digit;
        }
        Ok(code)
    }
}

#[test]
fn the_reader_is_strict() {
    let v = parse(r#" {"a":[1,"x\n\u00e9\ud83d\udd12",null,true],"b":{}} "#).unwrap();
    assert_eq!(v.get("a").items()[1].str(), "x\né🔒");
    for bad in ["\"raw\nnewline\"", r#""\x""#, r#""\ud83d""#, "{} x", "[1,"] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}
